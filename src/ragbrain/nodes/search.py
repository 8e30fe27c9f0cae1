"""vector_search: search with the caller's type filter, dense or fused with BM25."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext, context_of
from ragbrain.nodes import Node
from ragbrain.state import RetrievalState

if TYPE_CHECKING:
    from ragbrain.lexical.sync import LexicalSearcher
    from ragbrain.store import Store


def make_vector_search(store: Store, lexical: LexicalSearcher | None = None) -> Node:
    """Bind the store (and the lexical index, for hybrid search) into the ``vector_search`` node.

    It fetches the ``candidates`` that ``choose_depth`` decided (at least the depth). In
    ``hybrid`` mode the search fuses
    dense and BM25 hits; every hit still carries its cosine distance, so the gate reads the
    same kind of number in either mode.
    """

    def vector_search(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        context = context_of(runtime)
        query, wanted, types = state["query"], state["candidates"], state.get("type_filter")
        scope = f"type in {types}" if types else "all types"
        if context.search_mode == "hybrid" and lexical is not None:
            from ragbrain.lexical.fusion import dense_trusted, hybrid_search

            trust = dense_trusted(store, query, context.dense_languages)
            hits, lexical_only = hybrid_search(
                store, lexical.index, query, wanted, types, trust_dense=trust
            )
            note = f"hybrid search ({scope}): {len(hits)} hits, {lexical_only} found by BM25 only"
            if not trust:
                note += "; the query's language is not the model's, so BM25's order stands"
        else:
            hits = store.search(query, wanted, types)
            note = f"vector search ({scope}): {len(hits)} hits"
            if context.search_mode == "hybrid":
                note += " (hybrid asked, but this graph has no lexical index)"
        return {"hits": hits, "notes": [note]}

    return vector_search
