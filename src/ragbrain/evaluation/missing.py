"""The missing-answer scenario: a store copy from which some queries' answers were removed.

For a seeded share of the queries (half by default), every document judged relevant to them is
removed from a copy of the store; their topical neighbours (every other document) stay, so the
retriever still finds something close. The other queries keep at least one relevant document:
a document relevant to both an answerless and an answerable query decides for the answerable
one (the answerless candidate is skipped, and the next one is tried), so the split is exact.
A query whose relevant documents all go with others' is answerless too, whatever its draw,
and counts towards the share: a candidate is skipped when it would take more queries along
than the share has room for (a QA set asks several questions of one passage).

The metrics ask how often the pipeline hands over nothing when nothing fits (refusal recall,
``P(empty | unanswerable)``), how often it hands over nothing when something does (false
refusal, ``P(empty | answerable)``), and how many chunks it hands over when nothing relevant
exists.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.errors import InvalidInputError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ragbrain.store import Store

#: The plain distance gate of the original design: "nothing fits" when the best hit is further.
BASELINE_GATE = 0.55


@dataclass(frozen=True)
class MissingAnswer:
    """Which queries lost their answers, and which documents went with them."""

    unanswerable: frozenset[str]
    answerable: frozenset[str]
    removed: frozenset[str]
    seed: int

    def digest(self) -> str:
        """A short stable name of the removed set (the cached store copy is keyed by it)."""
        return hashlib.sha256("\n".join(sorted(self.removed)).encode()).hexdigest()[:12]


def _relevant(judged: Mapping[str, int]) -> set[str]:
    return {doc for doc, score in judged.items() if score > 0}


def split_missing(
    qrels: Mapping[str, Mapping[str, int]],
    query_ids: Sequence[str],
    *,
    share: float = 0.5,
    seed: int = 0,
) -> MissingAnswer:
    """Choose the answerless queries (``share`` of ``query_ids``, seeded) and the removed docs.

    Args:
        qrels: Graded judgements; a score above 0 is relevant.
        query_ids: The queries of the scenario; those with no relevant document are left out.
        share: The share of queries to make answerless, in (0, 1).
        seed: Seeds the draw (the same seed, queries and qrels give the same split).

    Returns:
        The split: every relevant document of an answerless query is removed, and every
        answerable query keeps at least one of its relevant documents.

    Raises:
        InvalidInputError: ``share`` outside (0, 1), or no query with a relevant document.
    """
    if not 0.0 < share < 1.0:
        raise InvalidInputError(f"share must be in (0, 1), got {share}.")
    relevant = {q: _relevant(qrels.get(q, {})) for q in dict.fromkeys(query_ids)}
    order = sorted(q for q, docs in relevant.items() if docs)
    if not order:
        raise InvalidInputError("No query of the scenario has a relevant document.")
    random.Random(seed).shuffle(order)
    target = round(share * len(order))
    sharing: dict[str, set[str]] = {}  # document -> the queries it is relevant to
    for query in order:
        for doc in relevant[query]:
            sharing.setdefault(doc, set()).add(query)
    removed: set[str] = set()
    answerless: set[str] = set()
    answerable: list[str] = []
    for query in order:
        if query in answerless:  # its answers already went with another query's
            continue
        docs = relevant[query]
        gone = removed | docs
        # Queries whose every answer would go too: they count towards the target.
        emptied = {q for d in docs for q in sharing[d] if relevant[q] <= gone} - answerless
        fits = len(answerless) + len(emptied) <= target
        # A removal may not take an answerable query's last relevant document.
        if fits and all(relevant[a] - gone for a in answerable):
            answerless |= emptied
            removed = gone
        else:
            answerable.append(query)
    return MissingAnswer(frozenset(answerless), frozenset(answerable), frozenset(removed), seed)


def pruned_store(store: Store, scenario: MissingAnswer) -> Store:
    """A copy of ``store`` without the scenario's removed documents, cached beside it.

    Vectors are copied, not recomputed; the copy is reused when a ``complete.json`` marker
    says it was finished for the same removed set.
    """
    from ragbrain.store import Store

    folder = Path(f"{store.location}-missing-{scenario.digest()}")
    marker = folder / "complete.json"
    copy = Store.open(folder, store.embeddings, create=True)
    if marker.is_file():
        return copy
    for page in store.pages(["documents", "metadatas", "embeddings"]):
        keep = [i for i, id_ in enumerate(page["ids"]) if id_ not in scenario.removed]
        if not keep:
            continue
        vectors = page["embeddings"]
        if vectors is None:
            raise InvalidInputError(f"{store.location}: the store returned no embeddings.")
        docs, metas = page["documents"] or [], page["metadatas"] or []
        copy.upsert(
            [page["ids"][i] for i in keep],
            [docs[i] or "" for i in keep],
            [dict(metas[i] or {}) for i in keep],
            [[float(x) for x in vectors[i]] for i in keep],
        )
    marker.write_text(
        json.dumps({"removed": len(scenario.removed), "seed": scenario.seed}), encoding="utf-8"
    )
    return copy


@dataclass(frozen=True)
class RefusalStats:
    """How a configuration behaved in the scenario."""

    refusal_recall: float | None
    false_refusal: float | None
    chunks_when_unanswerable: float | None
    chunks_when_answerable: float | None
    unanswerable: int
    answerable: int

    def as_dict(self) -> dict[str, float | int | None]:
        """The figures for a JSON report."""
        return dict(self.__dict__)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def refusal_stats(returned: Mapping[str, Sequence[str]], scenario: MissingAnswer) -> RefusalStats:
    """Refusal recall, false refusal and chunks handed over, from what came back per query.

    Args:
        returned: The ids handed over, per query id; queries outside the scenario are ignored.
        scenario: The split the store copy was made from.
    """
    lost = [len(ids) for q, ids in returned.items() if q in scenario.unanswerable]
    kept = [len(ids) for q, ids in returned.items() if q in scenario.answerable]
    return RefusalStats(
        refusal_recall=_mean([float(n == 0) for n in lost]),
        false_refusal=_mean([float(n == 0) for n in kept]),
        chunks_when_unanswerable=_mean([float(n) for n in lost]),
        chunks_when_answerable=_mean([float(n) for n in kept]),
        unanswerable=len(lost),
        answerable=len(kept),
    )


def gate_refuses(best_distance: float | None, threshold: float = BASELINE_GATE) -> bool:
    """The baseline: the plain distance gate refuses when the best hit is further than
    ``threshold`` (or there is none)."""
    return best_distance is None or best_distance > threshold
