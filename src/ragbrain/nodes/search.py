"""vector_search: the first search, with the caller's type filter."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext
from ragbrain.nodes import Node
from ragbrain.state import RetrievalState

if TYPE_CHECKING:
    from ragbrain.store import Store


def make_vector_search(store: Store) -> Node:
    """Bind the store into the ``vector_search`` node."""

    def vector_search(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        types = state.get("type_filter")
        hits = store.search(state["query"], state["depth"], types)
        scope = f"type in {types}" if types else "all types"
        return {
            "hits": hits,
            "fallback": False,
            "notes": [f"vector search ({scope}): {len(hits)} hits"],
        }

    return vector_search
