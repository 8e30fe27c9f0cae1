"""Writing a critic folder: config, trainable tensors in fp16 (the frozen word embeddings left
out when they load from the base package), the IDF table and the calibration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.critic.folder import CALIBRATION_FILE, FEATURES_FILE, WEIGHTS_FILE, read_tensors

if TYPE_CHECKING:
    import torch

_FROZEN = "bert.embeddings.word_embeddings.weight"  # comes from the base package, never stored


def save_trainable(model: Any, path: Path, *, with_words: bool = False) -> None:
    """Write ``model``'s weights to ``path`` in fp16; the frozen word embeddings only
    ``with_words``."""
    from safetensors.torch import save_file

    tensors = {
        k: v.detach().to("cpu").half().contiguous()
        for k, v in model.state_dict().items()
        if (with_words or k != _FROZEN) and not k.endswith("position_ids")
    }
    save_file(tensors, str(path))


def load_trainable(model: Any, path: Path) -> None:
    """Load weights that ``save_trainable`` wrote into ``model`` (the rest keep their values)."""
    state = model.state_dict()
    state.update({k: v.float() for k, v in read_tensors(path).items()})
    model.load_state_dict(state, strict=True)


def save_critic(
    out: Path,
    model: Any,
    idf: torch.Tensor,
    calibration: dict[str, Any],
) -> None:
    """Write the critic folder: config, trainable tensors (fp16), IDF table, calibration.

    The frozen word embeddings are left out when ``calibration["base"]`` names the package
    they load from, which keeps the folder small.
    """
    from safetensors.torch import save_file

    out.mkdir(parents=True, exist_ok=True)
    model.config.to_json_file(str(out / "config.json"))
    save_trainable(model, out / WEIGHTS_FILE, with_words="base" not in calibration)
    save_file({"idf": idf.contiguous()}, str(out / FEATURES_FILE))
    write_calibration(out, calibration)


def write_calibration(folder: Path, calibration: dict[str, Any]) -> None:
    """Write ``calibration.json`` into a critic folder."""
    text = json.dumps(calibration, indent=2) + "\n"
    (folder / CALIBRATION_FILE).write_text(text, encoding="utf-8")
