"""The CRAG gate (gate_verdict), its router, and the fallback's merge: pure functions, no I/O."""

from __future__ import annotations

from typing import Any

import pytest

from ragbrain.context import DEFAULT_GATE_THRESHOLD, RetrievalContext
from ragbrain.gates import SHIPPED_GATES
from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL
from ragbrain.nodes.fallback import merge_hits
from ragbrain.nodes.quality import GateSetting, gate_verdict, route_after_gate
from ragbrain.settings import store_gate
from ragbrain.state import Hit
from ragbrain.store import Store


def hit(id_: str, distance: float, from_fallback: bool = False) -> Hit:
    return Hit(id=id_, text=id_, metadata={}, distance=distance, from_fallback=from_fallback)


class GateStore:
    """Only what the gate reads of a store: its calibration and its embedding model."""

    def __init__(self, calibrated: float | None = None, model: str = "some-model") -> None:
        self.calibrated = calibrated
        self.model = model

    def gate_threshold(self) -> float | None:
        return self.calibrated


def gate(
    distances: list[float], threshold: float | None = 0.55, store: GateStore | None = None
) -> dict[str, Any]:
    hits = [hit(str(i), d) for i, d in enumerate(distances)]
    context = RetrievalContext(gate_threshold=threshold)
    setting = GateSetting(*store_gate(store or GateStore()))  # type: ignore[arg-type]
    return gate_verdict(hits, None, context, setting)


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
    assert result["note"].startswith(f"verdict {verdict}")


def test_threshold_is_a_setting() -> None:
    assert gate([0.4], threshold=0.3)["verdict"] == "poor"
    assert gate([0.4], threshold=0.5)["verdict"] == "good"


@pytest.mark.parametrize(
    ("store", "expected", "origin"),
    [
        (GateStore(calibrated=0.31), 0.31, "calibrated for this store"),
        (
            GateStore(calibrated=0.31, model=DEFAULT_EMBEDDING_MODEL),
            0.31,
            "calibrated for this store",
        ),
        (
            GateStore(model=DEFAULT_EMBEDDING_MODEL),
            SHIPPED_GATES[DEFAULT_EMBEDDING_MODEL].threshold,
            f"shipped for {DEFAULT_EMBEDDING_MODEL}",
        ),
        (GateStore(), DEFAULT_GATE_THRESHOLD, "default"),
    ],
    ids=["store-calibrated", "store-beats-shipped", "shipped-for-model", "unknown-model"],
)
def test_unset_gate_resolves_most_specific_first(
    store: GateStore, expected: float, origin: str
) -> None:
    assert store_gate(store) == (expected, origin)  # type: ignore[arg-type]
    result = gate([expected + 0.01], threshold=None, store=store)
    assert result["verdict"] == "poor" and result["gate"] == expected
    assert origin in result["note"]


def test_a_gate_in_the_context_wins_over_the_store() -> None:
    result = gate([0.4], threshold=0.5, store=GateStore(calibrated=0.1))
    assert result["verdict"] == "good" and result["gate"] == 0.5
    assert "set in the context" in result["note"]


def test_shipped_gate_is_a_distance_with_its_command() -> None:
    for model, shipped in SHIPPED_GATES.items():
        assert 0.0 < shipped.threshold < 2.0, model
        assert shipped.command.startswith("ragbrain calibrate "), model
        assert "--data " in shipped.command, model  # labelled data, named in the command
        if model != DEFAULT_EMBEDDING_MODEL:
            assert "--embedding " in shipped.command, model  # calibrate's default is MiniLM
    assert callable(Store.gate_threshold)  # the store method the resolution reads


def test_router_follows_the_gate_decision() -> None:
    assert route_after_gate({"verdict": "poor", "fallback": True}) == "widen"
    assert route_after_gate({"verdict": "poor", "fallback": False}) == "judge"
    assert route_after_gate({"verdict": "good", "fallback": False}) == "judge"


def test_merge_dedupes_sorts_and_limits() -> None:
    first = [hit("a", 0.6), hit("b", 0.7)]
    second = [hit("c", 0.3, True), hit("a", 0.6, True), hit("d", 0.9, True)]
    merged = merge_hits(first, second, limit=3)
    assert [h["id"] for h in merged] == ["c", "a", "b"]
    assert [h["from_fallback"] for h in merged] == [True, False, False]  # first copy of 'a' kept


@pytest.mark.parametrize(
    ("types", "mode", "lexical", "fallback"),
    [
        (["lesson"], "dense", False, True),  # a type filter to drop
        (["lesson"], "hybrid", True, True),
        (None, "dense", False, False),  # nothing to widen: straight to the critic
        (None, "hybrid", True, False),  # hybrid already searched every type lexically
        (None, "dense", True, True),  # a BM25 rescue the dense search lacked
    ],
)
def test_a_poor_verdict_takes_the_fallback_only_when_it_can_widen(
    types: list[str] | None, mode: str, lexical: bool, fallback: bool
) -> None:
    context = RetrievalContext(gate_threshold=0.3, search_mode=mode)  # type: ignore[arg-type]
    setting = GateSetting(*store_gate(GateStore()), lexical=lexical)  # type: ignore[arg-type]
    result = gate_verdict([hit("a", 0.9)], types, context, setting)
    assert result["verdict"] == "poor" and result["fallback"] is fallback
    assert ("no fallback" in result["note"]) is not fallback
    assert route_after_gate(result) == ("widen" if fallback else "judge")  # type: ignore[arg-type]


def test_e5_small_has_its_own_gate() -> None:
    from ragbrain.gates import model_gate
    from ragbrain.models.embeddings import E5_SMALL

    threshold, origin = model_gate(E5_SMALL)
    assert threshold < SHIPPED_GATES[DEFAULT_EMBEDDING_MODEL].threshold  # compressed distances
    assert origin == f"shipped for {E5_SMALL}"
