"""Critic folders for tests: a tiny random cross-encoder written as training writes one."""

from __future__ import annotations

import json
from pathlib import Path

from ragbrain.critic.features import FEATURE_NAMES
from ragbrain.critic.folder import CALIBRATION_FILE, FEATURES_FILE, WEIGHTS_FILE

COLUMNS = 1 + len(FEATURE_NAMES)


def make_critic(folder: Path, *, combiner: bool = True) -> Path:
    """A tiny random critic folder, written the way training writes one (no base package)."""
    import torch
    from safetensors.torch import save_file
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=1,
    )
    model = BertForSequenceClassification(config)
    folder.mkdir(parents=True, exist_ok=True)
    config.to_json_file(str(folder / "config.json"))
    save_file(
        {k: v.contiguous() for k, v in model.state_dict().items() if "position_ids" not in k},
        str(folder / WEIGHTS_FILE),
    )
    calibration: dict[str, object] = {"threshold": 0.5, "activation": "sigmoid", "max_length": 64}
    if combiner:
        save_file({"idf": torch.ones(30523)}, str(folder / FEATURES_FILE))
        calibration["combiner"] = {
            "inputs": ["logit", *FEATURE_NAMES],
            "mean": [0.0] * COLUMNS,
            "scale": [1.0] * COLUMNS,
            "weights": [1.0] + [0.5] * (COLUMNS - 1),
            "bias": 0.0,
        }
    (folder / CALIBRATION_FILE).write_text(json.dumps(calibration), encoding="utf-8")
    return folder


def edit_calibration(folder: Path, **changes: object) -> None:
    """Set top-level keys of the folder's calibration file."""
    path = folder / CALIBRATION_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    data.update(changes)
    path.write_text(json.dumps(data), encoding="utf-8")


DISTANCE_MODEL = "bag-of-words-64"  # the fake store's embedding model


def with_distance_layer(folder: Path, **changes: object) -> Path:
    """Add a distance layer that learned ``DISTANCE_MODEL``: a far chunk scores low."""
    layer: dict[str, object] = {
        "embedding_model": DISTANCE_MODEL,
        "threshold": 0.25,
        "combiner": {
            "inputs": ["logit", *FEATURE_NAMES, "distance"],
            "mean": [0.0] * (COLUMNS + 1),
            "scale": [1.0] * (COLUMNS + 1),
            "weights": [0.0] * COLUMNS + [-8.0],
            "bias": 4.0,
        },
        "dev": {},
    }
    layer.update(changes)
    edit_calibration(folder, with_distance=layer)
    return folder


def list_aware(folder: Path, **weights: float) -> Path:
    """Make the folder's plain layer list-aware (``PLAIN_LIST_INPUTS``), weighing only the
    named columns (the rest 0)."""
    from ragbrain.critic.folder import PLAIN_LIST_INPUTS

    edit_calibration(
        folder,
        combiner={
            "inputs": list(PLAIN_LIST_INPUTS),
            "mean": [0.0] * len(PLAIN_LIST_INPUTS),
            "scale": [1.0] * len(PLAIN_LIST_INPUTS),
            "weights": [weights.get(name, 0.0) for name in PLAIN_LIST_INPUTS],
            "bias": 0.0,
        },
    )
    return folder
