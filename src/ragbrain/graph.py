"""Wiring: the five nodes, their edges and the one branch, compiled into a LangGraph."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ragbrain.checks import check_graph_inputs
from ragbrain.context import RetrievalContext
from ragbrain.critic.choice import graph_critic
from ragbrain.critic.handover import HandOverRule
from ragbrain.nodes.critic import make_critic_filter
from ragbrain.nodes.depth import choose_depth
from ragbrain.nodes.fallback import make_fallback_search
from ragbrain.nodes.quality import GateSetting, make_assess_quality, route_after_gate
from ragbrain.nodes.search import make_vector_search
from ragbrain.refusal.offtopic import OffTopicCut
from ragbrain.settings import Resolution, StoreSettings, resolve
from ragbrain.state import RetrievalInput, RetrievalOutput, RetrievalState

if TYPE_CHECKING:
    from pathlib import Path

    from ragbrain.critic.base import Critic
    from ragbrain.store import Store
    from ragbrain.store.lexical import LexicalSearcher

Graph = CompiledStateGraph[RetrievalState, RetrievalContext, RetrievalInput, RetrievalOutput]


def build_graph(
    store: Store,
    critic: Critic | str | Path | None = None,
    *,
    critic_off_reason: str = "no critic configured",
    lexical: LexicalSearcher | None = None,
    offtopic: OffTopicCut | Literal["store"] | None = "store",
    handover: HandOverRule | Literal["shipped"] | None = "shipped",
) -> Graph:
    """Compile the corrective retrieval graph over ``store``.

    choose_depth -> vector_search -> assess_quality -(judge)-> critic_filter -> documents
                                                    \\-(widen)-> fallback_search -/

    Args:
        store: The opened store the searches read; its settings (gate, off-topic cut, bound
            critic, hand-over rule, fusion) are resolved here, once, and again when the store
            changes in a way that matters (``ragbrain.settings``).
        critic: Scores chunks in ``critic_filter``; None keeps every chunk and says so;
            ``"default"`` (the shipped critic) or a critic folder is loaded here, and bound to
            the store (``ragbrain.settings.bind_critic``): the shipped critic is the evidence
            critic on a store of the model its layer was fit for, the cross-encoder on others.
        critic_off_reason: What the trace says when ``critic`` is None.
        lexical: The store's lexical index (``ragbrain.lexical.LexicalSearcher``), for hybrid
            search and the lexical rescue; None searches by vectors only.
        offtopic: The off-topic cut ``critic_filter`` refuses above (``"store"``: the one the
            store learnt at ingest, or learnt now; ``ragbrain.refusal.offtopic``); None
            refuses nothing by topic.
        handover: The hand-over rule ``critic_filter`` narrows the kept chunks with
            (``"shipped"``: the one fit for the bound critic's kind, if any;
            ``ragbrain.critic.handover``); None hands over every kept chunk.

    Returns:
        The compiled graph. Invoke it with ``{"query": ..., "type_filter": ...}`` and
        ``context=RetrievalContext(...)``.

    Raises:
        WrongTypeError: ``store``, ``critic`` or ``lexical`` of a kind it does not take.
        CriticLoadError: ``critic`` names a folder (or the shipped critic) that cannot load.
    """
    check_graph_inputs(store, lexical)
    resolution = store_resolution(
        store, critic, critic_off_reason, lexical=lexical, offtopic=offtopic, handover=handover
    )
    return graph_over(store, resolution, lexical)


def graph_over(store: Store, resolution: Resolution, lexical: LexicalSearcher | None) -> Graph:
    """The graph over ``store`` reading ``resolution``'s settings (``store_resolution``)."""
    settings = resolution.current

    def gate() -> GateSetting:
        decided = settings()
        return GateSetting(decided.gate, decided.gate_source, lexical=lexical is not None)

    builder: StateGraph[Any, RetrievalContext, RetrievalInput, RetrievalOutput] = StateGraph(
        RetrievalState,
        context_schema=RetrievalContext,
        input_schema=RetrievalInput,
        output_schema=RetrievalOutput,
    )
    builder.add_node("choose_depth", choose_depth)
    builder.add_node("vector_search", make_vector_search(store, lexical, settings))
    builder.add_node("assess_quality", make_assess_quality(gate))
    builder.add_node("fallback_search", make_fallback_search(store, lexical, settings))
    builder.add_node("critic_filter", make_critic_filter(settings))
    builder.add_edge(START, "choose_depth")
    builder.add_edge("choose_depth", "vector_search")
    builder.add_edge("vector_search", "assess_quality")
    builder.add_conditional_edges(
        "assess_quality",
        route_after_gate,
        {"widen": "fallback_search", "judge": "critic_filter"},
    )
    builder.add_edge("fallback_search", "critic_filter")
    builder.add_edge("critic_filter", END)
    return builder.compile(name="ragbrain")


def store_resolution(
    store: Store,
    critic: Critic | str | Path | None = None,
    critic_off_reason: str = "no critic configured",
    *,
    lexical: LexicalSearcher | None = None,
    offtopic: OffTopicCut | Literal["store"] | None = "store",
    handover: HandOverRule | Literal["shipped"] | None = "shipped",
) -> Resolution:
    """The store's settings for a graph over it (``ragbrain.settings.resolve``, with
    ``build_graph``'s arguments), held so that they follow the store (``Resolution``).

    Raises:
        WrongTypeError: ``critic`` of a kind it does not take.
        CriticLoadError: ``critic`` names a folder (or the shipped critic) that cannot load.
    """
    chosen, off_reason = graph_critic(critic, critic_off_reason)

    def resolver() -> StoreSettings:
        return resolve(
            store,
            chosen,
            critic_off_reason=off_reason,
            lexical=lexical,
            offtopic=offtopic,
            handover=handover,
        )

    resolution = Resolution(store, resolver)
    resolution.current()  # decided now: a broken shipped file or store says so here
    return resolution
