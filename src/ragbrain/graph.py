"""Wiring only: the nodes, their edges and the one branch, compiled into a LangGraph."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ragbrain.context import RetrievalContext
from ragbrain.critic.model import TransformerCritic
from ragbrain.nodes.critic import make_critic_filter
from ragbrain.nodes.fallback import make_fallback_search
from ragbrain.nodes.quality import route_after_gate
from ragbrain.nodes.search import make_vector_search
from ragbrain.state import RetrievalInput, RetrievalOutput, RetrievalState

if TYPE_CHECKING:
    from ragbrain.critic.base import Critic
    from ragbrain.lexical.sync import LexicalSearcher
    from ragbrain.store import Store

Graph = CompiledStateGraph[RetrievalState, RetrievalContext, RetrievalInput, RetrievalOutput]


def bind_critic(critic: Critic, store: Store) -> Critic:
    """The critic as a graph over ``store`` uses it: a ``TransformerCritic`` bound to the
    store's embedding model (``for_model``: its distance layer when it learned that model's
    distances), any other critic as it is."""
    if isinstance(critic, TransformerCritic):
        return critic.for_model(store.embedding_model)
    return critic


def build_graph(
    store: Store,
    critic: Critic | None = None,
    *,
    critic_off_reason: str = "no critic configured",
    lexical: LexicalSearcher | None = None,
) -> Graph:
    """Compile the corrective retrieval graph over ``store``.

    query -> vector_search ---judge---> critic_filter -> documents
                         \\-widen-> fallback_search -/

    ``vector_search`` chooses the depth, searches and runs the CRAG gate: the depth is a pure
    function of the query and the gate of the hits, and a node of their own would each cost a
    LangGraph superstep, more than the decision. A poor verdict takes the fallback when it can
    widen the search (a type filter to drop, or a BM25 rescue in dense mode); otherwise the
    run goes on to the critic.

    Args:
        store: The opened store the searches read.
        critic: Scores chunks in ``critic_filter``; None keeps every chunk and says so. A
            ``TransformerCritic`` is bound to the store's embedding model (``bind_critic``).
        critic_off_reason: What the trace says when ``critic`` is None.
        lexical: The store's lexical index (``ragbrain.lexical.LexicalSearcher``), for hybrid
            search and the lexical rescue; None searches by vectors only.

    Returns:
        The compiled graph. Invoke it with ``{"query": ..., "type_filter": ...}`` and
        ``context=RetrievalContext(...)``.
    """
    builder: StateGraph[Any, RetrievalContext, RetrievalInput, RetrievalOutput] = StateGraph(
        RetrievalState,
        context_schema=RetrievalContext,
        input_schema=RetrievalInput,
        output_schema=RetrievalOutput,
    )
    builder.add_node("vector_search", make_vector_search(store, lexical))
    builder.add_node("fallback_search", make_fallback_search(store, lexical))
    critic = bind_critic(critic, store) if critic is not None else None
    builder.add_node("critic_filter", make_critic_filter(critic, critic_off_reason))

    builder.add_edge(START, "vector_search")
    builder.add_conditional_edges(
        "vector_search", route_after_gate, {"widen": "fallback_search", "judge": "critic_filter"}
    )
    builder.add_edge("fallback_search", "critic_filter")
    builder.add_edge("critic_filter", END)
    return builder.compile(name="ragbrain")
