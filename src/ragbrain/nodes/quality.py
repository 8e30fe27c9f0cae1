"""assess_quality: the CRAG gate, and the router that reads its verdict."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext, context_of
from ragbrain.state import RetrievalState, Verdict


def assess_quality(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
    """Node: the verdict is "poor" when there are no hits or the best distance is above the gate."""
    threshold = context_of(runtime).gate_threshold
    distances = [max(0.0, hit["distance"]) for hit in state["hits"]]
    if not distances:
        return {"best_distance": None, "verdict": "poor", "notes": ["verdict poor: no hits"]}
    best = min(distances)
    if best > threshold:
        note = f"verdict poor: best distance {best:.3f} > gate {threshold:.3f}"
        return {"best_distance": best, "verdict": "poor", "notes": [note]}
    note = f"verdict good: best distance {best:.3f} <= gate {threshold:.3f}"
    return {"best_distance": best, "verdict": "good", "notes": [note]}


def route_by_verdict(state: RetrievalState) -> Verdict:
    """Router: the verdict names the branch (the graph maps "poor" to the fallback)."""
    return state["verdict"]
