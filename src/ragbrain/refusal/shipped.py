"""The general questions' vectors shipped in the package, one small float16 file per model and
way of running it, so that a store's first open embeds none of the ~144 questions.

A file is used only when it matches: the same model name, runtime variant and dimension, every
question asked found in it (each row keyed by its text's SHA-256: a changed question is not),
and the same model in fact: the file's probe question (the bank's first), embedded now, must
agree with the file's vector of it to a cosine of ``AGREE`` (the caller embeds that question
anyway: ``offtopic.query_vectors`` reads the dimension from it). A changed question, another
model under a shipped name, or another runtime recomputes the vectors (and caches them under
``cache_root()/refusal``, as before).

The files are written by::

    python -m ragbrain.refusal.bank_writer

which embeds the bank with every shipped model (one profile each, ``models.profiles``),
each under both backends (ONNX Runtime int8 and torch fp32, which ``HuggingFaceEmbeddings``
of the same model matches).
"""

from __future__ import annotations

import hashlib
import io
import logging
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


def text_key(text: str) -> str:
    """A question's key in a file: the first 16 hex digits of its text's SHA-256."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def file_name(model: str, variant: str) -> str:
    """``<model>--<variant>.npz`` (``fp32`` for a model run as it is, without a variant)."""
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in f"{model}--{variant or 'fp32'}")
    return f"{safe}.npz"


def shipped_vectors(
    embeddings: Embeddings,
    model: str,
    variant: str,
    texts: Sequence[str],
    first: Sequence[float],
) -> np.ndarray | None:
    """The shipped vectors of ``texts`` for this model and variant (float32, in order), or
    None when no file matches: none for them, a text the file lacks (each row is keyed by its
    text's SHA-256), another dimension, or the file's probe question embedded now (``first``,
    the caller's vector of ``texts[0]``, when that is the probe) not agreeing with the
    file's to a cosine of ``AGREE``."""
    path = FOLDER / file_name(model, variant)
    if not texts or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as found:
            vectors = np.asarray(found["vectors"], dtype=np.float32)
            keys = [str(k) for k in found["keys"]]
            probe_text = str(found["probe_text"])
            probe = np.asarray(found["probe"], dtype=np.float32)
    except (OSError, ValueError, KeyError):
        log.warning("Ignoring the unreadable %s", path)
        return None
    rows = {key: i for i, key in enumerate(keys)}
    wanted = [rows.get(text_key(t)) for t in texts]
    if any(i is None for i in wanted) or vectors.shape[1] != len(first):
        return None
    asked = first if texts[0] == probe_text else embeddings.embed_query(probe_text)
    now = np.asarray(asked, dtype=np.float32)
    norms = float(np.linalg.norm(probe) * np.linalg.norm(now))
    if not norms or float(probe @ now) / norms < AGREE:
        log.info("%s does not match this model's vectors; embedding the questions", path.name)
        return None
    return vectors[[i for i in wanted if i is not None]]


def write(embeddings: Embeddings, model: str, texts: Sequence[str], folder: Path = FOLDER) -> Path:
    """Embed ``texts`` with ``embeddings`` (the model stores record as ``model``) as
    ``offtopic.query_vectors`` does and write the file that ``shipped_vectors`` reads
    (float16 vectors keyed by their texts, the first question and its vector as
    ``embed_query`` makes it, the probe); atomically."""
    from ragbrain.models.batch import embed_queries

    probe = np.asarray(embeddings.embed_query(texts[0]), dtype=np.float32)
    vectors = np.asarray(embed_queries(embeddings, texts), dtype=np.float16)
    buffer = io.BytesIO()
    np.savez_compressed(
        buffer,
        vectors=vectors,
        keys=np.array([text_key(t) for t in texts]),
        probe_text=np.array(texts[0]),
        probe=probe.astype(np.float16),
    )
    path = folder / file_name(model, str(getattr(embeddings, "variant", "")))
    write_bytes(path, buffer.getvalue())
    return path
