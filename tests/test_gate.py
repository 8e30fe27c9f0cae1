"""assess_quality, its router, and the fallback's merge: pure functions, no I/O."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from ragbrain.context import RetrievalContext
from ragbrain.nodes.fallback import merge_hits
from ragbrain.nodes.quality import assess_quality, route_by_verdict
from ragbrain.state import Hit


def hit(id_: str, distance: float, from_fallback: bool = False) -> Hit:
    return Hit(id=id_, text=id_, metadata={}, distance=distance, from_fallback=from_fallback)


def gate(distances: list[float], threshold: float = 0.55) -> dict[str, Any]:
    runtime = SimpleNamespace(context=RetrievalContext(gate_threshold=threshold))
    state = {"hits": [hit(str(i), d) for i, d in enumerate(distances)]}
    return assess_quality(state, runtime)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("distances", "verdict", "best"),
    [
        ([0.2, 0.7], "good", 0.2),
        ([0.7, 0.56], "poor", 0.56),
        ([0.55], "good", 0.55),  # at the threshold is still good: "poor" means exceeds
        ([], "poor", None),
        ([-1e-7, 0.9], "good", 0.0),  # float error below zero is clamped
    ],
    ids=["good", "poor", "at-threshold", "no-hits", "negative-clamped"],
)
def test_verdict(distances: list[float], verdict: str, best: float | None) -> None:
    result = gate(distances)
    assert result["verdict"] == verdict
    assert result["best_distance"] == best
    assert result["notes"][0].startswith(f"verdict {verdict}")


def test_threshold_is_a_setting() -> None:
    assert gate([0.4], threshold=0.3)["verdict"] == "poor"
    assert gate([0.4], threshold=0.5)["verdict"] == "good"


def test_router_reads_the_verdict() -> None:
    assert route_by_verdict({"verdict": "poor"}) == "poor"  # type: ignore[typeddict-item]
    assert route_by_verdict({"verdict": "good"}) == "good"  # type: ignore[typeddict-item]


def test_merge_dedupes_sorts_and_limits() -> None:
    first = [hit("a", 0.6), hit("b", 0.7)]
    second = [hit("c", 0.3, True), hit("a", 0.6, True), hit("d", 0.9, True)]
    merged = merge_hits(first, second, limit=3)
    assert [h["id"] for h in merged] == ["c", "a", "b"]
    assert [h["from_fallback"] for h in merged] == [True, False, False]  # first copy of 'a' kept
