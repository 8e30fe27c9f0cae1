"""Which runtime runs the models: ``RAGBRAIN_BACKEND=torch|onnx``, and loading an embedding
model folder on it (the one seam every embedding model goes through)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.errors import InvalidInputError
from ragbrain.paths import BACKEND_ENV

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

BACKENDS = ("torch", "onnx")
#: ONNX Runtime int8: faster than torch, the pipeline's quality within noise of torch's
#: (docs/onnx.md).
DEFAULT_BACKEND = "onnx"


def backend_setting() -> str:
    """``$RAGBRAIN_BACKEND``: ``torch`` or ``onnx``; unset or empty, ``DEFAULT_BACKEND``.

    Raises:
        InvalidInputError: The variable holds anything else.
    """
    value = os.environ.get(BACKEND_ENV, "").strip().lower()
    if not value:
        return DEFAULT_BACKEND
    if value not in BACKENDS:
        raise InvalidInputError(
            f"{BACKEND_ENV}={os.environ[BACKEND_ENV]!r} is not a backend: use one of "
            f"{', '.join(BACKENDS)} (or leave it unset)."
        )
    return value


def runtime_of(embeddings: Embeddings) -> str:
    """What runs ``embeddings``, for people: their ``runtime`` (``ONNX Runtime int8``,
    ``torch fp32``), else their class name (``HuggingFaceEmbeddings``, a caller's own)."""
    return str(getattr(embeddings, "runtime", type(embeddings).__name__))


def load_embeddings(
    model_folder: Path,
    backend: str,
    *,
    batch_size: int = 32,
    query_prompt: str = "",
    passage_prompt: str = "",
    half_word_embeddings: bool = False,
) -> Embeddings:
    """The sentence-transformers model in ``model_folder`` on ``backend``, normalized vectors,
    CPU, offline. Both backends give the store the same ``model_name`` (the folder). On torch,
    a BERT folder runs on ``SentenceEmbeddings`` (the vectors sentence-transformers gives,
    without importing it or transformers' models); another architecture on
    ``HuggingFaceEmbeddings``.

    Args:
        model_folder: A sentence-transformers model folder (safetensors weights).
        backend: ``torch`` (fp32) or ``onnx`` (``OnnxEmbeddings``, int8, exported into the
            cache on first use).
        batch_size: Texts per forward pass.
        query_prompt: Text put before each query (e.g. ``"query: "`` for e5).
        passage_prompt: Text put before each passage (e.g. ``"passage: "`` for e5).
        half_word_embeddings: torch: keep a BERT's word embeddings in fp16 in memory, as the
            folder stores them (``ragbrain.models.e5.half``; the lookup returns fp32); ignored on
            onnx.

    Raises:
        InvalidInputError: ``backend`` is not one of ``BACKENDS``, or torch with
            ``half_word_embeddings`` on a folder that is not a BERT.
        MissingExtraError: ``onnx`` without ONNX Runtime or onnx installed.
        OnnxExportError: The ONNX export failed.
        ModelLoadError: torch: a BERT folder's files are missing or damaged.
    """
    if backend == "onnx":
        from ragbrain.models.onnx_backend import OnnxEmbeddings

        return OnnxEmbeddings(
            model_folder,
            batch_size=batch_size,
            query_prompt=query_prompt,
            passage_prompt=passage_prompt,
        )
    if backend != "torch":
        raise InvalidInputError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}.")
    from ragbrain.models.sentence import SentenceEmbeddings, is_bert_folder

    if is_bert_folder(model_folder):  # every model ragbrain ships: no sentence-transformers
        return SentenceEmbeddings(
            model_folder,
            batch_size=batch_size,
            query_prompt=query_prompt,
            passage_prompt=passage_prompt,
            half_word_embeddings=half_word_embeddings,
        )
    if half_word_embeddings:
        raise InvalidInputError(
            f"{model_folder}: half_word_embeddings needs a BERT folder (config.json "
            "model_type 'bert'); load this model without it."
        )
    return _sentence_transformers(
        model_folder,
        batch_size=batch_size,
        query_prompt=query_prompt,
        passage_prompt=passage_prompt,
    )


def _sentence_transformers(
    model_folder: Path, *, batch_size: int, query_prompt: str, passage_prompt: str
) -> Embeddings:
    """Another architecture than BERT: ``HuggingFaceEmbeddings`` (sentence-transformers)."""
    from langchain_huggingface import HuggingFaceEmbeddings
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    passages: dict[str, Any] = {"normalize_embeddings": True, "batch_size": batch_size}
    queries = dict(passages)
    if passage_prompt:
        passages["prompt"] = passage_prompt
    if query_prompt:
        queries["prompt"] = query_prompt
    return HuggingFaceEmbeddings(
        model_name=str(model_folder),
        model_kwargs={"device": "cpu", "local_files_only": True},
        encode_kwargs=passages,
        query_encode_kwargs=queries,
    )
