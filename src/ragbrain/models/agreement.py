"""Whether a query model is the one a collection's vectors came from: a few stored texts
embedded again and compared with their stored vectors.

Two different models of the same dimension give vectors that have nothing to do with each
other, while one model agrees with itself across runtimes and precisions; ``MIN_AGREEMENT``
sits between (the measurements: docs/decisions/query-model-check.md).

The check embeds the ``CHECKED`` shortest stored texts in one ``embed_documents`` call, the
way chunks are embedded when they are written: a few milliseconds at open.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragbrain.errors import WrongModelError

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

#: Stored texts embedded again.
CHECKED = 3
#: Below this median cosine between stored and fresh vectors, the model is another one.
MIN_AGREEMENT = 0.9
#: Texts shorter than this say little about a model (a title, a number): not checked.
MIN_CHARS = 12


def picked(texts: Sequence[Any], count: int = CHECKED) -> list[int]:
    """The positions of the ``count`` shortest texts of at least ``MIN_CHARS`` characters
    (short texts embed fast; a model's disagreement shows on any text)."""
    usable = [i for i, t in enumerate(texts) if isinstance(t, str) and len(t.strip()) >= MIN_CHARS]
    return sorted(usable, key=lambda i: (len(texts[i]), i))[:count]


def agreement(
    embeddings: Embeddings, texts: Sequence[str], vectors: Sequence[Sequence[float]]
) -> float | None:
    """The median cosine between ``vectors`` (as stored) and ``texts`` embedded again as
    documents; None without texts."""
    import numpy as np

    if not texts:
        return None
    fresh = np.asarray(embeddings.embed_documents(list(texts)), dtype=np.float64)
    stored = np.asarray(vectors, dtype=np.float64)
    if fresh.shape != stored.shape:
        return None  # the dimension check speaks to that
    norms = np.linalg.norm(fresh, axis=1) * np.linalg.norm(stored, axis=1)
    cosines = (fresh * stored).sum(axis=1) / np.where(norms > 0, norms, 1.0)
    return float(np.median(cosines))


def check_model(
    embeddings: Embeddings,
    texts: Sequence[Any],
    vectors: Sequence[Sequence[float]],
    *,
    model: str,
    stored_model: str | None,
    where: str,
    override: str,
) -> float | None:
    """Raise ``WrongModelError`` when ``embeddings`` did not make ``vectors`` from ``texts``
    (a sample of a collection's records, ``None`` texts allowed).

    Args:
        model: The query model's name, for the message.
        stored_model: The name of the model the collection was built with, when known.
        where: The collection, for the message.
        override: How the caller turns the check off, for the message.

    Returns:
        The median cosine found; None when no stored text was long enough to check.
    """
    chosen = picked(texts)
    found = agreement(embeddings, [texts[i] for i in chosen], [vectors[i] for i in chosen])
    if found is None or found >= MIN_AGREEMENT:
        return found
    built = (
        f"{stored_model!r}"
        if stored_model and stored_model != model
        else "another model (not the one that embeds queries)"
    )
    raise WrongModelError(
        f"{where}: its vectors were made by {built}, but queries would be embedded by "
        f"{model!r}: {len(chosen)} stored texts embedded again by {model!r} agree with their "
        f"stored vectors at a median cosine of {found:.2f} (the same model gives "
        f"{MIN_AGREEMENT} or more). Pass embeddings= the model the collection was built with, "
        f"or {override} to open it anyway.",
        query_model=model,
        stored_model=stored_model,
        agreement=found,
    )
