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
    distances or ignore them.
    """

    threshold: float

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        """Relevance probabilities of ``passages`` for ``query``, one per passage."""
        ...


def keep_mask(scores: Sequence[float], threshold: float) -> list[bool]:
    """Which scores pass ``threshold``; NaN never counts as relevant."""
    return [not math.isnan(s) and s >= threshold for s in scores]


def threshold_label(critic: Critic, threshold: float) -> str:
    """How the trace and the stats name a critic's cut: ``threshold 0.067``, plus ``, with
    distance`` when the critic reads the hits' distances (``TransformerCritic.uses_distance``)."""
    with_distance = ", with distance" if getattr(critic, "uses_distance", False) else ""
    return f"threshold {threshold:.3f}{with_distance}"
