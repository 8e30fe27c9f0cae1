"""`ragbrain critic train`: fine-tune a truncated cross-encoder (cut from a model profile's
``critic_base``) on mined groups, calibrate it on dev queries, and save a critic folder
(safetensors, config, features, calibration).

The training loop is ``fit``, the folder's files are written by ``save``, and
``recalibrate`` refits a trained critic's layers on another data set.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragbrain.critic.features import LexicalFeatures, document_frequencies
from ragbrain.critic.folder import (
    WEIGHTS_FILE,
    WITH_DISTANCE,
    base_folder,
    light_twin,
    quantized,
    tokenizer_folder,
)
from ragbrain.critic.training.data import Group, QueryCandidates
from ragbrain.critic.training.fit import fit, new_model
from ragbrain.critic.training.layers import Progress, fit_layers
from ragbrain.critic.training.recipe import Recipe
from ragbrain.critic.training.save import load_trainable, save_critic, save_trainable
from ragbrain.models.embeddings import set_offline


def work_dir(out: Path) -> Path:
    """Checkpoints live in the cache, not next to the shipped files, keyed by the output path."""
    import hashlib

    from ragbrain.paths import cache_root

    key = hashlib.sha256(str(out.resolve()).encode()).hexdigest()[:12]
    return cache_root() / "critic-work" / f"{out.name}-{key}"


def train_critic(
    train: Sequence[Group],
    dev: Sequence[QueryCandidates],
    corpus_texts: Sequence[str],
    out: Path,
    recipe: Recipe,
    *,
    sources: dict[str, Any],
    progress: Callable[[str], Progress | None] = lambda _label: None,
    base: Path | None = None,
    dev_seen: Sequence[QueryCandidates] | None = None,
    embedding_model: str | None = None,
) -> dict[str, Any]:
    """Train, calibrate on the dev queries and save to ``out``; return the calibration written.

    Two logistic layers: one over the logit and the lexical features, and, when
    ``embedding_model`` names the model the candidates' distances come from, one that also
    reads the distance (``with_distance`` in the calibration; used only for stores of that
    model). With ``recipe.list_features`` (the default) both also read the list columns and
    are fit on ``dev_seen``, the dev queries with the candidates the critic judges at run
    time (``data.as_retrieved``), where each layer's threshold is chosen and its dev figures
    are reported (so those figures are in-sample for the layer; 5-fold cross-fitting by query
    moved them by about a point on the shipped critic). Without, they are fit on ``dev`` (the
    mined dense candidates of the same queries) and only judged on ``dev_seen``: per-pair
    layers fit on the hybrid lists were worse on dev (docs/decisions/measured-costs.md).

    ``progress(label)`` gives a ``report(done, total)`` callback per stage (or None);
    ``base`` is a folder to start from instead of ``recipe.base`` (the folder then records no
    base and keeps its word embeddings); without a tokenizer of its own, ``recipe.base``'s
    is used.
    """
    import torch
    from transformers import AutoTokenizer

    set_offline()
    torch.manual_seed(recipe.seed)
    started = time.perf_counter()
    start = base or base_folder(recipe.base)
    words = tokenizer_folder(start, recipe.base)
    tokenizer = AutoTokenizer.from_pretrained(words, local_files_only=True)
    model = new_model(recipe, start)
    token_ids = (
        tokenizer(
            list(corpus_texts[i : i + 256]),
            add_special_tokens=False,
            truncation=True,
            max_length=512,
        )["input_ids"]
        for i in range(0, len(corpus_texts), 256)
    )
    vocab_size = int(model.config.vocab_size)
    idf = document_frequencies((ids for chunk in token_ids for ids in chunk), vocab_size)
    work = work_dir(out)
    fit(model, tokenizer, train, recipe, work, progress("training"))
    # Calibrate exactly what loads later: fp16-rounded weights, int8 when the recipe says so.
    save_trainable(model, work / WEIGHTS_FILE)
    load_trainable(model, work / WEIGHTS_FILE)
    words = model.get_input_embeddings().weight.detach()
    twin = light_twin(model)
    scorer = quantized(twin) if recipe.quantize else twin
    features = LexicalFeatures(idf, words)
    layers = fit_layers(
        scorer, tokenizer, features, dev, dev_seen, recipe, embedding_model, progress
    )
    calibration: dict[str, Any] = {
        "threshold": layers["threshold"],
        "activation": "sigmoid",
        "max_length": recipe.score_length,
        **({"base": recipe.base} if base is None else {}),
        **({"quantize": "int8"} if recipe.quantize else {}),
        "combiner": layers["combiner"],
        "dev": layers["dev"],
        "training": {
            **sources,
            "groups": len(train),
            "pairs": sum(len(g.texts) for g in train),
            "dev_queries": len(dev),
            **({"threshold_queries": len(dev_seen)} if dev_seen is not None else {}),
            "minutes": round((time.perf_counter() - started) / 60, 1),
        },
        "recipe": recipe.to_json(),
    }
    if WITH_DISTANCE in layers:
        calibration[WITH_DISTANCE] = layers[WITH_DISTANCE]
    save_critic(out, model, idf, calibration)
    return calibration
