"""Wiring: the nodes, their edges and the one branch, compiled into a LangGraph."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from ragbrain.context import RetrievalContext
from ragbrain.critic.model import TransformerCritic
from ragbrain.nodes import Node
from ragbrain.nodes.critic import keep_all, make_critic_filter
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

    Two choices keep LangGraph's own cost per query down (it is most of the pipeline's cost
    over a Chroma server; see the README's scale section):

    - ``vector_search`` takes the branch itself, returning a ``Command``: a conditional edge
      would make LangGraph rebuild the state to read one key after the node.
    - Without a critic there is no ``critic_filter`` node: the search that ends the run also
      keeps every hit (``keep_all``), a superstep fewer. The trace says the critic is off.

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
    search, fallback = make_vector_search(store, lexical), make_fallback_search(store, lexical)
    finish: Finish | None = None
    if critic is None:  # each search ends the run itself (see above)
        finish = partial(keep_all, off_reason=critic_off_reason)
        fallback = _then(fallback, finish)
        last, label = END, "keep all"
    else:
        last, label = "critic_filter", "judge"
    builder.add_node(
        "vector_search",
        _branching(search, last, finish),
        destinations={"fallback_search": "widen", last: label},
    )
    builder.add_node("fallback_search", fallback)
    if critic is not None:
        builder.add_node(last, make_critic_filter(bind_critic(critic, store)))
    builder.add_edge(START, "vector_search")
    builder.add_edge("fallback_search", last)
    return builder.compile(name="ragbrain")


class Finish(Protocol):
    """How a run ends without a critic: ``keep_all`` with the reason bound."""

    def __call__(self, state: RetrievalState) -> dict[str, Any]: ...


class Branching(Protocol):
    """A node that names the node after it (LangGraph's ``Command``)."""

    def __call__(
        self, state: RetrievalState, *, runtime: Runtime[RetrievalContext]
    ) -> Command[str]: ...


def _branching(search: Node, judge: str, finish: Finish | None) -> Branching:
    """``vector_search`` with the gate's branch: a ``Command`` to ``fallback_search`` when the
    gate chose to widen, else to ``judge`` (the critic, or the end, ``finish`` applied)."""

    def vector_search(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> Command[str]:
        update = search(state, runtime=runtime)
        if route_after_gate(update) == "widen":
            return Command(update=update, goto="fallback_search")
        if finish is not None:
            update = _finished(state, update, finish)
        return Command(update=update, goto=judge)

    return vector_search


def _then(node: Node, finish: Finish) -> Node:
    """``node`` and then ``finish`` in one superstep."""

    def ending(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        return _finished(state, node(state, runtime=runtime), finish)

    return ending


def _finished(state: RetrievalState, update: dict[str, Any], finish: Finish) -> dict[str, Any]:
    """A node's ``update`` with the run's end applied in the same step: ``finish`` reads the
    state as the update leaves it, and its notes follow the node's."""
    last = finish({**state, **update})  # type: ignore[typeddict-item]
    return {**update, **last, "notes": [*update["notes"], *last["notes"]]}
