"""Retrieval metrics of one query's returned list, and percentiles of timings.

Ranked metrics follow trec_eval / pytrec_eval as BEIR reports them: graded judgements, linear
gain (``rel / log2(rank + 1)``), the ideal list built from every judged document, and documents
judged 0 count as not relevant. Set metrics treat the returned list as a set, because the
critic returns fewer chunks on purpose. ``paired_difference`` says whether one system beats
another on the same queries by more than sampling noise.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain of gains in rank order (rank 1 first)."""
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))


def ndcg_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k with graded judgements; 0.0 when nothing is judged relevant."""
    ideal = dcg(sorted((s for s in qrels.values() if s > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    gains = [max(0, qrels.get(doc, 0)) for doc in ranked[:k]]
    return dcg(gains) / ideal


def _relevant(qrels: Mapping[str, int]) -> set[str]:
    return {doc for doc, score in qrels.items() if score > 0}


def recall_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Share of the relevant documents found in the first ``k``; 0.0 when none is relevant."""
    relevant = _relevant(qrels)
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)


def mrr_at_k(ranked: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank of the first relevant document in the first ``k`` (0.0 when none)."""
    relevant = _relevant(qrels)
    for rank, doc in enumerate(ranked[:k], start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def set_precision(returned: Sequence[str], qrels: Mapping[str, int]) -> float | None:
    """Share of the returned documents that are relevant; None when nothing was returned."""
    if not returned:
        return None
    unique = set(returned)
    return len(unique & _relevant(qrels)) / len(unique)


def set_recall(returned: Sequence[str], qrels: Mapping[str, int]) -> float:
    """Share of the relevant documents anywhere in the returned set; 0.0 when none is relevant."""
    relevant = _relevant(qrels)
    if not relevant:
        return 0.0
    return len(relevant & set(returned)) / len(relevant)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation, as numpy's default.

    Raises:
        ValueError: ``values`` is empty or ``q`` is outside [0, 100].
    """
    if not values:
        raise ValueError("percentile of an empty sequence")
    if not 0 <= q <= 100:
        raise ValueError(f"q must be in [0, 100], got {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean; None for an empty sequence."""
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class PairedDifference:
    """The mean of per-query differences ``a - b`` and a percentile bootstrap interval."""

    mean: float
    low: float
    high: float
    queries: int
    level: float

    @property
    def significant(self) -> bool:
        """True when the interval leaves out 0 (the difference is not sampling noise)."""
        return self.low > 0 or self.high < 0


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> PairedDifference:
    """How much ``a`` beats ``b`` on the same queries, with a seeded paired bootstrap.

    Both systems are judged on one sample of queries, so the interval resamples queries (each
    query's pair of scores together): with 100 queries, an nDCG@10 difference of a few points
    is often inside it.

    Args:
        a: One score per query (say nDCG@10 of the pipeline).
        b: The other system's score on the same queries, in the same order.
        level: The interval's coverage, in (0, 1).
        resamples: Bootstrap resamples.
        seed: Seeds the resampling (the same inputs give the same interval).

    Raises:
        ValueError: The sequences differ in length or are empty, or ``level`` / ``resamples``
            is out of range.
    """
    if len(a) != len(b):
        raise ValueError(f"paired scores need one per query each, got {len(a)} and {len(b)}")
    if not a:
        raise ValueError("paired difference of no queries")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    rng = random.Random(seed)
    n = len(diffs)
    means = [sum(rng.choices(diffs, k=n)) / n for _ in range(resamples)]
    tail = 100 * (1 - level) / 2
    return PairedDifference(
        mean=sum(diffs) / n,
        low=percentile(means, tail),
        high=percentile(means, 100 - tail),
        queries=n,
        level=level,
    )
