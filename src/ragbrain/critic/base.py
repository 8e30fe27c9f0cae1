"""The Critic interface: score (query, chunk) pairs in one batch as relevance probabilities."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Critic(Protocol):
    """Judges whether chunks are relevant to a query.

    ``score`` returns one probability in [0, 1] per passage, in order, for the whole batch at
    once; ``threshold`` is the calibrated cut below which a chunk counts as irrelevant. The
    retriever passes one query's hits together, in its order (best first), with each one's
    cosine distance to the query; a critic may judge each chunk alone or against the others
    (the shipped one does: its rank and its gaps to the list's best), and may use the
    distances or ignore them. A critic that needs the store it judges for (its model, its
    lexical index) may have a ``for_store(store, lexical)`` method returning the bound critic:
    a graph calls it when it resolves the store's settings (``ragbrain.settings.bind_critic``).
    """

    @property
    def threshold(self) -> float:
        """The calibrated cut below which a chunk counts as irrelevant."""
        ...

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        """Relevance probabilities of ``passages`` for ``query``, one per passage."""
        ...


def keep_mask(scores: Sequence[float], threshold: float) -> list[bool]:
    """Which scores pass ``threshold``; NaN never counts as relevant."""
    return [not math.isnan(s) and s >= threshold for s in scores]


def threshold_label(critic: Critic, threshold: float) -> str:
    """How the trace and the stats name a critic's cut: ``threshold 0.065``, plus ``, with
    distance`` when the critic reads the hits' distances (``TransformerCritic.uses_distance``);
    a critic with a ``kind`` (``evidence``) is named first: ``evidence, threshold 0.157``."""
    kind = getattr(critic, "kind", None)
    if isinstance(kind, str):
        return f"{kind}, threshold {threshold:.3f}"
    with_distance = ", with distance" if getattr(critic, "uses_distance", False) else ""
    return f"threshold {threshold:.3f}{with_distance}"


def keep_across_languages(
    embedding_model: str | None,
    query: str,
    passages: Sequence[str],
    scores: list[float],
    unjudged: float = 1.0,
) -> list[float]:
    """``scores`` with every passage in another language than ``query`` set to ``unjudged``
    (the critic's threshold: kept, but with no evidence for it), when the store's
    ``embedding_model`` reads every language.

    The shipped critic judges through the default model's English vocabulary and word-overlap
    features (BM25, IDF overlap); across languages they are all blind, so it would drop every
    hit that a multilingual model found in another language. It abstains there instead. Over
    an English-only model's store such hits are noise and are judged (dropped) as before.
    A score of exactly the threshold never raises the depth (``nodes.critic``).
    """
    from ragbrain.lexical.tokens import detect_language
    from ragbrain.models.profiles import profile
    from ragbrain.query.inputs import read_part

    found = profile(embedding_model) if embedding_model is not None else None
    if found is None or found.reads is not None:
        return scores
    asked = detect_language(read_part(query))
    if asked == "none":
        return scores
    return [
        unjudged if detect_language(passage[:400]) not in (asked, "none") else score
        for passage, score in zip(passages, scores, strict=True)
    ]
