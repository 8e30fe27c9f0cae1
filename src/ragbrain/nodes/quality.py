"""assess_quality: the CRAG gate, and the router that reads its decision.

The gate is pure: it reads the hits and the run's context. What it needs from the store (the
threshold calibrated for it or shipped for its model, and whether a lexical index exists) is
the store's settings (``ragbrain.settings``), read as ``GateSetting``, not looked up per run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext, context_of
from ragbrain.nodes import Node
from ragbrain.nodes.fallback import can_widen
from ragbrain.state import RetrievalState, Verdict
from ragbrain.store.search import Hit


@dataclass(frozen=True)
class GateSetting:
    """What the gate knows of the store it judges, fixed when the graph is built.

    Attributes:
        threshold: The store's gate threshold when the context sets none
            (``StoreSettings.gate``).
        origin: Where that threshold comes from, for the trace.
        lexical: Whether the graph has a lexical index (a dense run can then be rescued by BM25).
    """

    threshold: float
    origin: str
    lexical: bool = False


def gate_verdict(
    hits: list[Hit], types: list[str] | None, context: RetrievalContext, setting: GateSetting
) -> dict[str, Any]:
    """The gate: "poor" when there are no hits or the best distance is above the threshold.

    The threshold is the context's, else the store's (``setting``). A poor verdict also
    decides whether a fallback can widen the search (``can_widen``).

    Returns:
        The state keys to write (``gate``, ``best_distance``, ``first_search_quality`` and
        its older name ``verdict``, ``fallback``) and ``note``, the trace line saying why.
    """
    if context.gate_threshold is not None:
        threshold, origin = context.gate_threshold, "set in the context"
    else:
        threshold, origin = setting.threshold, setting.origin
    distances = [max(0.0, hit["distance"]) for hit in hits]
    best = min(distances) if distances else None
    verdict: Verdict = "poor" if best is None or best > threshold else "good"
    if best is None:
        note = f"verdict poor: no hits (gate {threshold:.3f}, {origin})"
    else:
        sign = ">" if verdict == "poor" else "<="
        note = f"verdict {verdict}: best distance {best:.3f} {sign} gate {threshold:.3f}"
        note += f" ({origin})"
    lexical = object() if setting.lexical else None
    fallback = verdict == "poor" and can_widen(types, context.search_mode, lexical)
    if verdict == "poor" and not fallback:
        note += "; no fallback: the first search already covered every type"
        if setting.lexical:
            note += " and searched lexically"
    return {
        "gate": threshold,
        "best_distance": best,
        "verdict": verdict,
        "first_search_quality": verdict,
        "fallback": fallback,
        "note": note,
    }


def make_assess_quality(setting: Callable[[], GateSetting]) -> Node:
    """The ``assess_quality`` node reading the store's gate setting (``setting()``, as of the
    run: it follows the store's settings)."""

    def assess_quality(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        decided = gate_verdict(
            state["hits"], state.get("type_filter"), context_of(runtime), setting()
        )
        note = decided.pop("note")
        return {**decided, "notes": [note]}

    return assess_quality


def route_after_gate(state: Mapping[str, Any]) -> Literal["widen", "judge"]:
    """To the fallback when the gate decided one runs, else on to the critic."""
    return "widen" if state.get("fallback") else "judge"
