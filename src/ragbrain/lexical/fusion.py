"""Fusing lexical and dense hits: reciprocal rank fusion, with every hit's true cosine distance.

Reciprocal rank fusion (RRF, Cormack et al. 2009) scores a chunk by the sum of
``1 / (RRF_K + rank)`` over the rankings it appears in. It needs no calibration between BM25
scores (unbounded) and cosine distances. Fixed before measuring; on SciFact and NFCorpus test
it beat dense and BM25 alone, and a min-max weighted score did better on SciFact only
(``benchmarks/results/hybrid-*.md``), so the choice stays open to tuning on train splits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragbrain.lexical.tokens import Language, script_counts
from ragbrain.state import Hit

if TYPE_CHECKING:
    from ragbrain.filters import Filters
    from ragbrain.lexical.index import LexicalIndex
    from ragbrain.store import Store

RRF_K = 60
#: Each side contributes its best ``max(k, CANDIDATES)`` chunks to the fusion.
CANDIDATES = 30
#: What ``dense_trusted`` assumes the English-only default model reads.
ENGLISH_ONLY = ("en", "none")
#: Scripts that count wherever they appear in a query, not only as its main script: a
#: Japanese question quoting English names ("Hainesと誰が、StripTheoryを考案しましたか") is
#: mostly Latin letters, yet an English-only model cannot read the question. Other scripts
#: count only as the main one, so a Greek letter in a scientific claim (TNF-alpha written
#: with the letter) changes nothing.
ALWAYS_COUNTED: tuple[Language, ...] = ("ja", "zh", "th", "ar")


def rrf(
    rankings: Sequence[Sequence[str]], k: int = RRF_K, weights: Sequence[float] | None = None
) -> list[str]:
    """Ids ordered by reciprocal rank fusion of several rankings (best first).

    Args:
        rankings: Ids, best first, one list per ranking.
        k: The RRF constant.
        weights: One weight per ranking (default 1 each); a ranking of weight 0 only orders
            the ids that no other ranking found, after all of those.

    Ties keep the order of first appearance (earlier rankings first), so the result is
    deterministic.
    """
    weights = weights if weights is not None else [1.0] * len(rankings)
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, id_ in enumerate(ranking, start=1):
            scores[id_] = scores.get(id_, 0.0) + weight / (k + rank)
    return sorted(scores, key=lambda id_: -scores[id_])


def fuse_hits(
    store: Store,
    query: str,
    rankings: Sequence[Sequence[Hit | str]],
    k: int,
    weights: Sequence[float] | None = None,
) -> list[Hit]:
    """The ``k`` best chunks by RRF over ``rankings``, as hits in fused order.

    A ranking holds hits (with their distances) or bare ids (from the lexical index); the
    first hit object seen for an id is kept, and ids that only arrived bare are read from the
    store with their true cosine distance to ``query``.
    """
    known: dict[str, Hit] = {}
    id_rankings: list[list[str]] = []
    for ranking in rankings:
        ids: list[str] = []
        for item in ranking:
            if isinstance(item, str):
                ids.append(item)
            else:
                ids.append(item["id"])
                known.setdefault(item["id"], item)
        id_rankings.append(ids)
    fused = rrf(id_rankings, weights=weights)[:k]
    missing = [id_ for id_ in fused if id_ not in known]
    for hit in store.hits_by_id(query, missing):
        known[hit["id"]] = hit
    # A chunk deleted between the lexical search and the read is simply left out.
    return [known[id_] for id_ in fused if id_ in known]


def dense_trusted(store: Store, query: str, languages: Sequence[str] | None) -> bool:
    """Whether the dense ranking of ``query`` counts in the fusion.

    Args:
        store: Its embedding model decides when ``languages`` is None.
        query: Its main script, and Japanese or Thai wherever they appear
            (``ALWAYS_COUNTED``), must be languages the model reads.
        languages: Query languages the embedding model reads (``script_counts`` names);
            None means what the store's model reads (``ragbrain.embeddings.MODEL_READS``:
            English and text without letters for all-MiniLM-L6-v2, every language for
            multilingual-e5-small and for any model not listed).
    """
    if languages is None:
        from ragbrain.embeddings import model_name_of, model_reads

        read = model_reads(model_name_of(store.embeddings))
        if read is None:
            return True
        languages = read
    counts = script_counts(query)
    main: Language = counts.most_common(1)[0][0] if counts else "none"
    present = {main, *(script for script in ALWAYS_COUNTED if counts[script])}
    return all(script in languages for script in present)


def fusion_weights(trust_dense: bool) -> tuple[float, float]:
    """RRF weights of the (dense, BM25) rankings: the dense one counts only when trusted."""
    return (1.0, 1.0) if trust_dense else (0.0, 1.0)


def hybrid_search(
    store: Store,
    index: LexicalIndex,
    query: str,
    k: int,
    types: Sequence[str] | None = None,
    *,
    trust_dense: bool = True,
    filters: Filters | None = None,
) -> tuple[list[Hit], int]:
    """Dense and BM25 search, fused by RRF; every hit carries its cosine distance to ``query``.

    Args:
        trust_dense: False gives the dense ranking weight 0 (the embedding model cannot read
            the query's language): BM25's order stands, dense hits only fill in after it.
        filters: Path, tag and date filters both sides apply.

    Returns:
        The ``k`` fused hits (best first) and how many of them only the lexical side found.
    """
    depth = max(k, CANDIDATES)
    dense = (
        store.search(query, depth, types, filters) if filters else store.search(query, depth, types)
    )
    lexical = [hit.id for hit in index.search(query, depth, types, filters)]
    hits = fuse_hits(store, query, [dense, lexical], k, fusion_weights(trust_dense))
    dense_ids = {hit["id"] for hit in dense}
    return hits, sum(hit["id"] not in dense_ids for hit in hits)
