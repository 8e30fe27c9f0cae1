"""fallback_search: on a poor verdict, search again across every type (and lexically) and merge."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext, context_of
from ragbrain.nodes import Node
from ragbrain.nodes.search import fusion_knobs
from ragbrain.query.filters import Filters
from ragbrain.state import RetrievalState
from ragbrain.store.search import Hit

if TYPE_CHECKING:
    from collections.abc import Callable

    from ragbrain.settings import StoreSettings
    from ragbrain.store.lexical import LexicalSearcher
    from ragbrain.store.search import SearchableStore


def rescued(hits: list[Hit]) -> list[Hit]:
    """Copies of ``hits`` marked as found by the fallback."""
    return [Hit(**{**hit, "from_fallback": True}) for hit in hits]


def merge_hits(first: list[Hit], second: list[Hit], limit: int) -> list[Hit]:
    """Union by id (the first search's copy wins a tie), best distance first, at most ``limit``."""
    by_id: dict[str, Hit] = {}
    for hit in [*first, *second]:
        kept = by_id.get(hit["id"])
        if kept is None or hit["distance"] < kept["distance"]:
            by_id[hit["id"]] = hit
    return sorted(by_id.values(), key=lambda h: h["distance"])[:limit]


def can_widen(types: list[str] | None, search_mode: str, lexical: object | None) -> bool:
    """Whether a fallback search has anything to add to the first one: a type filter to drop,
    or, in dense mode with a lexical index, a BM25 rescue (hybrid mode already searched BM25)."""
    return bool(types) or (lexical is not None and search_mode != "hybrid")


def make_fallback_search(
    store: SearchableStore,
    lexical: LexicalSearcher | None = None,
    settings: Callable[[], StoreSettings] | None = None,
) -> Node:
    """Bind the store (and the lexical index, for the lexical rescue, and the store's settings,
    as ``make_vector_search`` reads them) into ``fallback_search``.

    The rungs: without the type filter (when there was one), and, with a lexical index, a
    BM25 rescue across every type (in hybrid mode the type-free search already includes it).
    The graph routes here only when ``can_widen``; a poor verdict with nothing to widen goes
    straight to the critic. Path, tag and date filters are the caller's scope: every rung
    keeps them (only the type filter is dropped).
    With a lexical rung the lists are fused by reciprocal rank fusion, the first search's
    order counting as one ranking; without one, they merge by distance as before.
    """

    def fallback_search(
        state: RetrievalState, runtime: Runtime[RetrievalContext]
    ) -> dict[str, Any]:
        query, wanted, types = state["query"], state["candidates"], state.get("type_filter")
        filters = Filters.parse(state.get("filters"))
        context = context_of(runtime)
        hybrid = context.search_mode == "hybrid" and lexical is not None
        coverage: float | None = None  # BM25's coverage of the query in the type-free search
        wide_support: float | None = None  # and how much of it one chunk holds (refusal)
        wide_nearest: float | None = None  # and its dense side's nearest chunk (refusal)

        def dense(k: int) -> list[Hit]:
            return store.search(query, k, None, filters) if filters else store.search(query, k)

        if lexical is None:  # the router only comes here with a type filter to drop
            found = dense(wanted)
            merged = merge_hits(state["hits"], rescued(found), wanted)
            rungs = "without the type filter"
        else:
            from ragbrain.hybrid import (
                CANDIDATES,
                fuse_hits,
                hybrid_fusion,
            )

            if hybrid:
                # The type-free hybrid search already holds the lexical rung: merge it with
                # the first search by distance, as the dense fallback does, so a rescued chunk
                # is not outranked by the filtered hits the gate just judged poor.
                trust, power = fusion_knobs(settings() if settings else None, context, query)
                wide = hybrid_fusion(
                    store,
                    lexical.index,
                    query,
                    wanted,
                    trust_dense=trust,
                    filters=filters,
                    dense_share=context.dense_share,
                    power=power,
                )
                merged = merge_hits(state["hits"], rescued(wide.hits), wanted)
                coverage = wide.weights.bm25_best
                wide_support, wide_nearest = wide.support, wide.nearest
                rungs = f"without the type filter (hybrid; {wide.weights.describe()})"
            else:
                rankings: list[list[Hit] | list[str]] = [state["hits"]]
                rung_names = []
                if types:
                    found = dense(wanted)
                    rankings.append(rescued(found))
                    rung_names.append("without the type filter")
                matches = lexical.index.search(query, max(wanted, CANDIDATES), None, filters)
                rankings.append([match.id for match in matches])
                rung_names.append(f"lexical rescue ({len(matches)} BM25 hits)")
                first_ids = {hit["id"] for hit in state["hits"]}
                fused = fuse_hits(store, query, rankings, wanted)
                merged = [hit if hit["id"] in first_ids else rescued([hit])[0] for hit in fused]
                rungs = " + ".join(rung_names)
        first_ids = {hit["id"] for hit in state["hits"]}
        new = sum(hit["id"] not in first_ids for hit in merged)
        note = f"fallback search {rungs}: {new} new of {len(merged)} kept"
        if filters:
            note += f" (the path, tag and date filters kept: {filters.describe()})"
        out: dict[str, Any] = {"hits": merged, "notes": [note]}  # the gate set "fallback"
        if coverage is not None:
            out["bm25_coverage"] = max(coverage, state.get("bm25_coverage") or 0.0)
        # Refusal reads the widest evidence: the nearest chunk and the best support of every
        # search the run made, the type-free one included.
        nearest = [d for d in (state.get("nearest_distance"), wide_nearest) if d is not None]
        nearest += [max(0.0, hit["distance"]) for hit in merged]
        out["nearest_distance"] = min(nearest, default=None)
        supports = [s for s in (state.get("lexical_support"), wide_support) if s is not None]
        out["lexical_support"] = max(supports, default=None)
        return out

    return fallback_search
