"""Fusing lexical and dense hits: by score for hybrid search, by rank for the other lists.

``hybrid_search`` fuses the dense and BM25 lists by score (``fuse_scores``): each chunk gets
``DENSE_SHARE`` x its dense similarity, min-max scaled over the dense list, plus the rest x
its BM25 score over the most the query can score (the sum of its terms' IDF: a Lucene term
scores below its IDF), raised to the store model's ``bm25_power``. BM25 is not rescaled to
its own best hit, so a BM25 list that matches little of the query counts little: on code
search (CoSQA: web questions against Python functions) BM25's best hit holds a third of the
query's score, on the QA sets most of it. Compared leave-one-domain-out with reciprocal rank
fusion, min-max fusion and per-query BM25 weights gated by IDF coverage, score share or the
two lists' overlap (docs/decisions/hybrid-score-fusion.md); the share and the power are
those fit on every shared set's train/dev queries, per store model.

Reciprocal rank fusion (RRF, Cormack et al. 2009) scores a chunk by the sum of
``1 / (RRF_K + rank)`` over the rankings it appears in; it fuses the lists that have no
comparable scores (a compound question's parts, the fallback's rungs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragbrain.errors import InvalidInputError
from ragbrain.lexical.tokens import Language, script_counts
from ragbrain.query.inputs import read_part
from ragbrain.store.search import Hit

if TYPE_CHECKING:
    from ragbrain.lexical.index import LexicalIndex
    from ragbrain.query.filters import Filters
    from ragbrain.store.search import SearchableStore

RRF_K = 60
#: Each side contributes its best ``max(k, CANDIDATES)`` chunks to the fusion.
CANDIDATES = 30
#: The dense side's share of ``fuse_scores``; BM25 gets the rest. Fit on every shared set's
#: train/dev queries (docs/decisions/hybrid-score-fusion.md): 0.3 for both store models
#: (0.2-0.4 when fit leave-one-domain-out).
DENSE_SHARE = 0.3
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
    store: SearchableStore,
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
    return _as_hits(store, query, rrf(id_rankings, weights=weights)[:k], known)


def _as_hits(
    store: SearchableStore, query: str, ids: Sequence[str], known: dict[str, Hit]
) -> list[Hit]:
    """``ids`` as hits: the ``known`` ones as they are, the others read from the store with
    their true cosine distance to ``query``."""
    missing = [id_ for id_ in ids if id_ not in known]
    found = dict(known)
    for hit in store.hits_by_id(query, missing):
        found[hit["id"]] = hit
    # A chunk deleted between the lexical search and the read is simply left out.
    return [found[id_] for id_ in ids if id_ in found]


def dense_trusted(query: str, languages: Sequence[str] | None) -> bool:
    """Whether the dense ranking of ``query`` counts in the fusion.

    Args:
        query: Its main script, and Japanese or Thai wherever they appear
            (``ALWAYS_COUNTED``), must be languages the model reads.
        languages: Query languages the embedding model reads (``script_counts`` names): the
            run's ``dense_languages``, else the store's (``StoreSettings.reads``); None: every
            language.
    """
    if languages is None:
        return True
    counts = script_counts(read_part(query))
    main: Language = counts.most_common(1)[0][0] if counts else "none"
    present = {main, *(script for script in ALWAYS_COUNTED if counts[script])}
    return all(script in languages for script in present)


def bm25_power(model: str) -> float:
    """The power BM25's share of the query's most is raised to for the store model ``model``
    (its profile's ``bm25_power``, fit with ``DENSE_SHARE``; 1 for a model without one).
    Squared, a BM25 hit matching half of the query counts a quarter."""
    from ragbrain.models.profiles import profile

    found = profile(model)
    return found.bm25_power if found is not None else 1.0


#: The power of BM25's share when the question names a whole compound the index holds
#: (``LexicalIndex.known_compounds``): a name the notes use is what the question is about, and
#: squaring its share (the shipped power) ranked the note that holds it below notes near in
#: meaning (docs/decisions/identifier-fusion.md).
IDENTIFIER_POWER = 1.0


def fusion_weights(trust_dense: bool) -> tuple[float, float]:
    """RRF weights of the (dense, BM25) rankings: the dense one counts only when trusted."""
    return (1.0, 1.0) if trust_dense else (0.0, 1.0)


@dataclass(frozen=True)
class FusionWeights:
    """What one query's score fusion gave each side.

    Attributes:
        dense: The dense side's share (``DENSE_SHARE``; 0 when the dense side is not trusted).
        bm25_best: BM25's best score over the most the query can score (0 to 1): the most
            any chunk gets from the BM25 side is ``(1 - dense) * bm25_best ** power``.
        power: The power BM25's share is raised to (``bm25_power``).
    """

    dense: float
    bm25_best: float
    power: float = 1.0
    #: The question names an identifier the notes use (``IDENTIFIER_POWER`` applied).
    named: bool = False

    def describe(self) -> str:
        """The weights in a trace note's words."""
        if self.dense == 0:
            return "BM25's order stands"
        top = (1 - self.dense) * self.bm25_best**self.power
        said = (
            f"fused by score, dense {self.dense:.2f} and BM25 up to {top:.2f} (its best hit "
            f"scores {self.bm25_best:.0%} of the most the query can"
        )
        if self.named:
            said += "; the question names an identifier the notes use, so it counts linearly"
        return said + ")"


def fuse_scores(
    dense: Sequence[tuple[str, float]],
    lexical: Sequence[tuple[str, float]],
    mass: float,
    dense_share: float = DENSE_SHARE,
    power: float = 1.0,
) -> list[str]:
    """Ids ordered by score fusion of a dense and a BM25 list (best first).

    Args:
        dense: (id, cosine distance) pairs; their similarity is min-max scaled over the list
            (one hit, or equal distances, all scale to 1).
        lexical: (id, BM25 score) pairs; each score counts as its share of ``mass``, at most 1.
        mass: The most the query can score (``LexicalIndex.query_mass``); 0 or less leaves
            the BM25 side out.
        dense_share: The dense side's weight; BM25 gets ``1 - dense_share``. With 0 the BM25
            order stands and dense-only ids follow it in dense order.
        power: Each BM25 share is raised to it (> 0) before weighing; above 1 a hit matching
            little of the query counts less still.

    Ties keep the order of first appearance (dense first), so the result is deterministic.
    """
    if not 0.0 <= dense_share <= 1.0:
        raise InvalidInputError(f"dense_share must be within 0 and 1, not {dense_share}.")
    if not power > 0:
        raise InvalidInputError(f"power must be above 0, not {power}.")
    total: dict[str, float] = {}
    if dense:
        low = min(distance for _, distance in dense)
        high = max(distance for _, distance in dense)
        for id_, distance in dense:
            scaled = (high - distance) / (high - low) if high > low else 1.0
            total.setdefault(id_, dense_share * scaled)
    if mass > 0:
        for id_, score in lexical:
            share = min(1.0, score / mass) ** power
            total[id_] = total.get(id_, 0.0) + (1 - dense_share) * share
    return sorted(total, key=lambda id_: -total[id_])


#: At most this many of BM25's best chunks that hold every word of the question keep a place
#: among the fused candidates (``holders``).
HOLDERS = 2


def holders(index: LexicalIndex, query: str, ranked: Sequence[str]) -> list[str]:
    """Of BM25's best chunks (``ranked``, best first), the first ``HOLDERS`` that hold every
    term of the question, question words aside (``lexical.support.question_terms``); none
    when a term is one the index never saw. A rare word in a long note scores little against
    the query's most (a Lucene term scores below its IDF, less in a long chunk), so the score
    fusion can leave the one chunk that holds it behind dense hits that hold nothing."""
    from ragbrain.lexical.support import SUPPORT_HITS, question_terms

    weights, mass = index.query_weights(query, skip=question_terms())
    if not weights or sum(weights.values()) < mass:
        return []
    wanted = set(weights)
    found = [id_ for id_ in ranked[:SUPPORT_HITS] if wanted <= index.terms_of(id_)]
    return found[:HOLDERS]


def floor_holders(order: Sequence[str], kept: Sequence[str], k: int) -> list[str]:
    """The first ``k`` of ``order`` with every id of ``kept`` among them: one that fell below
    takes the place of the last fused ids that are not ``kept``, in ``kept``'s order."""
    top = list(order[:k])
    missing = [id_ for id_ in kept if id_ not in top]
    if not missing or k <= 0:
        return top
    room = [id_ for id_ in top if id_ not in kept]
    drop = set(room[len(room) - min(len(missing), len(room)) :])
    top = [id_ for id_ in top if id_ not in drop]
    return top + missing[: k - len(top)]


@dataclass(frozen=True)
class Fused:
    """``hybrid_fusion``'s result: the hits, how many only BM25 found, and the weights."""

    hits: list[Hit]
    lexical_only: int
    weights: FusionWeights
    #: The dense side's best cosine distance (None: it found nothing), whatever the fusion kept.
    nearest: float | None = None
    #: How much of the query BM25's best chunk holds, by rarity (``ragbrain.lexical.support
    #: .lexical_support``; None: the query has no index term).
    support: float | None = None
    #: How many chunks holding every word of the question took a place the fusion had given
    #: to others (``holders``).
    raised: int = 0


def hybrid_fusion(
    store: SearchableStore,
    index: LexicalIndex,
    query: str,
    k: int,
    types: Sequence[str] | None = None,
    *,
    trust_dense: bool = True,
    filters: Filters | None = None,
    dense_share: float = DENSE_SHARE,
    power: float = 1.0,
) -> Fused:
    """Dense and BM25 search fused by score (``fuse_scores``); every hit carries its cosine
    distance to ``query``.

    Args:
        store: The dense side, and the distances of chunks only BM25 found.
        index: The BM25 side.
        query: The text both sides search.
        k: At most this many hits; each side contributes its best ``max(k, CANDIDATES)``.
        types: Only chunks of these note types; None for all.
        trust_dense: False gives the dense side weight 0 (the embedding model cannot read
            the query's language): BM25's order stands, dense hits only fill in after it.
        filters: Path, tag and date filters both sides apply.
        dense_share: The dense side's share when it is trusted (``RetrievalContext.dense_share``).
        power: The power BM25's share is raised to (the store model's ``bm25_power``).

    Returns:
        The ``k`` fused hits (best first), how many of them only BM25 found, the weights.
    """
    depth = max(k, CANDIDATES)
    dense = (
        store.search(query, depth, types, filters) if filters else store.search(query, depth, types)
    )
    matches = index.search(query, depth, types, filters)
    mass = index.query_mass(query)
    share = dense_share if trust_dense else 0.0
    named = bool(index.known_compounds(query))
    if named:  # a name the notes use: BM25's share counts as it is (IDENTIFIER_POWER)
        power = IDENTIFIER_POWER
    order = fuse_scores(
        [(hit["id"], hit["distance"]) for hit in dense],
        [(match.id, match.score) for match in matches],
        mass,
        share,
        power,
    )
    fused_top = order[:k]
    order = floor_holders(order, holders(index, query, [match.id for match in matches]), k)
    raised = sum(id_ not in fused_top for id_ in order)
    best = min(1.0, matches[0].score / mass) if matches and mass > 0 else 0.0
    hits = _as_hits(store, query, order, {hit["id"]: hit for hit in dense})
    dense_ids = {hit["id"] for hit in dense}
    only = sum(hit["id"] not in dense_ids for hit in hits)
    nearest = max(0.0, dense[0]["distance"]) if dense else None
    from ragbrain.lexical.support import lexical_support

    support = lexical_support(index, query, [match.id for match in matches])
    return Fused(hits, only, FusionWeights(share, best, power, named), nearest, support, raised)


def hybrid_search(
    store: SearchableStore,
    index: LexicalIndex,
    query: str,
    k: int,
    types: Sequence[str] | None = None,
    *,
    trust_dense: bool = True,
    filters: Filters | None = None,
    power: float = 1.0,
) -> tuple[list[Hit], int]:
    """``hybrid_fusion``'s hits and how many of them only BM25 found (same arguments)."""
    fused = hybrid_fusion(
        store, index, query, k, types, trust_dense=trust_dense, filters=filters, power=power
    )
    return fused.hits, fused.lexical_only
