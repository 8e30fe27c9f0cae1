"""assess_quality: the CRAG gate, and the router that reads its verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext, context_of
from ragbrain.gates import run_gate
from ragbrain.state import RetrievalState, Verdict

if TYPE_CHECKING:
    from ragbrain.nodes import Node
    from ragbrain.store import Store


def make_assess_quality(store: Store) -> Node:
    """Bind the store, whose calibration or model gives the gate when the context has none."""

    def assess_quality(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        """Node: "poor" when there are no hits or the best distance is above the gate."""
        threshold, origin = run_gate(store, context_of(runtime).gate_threshold)
        decided: dict[str, Any] = {"gate": threshold}
        distances = [max(0.0, hit["distance"]) for hit in state["hits"]]
        if not distances:
            note = f"verdict poor: no hits (gate {threshold:.3f}, {origin})"
            return {**decided, "best_distance": None, "verdict": "poor", "notes": [note]}
        best = min(distances)
        verdict: Verdict = "poor" if best > threshold else "good"
        sign = ">" if verdict == "poor" else "<="
        note = f"verdict {verdict}: best distance {best:.3f} {sign} gate {threshold:.3f} ({origin})"
        return {**decided, "best_distance": best, "verdict": verdict, "notes": [note]}

    return assess_quality


def route_by_verdict(state: RetrievalState) -> Verdict:
    """Router: the verdict names the branch (the graph maps "poor" to the fallback)."""
    return state["verdict"]
