"""The general questions' vectors shipped in the package, one small float16 file per model and
way of running it, so that a store's first open embeds none of the ~144 questions.

A file is used only when it matches: the same model name, runtime variant and dimension, the
same question list (a SHA-256 of its texts), and the same model in fact: the first question,
which the caller embeds anyway (``offtopic.query_vectors`` reads the dimension from it), must
agree with the file's own copy of it to a cosine of ``AGREE``. A changed question list, another
model under a shipped name, or another runtime recomputes the vectors (and caches them under
``cache_root()/refusal``, as before).

The files are written by::

    python -m ragbrain.refusal.shipped

which embeds the bank with every shipped model (all-MiniLM-L6-v2 and multilingual-e5-small),
each under both backends (ONNX Runtime int8 and torch fp32, which ``HuggingFaceEmbeddings``
of the same model matches).
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ragbrain._util import write_bytes

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

log = logging.getLogger(__name__)

FOLDER = Path(__file__).with_name("bank_vectors")
#: The cosine the caller's vector of the first question must reach against the file's.
AGREE = 0.999


def texts_digest(texts: Sequence[str]) -> str:
    """The fingerprint of a question list: SHA-256 of its texts, one a line."""
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()


def file_name(model: str, variant: str) -> str:
    """``<model>--<variant>.npz`` (``fp32`` for a model run as it is, without a variant)."""
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in f"{model}--{variant or 'fp32'}")
    return f"{safe}.npz"


def shipped_vectors(
    model: str, variant: str, texts: Sequence[str], probe: Sequence[float]
) -> np.ndarray | None:
    """The shipped vectors of ``texts`` for this model and variant (float32), or None when no
    file matches: none for them, another question list or dimension, or ``probe`` (the
    caller's vector of ``texts[0]``) not the file's own to a cosine of ``AGREE``."""
    path = FOLDER / file_name(model, variant)
    if not texts or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as found:
            vectors = np.asarray(found["vectors"], dtype=np.float32)
            first = np.asarray(found["probe"], dtype=np.float32)
            digest = str(found["texts_sha256"])
    except (OSError, ValueError, KeyError):
        log.warning("Ignoring the unreadable %s", path)
        return None
    asked = np.asarray(probe, dtype=np.float32)
    if digest != texts_digest(texts) or vectors.shape != (len(texts), asked.size):
        return None
    norms = float(np.linalg.norm(first) * np.linalg.norm(asked))
    if not norms or float(first @ asked) / norms < AGREE:
        log.info("%s does not match this model's vectors; embedding the questions", path.name)
        return None
    return vectors


def write(embeddings: Embeddings, texts: Sequence[str], folder: Path = FOLDER) -> Path:
    """Embed ``texts`` with ``embeddings`` as ``offtopic.query_vectors`` does and write the
    file that ``shipped_vectors`` reads (float16 vectors, the first question's vector as the
    caller computes it, the list's fingerprint); atomically."""
    from ragbrain.models.batch import embed_queries
    from ragbrain.models.embeddings import model_name_of

    probe = np.asarray(embeddings.embed_query(texts[0]), dtype=np.float32)
    vectors = np.asarray(embed_queries(embeddings, texts), dtype=np.float16)
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        vectors=vectors,
        probe=probe.astype(np.float16),
        texts_sha256=np.array(texts_digest(texts)),
    )
    path = folder / file_name(model_name_of(embeddings), str(getattr(embeddings, "variant", "")))
    write_bytes(path, buffer.getvalue())
    return path


def main() -> None:
    """Write the files of every shipped model under both backends."""
    from ragbrain.models import embeddings as models
    from ragbrain.paths import BACKEND_ENV
    from ragbrain.refusal.offtopic import bank

    for backend in ("onnx", "torch"):
        os.environ[BACKEND_ENV] = backend
        for load in (models.default_embeddings, models.e5_embeddings):
            load.cache_clear()
            path = write(load(), bank())
            print(f"{path.name}: {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
