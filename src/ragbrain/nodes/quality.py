"""The CRAG gate (the last step of ``vector_search``), and the router that reads its decision.

Like adaptive depth, the gate is a pure function of what the node already holds (the hits and
the threshold): a node of its own would cost a LangGraph superstep (~0.6 ms here, measured
with `benchmarks.latency`), more than the decision itself. Its verdict, threshold and note
are written to the state and the trace all the same, and the branch it takes (the graph's one
branch, ``route_after_gate``) is drawn in Studio and in `ragbrain graph`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from ragbrain.gates import run_gate
from ragbrain.nodes.fallback import can_widen
from ragbrain.state import Hit, Verdict

if TYPE_CHECKING:
    from ragbrain.context import RetrievalContext
    from ragbrain.lexical.sync import LexicalSearcher
    from ragbrain.store import Store


def assess_quality(
    hits: list[Hit],
    types: list[str] | None,
    context: RetrievalContext,
    store: Store,
    lexical: LexicalSearcher | None = None,
) -> dict[str, Any]:
    """The gate: "poor" when there are no hits or the best distance is above the threshold.

    The threshold is the context's, else the store's (see ``ragbrain.gates``). A poor verdict
    also decides whether a fallback can widen the search (``can_widen``).

    Returns:
        The state keys to write (``gate``, ``best_distance``, ``verdict``, ``fallback``) and
        ``note``, the trace line saying why.
    """
    threshold, origin = run_gate(store, context.gate_threshold)
    distances = [max(0.0, hit["distance"]) for hit in hits]
    best = min(distances) if distances else None
    verdict: Verdict = "poor" if best is None or best > threshold else "good"
    if best is None:
        note = f"verdict poor: no hits (gate {threshold:.3f}, {origin})"
    else:
        sign = ">" if verdict == "poor" else "<="
        note = f"verdict {verdict}: best distance {best:.3f} {sign} gate {threshold:.3f}"
        note += f" ({origin})"
    fallback = verdict == "poor" and can_widen(types, context.search_mode, lexical)
    if verdict == "poor" and not fallback:
        note += "; no fallback: the first search already covered every type"
        if lexical is not None:
            note += " and searched lexically"
    return {
        "gate": threshold,
        "best_distance": best,
        "verdict": verdict,
        "fallback": fallback,
        "note": note,
    }


def route_after_gate(gate: Mapping[str, Any]) -> Literal["widen", "judge"]:
    """The branch after the gate (``gate``: what ``assess_quality`` decided): to the fallback
    when it decided one runs, else on to the critic (or, with no critic, to the end)."""
    return "widen" if gate.get("fallback") else "judge"
