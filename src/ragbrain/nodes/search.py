"""vector_search: search with the caller's type filter, dense or fused with BM25."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext, context_of
from ragbrain.nodes import Node
from ragbrain.state import RetrievalState
from ragbrain.typematch import unknown_types, unknown_types_message

if TYPE_CHECKING:
    from ragbrain.lexical.sync import LexicalSearcher
    from ragbrain.store import Store


def make_vector_search(store: Store, lexical: LexicalSearcher | None = None) -> Node:
    """Bind the store (and the lexical index, for hybrid search) into the ``vector_search`` node.

    It fetches as many chunks as ``choose_depth`` decided. In ``hybrid`` mode the search fuses
    dense and BM25 hits; every hit still carries its cosine distance, so the gate reads the
    same kind of number in either mode. Types match case-insensitively; a requested type
    that matches no stored one is named in the trace with the closest ones.
    """

    def vector_search(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        context = context_of(runtime)
        query, depth, types = state["query"], state["depth"], state.get("type_filter")
        scope = f"type in {types}" if types else "all types"
        if context.search_mode == "hybrid" and lexical is not None:
            from ragbrain.lexical.fusion import dense_trusted, hybrid_search

            trust = dense_trusted(store, query, context.dense_languages)
            hits, lexical_only = hybrid_search(
                store, lexical.index, query, depth, types, trust_dense=trust
            )
            note = f"hybrid search ({scope}): {len(hits)} hits, {lexical_only} found by BM25 only"
            if not trust:
                note += "; the query's language is not the model's, so BM25's order stands"
        else:
            hits = store.search(query, depth, types)
            note = f"vector search ({scope}): {len(hits)} hits"
            if context.search_mode == "hybrid":
                note += " (hybrid asked, but this graph has no lexical index)"
        notes = [note]
        if types:
            unknown = unknown_types(types, store.known_types())
            if unknown:
                notes.append(f"type filter: {unknown_types_message(unknown)}")
        return {"hits": hits, "notes": notes}

    return vector_search
