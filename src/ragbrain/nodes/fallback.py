"""fallback_search: on a poor verdict, search again across every type and merge."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext
from ragbrain.nodes import Node
from ragbrain.state import Hit, RetrievalState

if TYPE_CHECKING:
    from ragbrain.store import Store


def merge_hits(first: list[Hit], second: list[Hit], limit: int) -> list[Hit]:
    """Union by id (the first search's copy wins a tie), best distance first, at most ``limit``."""
    by_id: dict[str, Hit] = {}
    for hit in [*first, *second]:
        kept = by_id.get(hit["id"])
        if kept is None or hit["distance"] < kept["distance"]:
            by_id[hit["id"]] = hit
    return sorted(by_id.values(), key=lambda h: h["distance"])[:limit]


def make_fallback_search(store: Store) -> Node:
    """Bind the store into the ``fallback_search`` node."""

    def fallback_search(
        state: RetrievalState, runtime: Runtime[RetrievalContext]
    ) -> dict[str, Any]:
        if not state.get("type_filter"):
            note = "fallback skipped: the first search already covered every type"
            return {"fallback": False, "notes": [note]}
        found = store.search(state["query"], state["depth"], None)
        rescued = [Hit(**{**hit, "from_fallback": True}) for hit in found]
        merged = merge_hits(state["hits"], rescued, state["depth"])
        first_ids = {hit["id"] for hit in state["hits"]}
        new = sum(hit["id"] not in first_ids for hit in merged)
        note = f"fallback search without the type filter: {new} new of {len(merged)} kept"
        return {"hits": merged, "fallback": True, "notes": [note]}

    return fallback_search
