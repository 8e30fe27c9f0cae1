"""vector_search: the first search, with the caller's type filter."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext
from ragbrain.state import RetrievalState

if TYPE_CHECKING:
    from ragbrain.store import Store

Node = Callable[[RetrievalState, Runtime[RetrievalContext]], dict[str, Any]]


def make_vector_search(store: Store) -> Node:
    """Bind the store into the ``vector_search`` node."""

    def vector_search(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        types = state.get("type_filter")
        hits = store.search(state["query"], state["depth"], types)
        scope = f"type in {types}" if types else "all types"
        return {"hits": hits, "notes": [f"vector search ({scope}): {len(hits)} hits"]}

    return vector_search
