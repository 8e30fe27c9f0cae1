"""assess_quality: the CRAG gate, and the router that reads its decision."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext, context_of
from ragbrain.gates import run_gate
from ragbrain.nodes.fallback import can_widen
from ragbrain.state import RetrievalState, Verdict

if TYPE_CHECKING:
    from ragbrain.lexical.sync import LexicalSearcher
    from ragbrain.nodes import Node
    from ragbrain.store import Store


def make_assess_quality(store: Store, lexical: LexicalSearcher | None = None) -> Node:
    """Bind the store, whose calibration or model gives the gate when the context has none,
    and the lexical index (it decides whether a fallback has anything to add)."""

    def assess_quality(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        """Node: "poor" when there are no hits or the best distance is above the gate; a poor
        verdict sends the run to the fallback when that can widen the search."""
        context = context_of(runtime)
        threshold, origin = run_gate(store, context.gate_threshold)
        distances = [max(0.0, hit["distance"]) for hit in state["hits"]]
        best = min(distances) if distances else None
        verdict: Verdict = "poor" if best is None or best > threshold else "good"
        if best is None:
            note = f"verdict poor: no hits (gate {threshold:.3f}, {origin})"
        else:
            sign = ">" if verdict == "poor" else "<="
            note = f"verdict {verdict}: best distance {best:.3f} {sign} gate {threshold:.3f}"
            note += f" ({origin})"
        fallback = verdict == "poor" and can_widen(
            state.get("type_filter"), context.search_mode, lexical
        )
        if verdict == "poor" and not fallback:
            note += "; no fallback: the first search already covered every type"
            if lexical is not None:
                note += " and searched lexically"
        return {
            "gate": threshold,
            "best_distance": best,
            "verdict": verdict,
            "fallback": fallback,
            "notes": [note],
        }

    return assess_quality


def route_after_gate(state: RetrievalState) -> Literal["widen", "judge"]:
    """Router: to the fallback when the gate decided it runs, else straight to the critic."""
    return "widen" if state.get("fallback") else "judge"
