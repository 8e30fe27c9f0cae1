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
DEFAULT_BACKEND = "torch"


def backend_setting() -> str:
    """``$RAGBRAIN_BACKEND``: ``torch`` or ``onnx``; unset or empty, ``torch`` (``onnx`` is
    2x faster but missed two quality checks by a little: docs/onnx.md).

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
    CPU, offline. Both backends give the store the same ``model_name`` (the folder).

    Args:
        model_folder: A sentence-transformers model folder (safetensors weights).
        backend: ``torch`` (``HuggingFaceEmbeddings``, fp32) or ``onnx`` (``OnnxEmbeddings``,
            int8, exported into the cache on first use).
        batch_size: Texts per forward pass.
        query_prompt: Text put before each query (e.g. ``"query: "`` for e5).
        passage_prompt: Text put before each passage (e.g. ``"passage: "`` for e5).
        half_word_embeddings: torch: keep a BERT's word embeddings in fp16 in memory, as the
            folder stores them (``ragbrain.e5.half``; the lookup returns fp32).

    Raises:
        InvalidInputError: ``backend`` is not one of ``BACKENDS``.
        MissingExtraError: ``onnx`` without ONNX Runtime or onnx installed.
        OnnxExportError: The ONNX export failed.
    """
    if backend == "onnx":
        from ragbrain.onnx_backend import OnnxEmbeddings

        return OnnxEmbeddings(
            model_folder,
            batch_size=batch_size,
            query_prompt=query_prompt,
            passage_prompt=passage_prompt,
        )
    if backend != "torch":
        raise InvalidInputError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}.")
    from langchain_huggingface import HuggingFaceEmbeddings
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    passages: dict[str, Any] = {"normalize_embeddings": True, "batch_size": batch_size}
    queries = dict(passages)
    if passage_prompt:
        passages["prompt"] = passage_prompt
    if query_prompt:
        queries["prompt"] = query_prompt
    model_kwargs: dict[str, Any] = {"device": "cpu", "local_files_only": True}
    if not half_word_embeddings:
        return HuggingFaceEmbeddings(
            model_name=str(model_folder),
            model_kwargs=model_kwargs,
            encode_kwargs=passages,
            query_encode_kwargs=queries,
        )
    from ragbrain.e5.half import fp16_word_embeddings, widen

    with fp16_word_embeddings() as load:
        loaded = HuggingFaceEmbeddings(
            model_name=str(model_folder),
            model_kwargs={**model_kwargs, "model_kwargs": load},
            encode_kwargs=passages,
            query_encode_kwargs=queries,
        )
    widen(loaded._client[0].auto_model)  # type: ignore[arg-type]
    return loaded
