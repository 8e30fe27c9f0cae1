"""Choosing the CRAG gate threshold: how well the best distance predicts "nothing relevant".

Each sample is one search: its best cosine distance, and whether none of its results is
relevant (the case the gate should call "poor"). Labelled data says which chunks are relevant;
without labels, pseudo-queries made from the store's own chunks (title and first sentence) are
searched twice: with the store as is (their chunk is there: relevant) and with their own source
left out of the results (the store lacks the answer, as for an unrelated question).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ragbrain.errors import InvalidInputError
from ragbrain.gates import best_f1, pseudo_searches

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ragbrain.evaluation.beir import Split
    from ragbrain.store import Store

SEARCH_K = 10


@dataclass(frozen=True)
class Calibration:
    """A chosen gate threshold and how well best distance separates the two groups."""

    threshold: float
    auc: float
    precision: float
    recall: float
    f1: float
    poor_searches: int
    good_searches: int
    source: str

    def as_dict(self) -> dict[str, Any]:
        """Plain values for JSON."""
        return asdict(self)


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """Probability that a random positive scores above a random negative (ties count half).

    Raises:
        InvalidInputError: Lengths differ, or one of the classes is empty.
    """
    if len(scores) != len(labels):
        raise InvalidInputError(f"{len(scores)} scores but {len(labels)} labels.")
    positives = [s for s, y in zip(scores, labels, strict=True) if y]
    negatives = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not positives or not negatives:
        raise InvalidInputError(
            f"ROC AUC needs both classes; got {len(positives)} positive and "
            f"{len(negatives)} negative samples."
        )
    # Mann-Whitney U through midranks: O(n log n), exact with ties.
    ordered = sorted(scores)
    first: dict[float, int] = {}
    last: dict[float, int] = {}
    for rank, value in enumerate(ordered, start=1):
        first.setdefault(value, rank)
        last[value] = rank
    rank_sum = sum((first[s] + last[s]) / 2 for s in positives)
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def operating_point(
    distances: Sequence[float], no_relevant: Sequence[bool], source: str = ""
) -> Calibration:
    """The threshold with the best F1 at flagging "no relevant chunk" as ``distance > threshold``.

    Candidates are the midpoints between neighbouring distinct distances; a tie in F1 goes to
    the higher threshold (fewer needless fallbacks).
    """
    positives = sum(no_relevant)
    if not 0 < positives < len(distances):
        raise InvalidInputError(
            f"Calibration needs searches both with and without a relevant chunk in the results; "
            f"got {len(distances) - positives} with and {positives} without. Use more queries "
            "(--samples) or another split."
        )
    auc = roc_auc(distances, no_relevant)
    best = best_f1(distances, no_relevant)
    assert best is not None  # both kinds are there (checked above)
    threshold, precision, recall, f1 = best
    return Calibration(
        threshold=round(threshold, 4),
        auc=auc,
        precision=precision,
        recall=recall,
        f1=f1,
        poor_searches=positives,
        good_searches=len(distances) - positives,
        source=source,
    )


def labelled_samples(
    split: Split, store: Store, k: int = SEARCH_K, limit: int | None = None
) -> tuple[list[float], list[bool]]:
    """Best distance of each query's top-``k`` search, and whether none of it is relevant."""
    distances: list[float] = []
    no_relevant: list[bool] = []
    for query_id, text in list(split.queries.items())[:limit]:
        hits = store.search(text, k)
        if not hits:
            continue
        relevant = split.relevant(query_id)
        distances.append(hits[0]["distance"])
        no_relevant.append(not any(hit["id"] in relevant for hit in hits))
    return distances, no_relevant


def pseudo_samples(
    store: Store, n: int = 300, seed: int = 0, k: int = SEARCH_K
) -> tuple[list[float], list[bool]]:
    """Self-supervised samples from ``n`` random chunks of the user's own store.

    For each chunk's pseudo-query: the best distance with the store as it is (labelled
    "relevant present"), and the best distance once every chunk of its own source is removed
    from the results (labelled "nothing relevant").

    Raises:
        InvalidInputError: The store has fewer than two sources to contrast.
    """
    records = [
        record
        for page in store.pages(["documents", "metadatas"])
        for record in zip(
            page["ids"], page["documents"] or [], page["metadatas"] or [], strict=True
        )
    ]
    sources = {str((m or {}).get("source", i)) for i, _, m in records}
    if len(sources) < 2:
        raise InvalidInputError(
            f"The store at {store.location} holds {len(sources)} source(s); self-supervised "
            "calibration needs at least 2. Ingest more notes, or calibrate with --data."
        )
    drawn = random.Random(seed).sample(records, min(n, len(records)))
    distances, no_relevant = pseudo_searches(store, drawn, k * 3)
    return distances, no_relevant
