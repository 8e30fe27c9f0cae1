"""Keep/drop metrics of a critic against judgements: recall of keep, drop rate, AUC, thresholds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class KeepStats:
    """What a threshold does to a set of judged candidates."""

    relevant_kept: float
    """Share of relevant candidates kept (recall of keep)."""
    irrelevant_dropped: float
    """Share of irrelevant candidates dropped."""
    precision: float
    """Share of kept candidates that are relevant."""
    f1: float
    kept: int
    total: int

    def as_dict(self) -> dict[str, float | int]:
        """Plain dict for JSON."""
        return asdict(self)


def _finite(score: float) -> float:
    return -math.inf if math.isnan(score) else score


def keep_stats(scores: Sequence[float], labels: Sequence[bool], threshold: float) -> KeepStats:
    """Keep a candidate when its score >= ``threshold`` (NaN is never kept)."""
    keep = [not math.isnan(s) and s >= threshold for s in scores]
    relevant = sum(labels)
    irrelevant = len(labels) - relevant
    tp = sum(k and y for k, y in zip(keep, labels, strict=True))
    kept = sum(keep)
    recall = tp / relevant if relevant else 1.0
    dropped = (irrelevant - (kept - tp)) / irrelevant if irrelevant else 1.0
    precision = tp / kept if kept else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return KeepStats(recall, dropped, precision, f1, kept, len(labels))


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Probability that a random relevant candidate outscores a random irrelevant one (ties 1/2)."""
    ranked = sorted(zip(map(_finite, scores), labels, strict=True), key=lambda p: p[0])
    positives = sum(labels)
    negatives = len(labels) - positives
    if not positives or not negatives:
        return math.nan
    rank_sum = 0.0
    i = 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mean_rank = (i + j + 1) / 2  # 1-based average rank of the tie block
        rank_sum += mean_rank * sum(1 for _, y in ranked[i:j] if y)
        i = j
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def threshold_for_recall(scores: Sequence[float], labels: Sequence[bool], recall: float) -> float:
    """The highest threshold that still keeps at least ``recall`` of the relevant candidates."""
    relevant = sorted((_finite(s) for s, y in zip(scores, labels, strict=True) if y), reverse=True)
    if not relevant:
        return 0.0
    needed = max(1, math.ceil(recall * len(relevant) - 1e-9))
    return relevant[needed - 1]


def precision_recall_curve(
    scores: Sequence[float], labels: Sequence[bool], points: int = 101
) -> list[tuple[float, float, float]]:
    """(threshold, recall of keep, precision) at evenly spaced thresholds over the score range."""
    finite = [_finite(s) for s in scores if not math.isnan(s)]
    if not finite:
        return []
    low, high = min(finite), max(finite)
    curve = []
    for step in range(points):
        threshold = low + (high - low) * step / (points - 1)
        stats = keep_stats(scores, labels, threshold)
        curve.append((threshold, stats.relevant_kept, stats.precision))
    return curve
