"""The pipeline's Mermaid drawing, generated from the compiled graph itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from ragbrain.graph import Graph, build_graph
from ragbrain.store import Store
from ragbrain.store.ledger import Ledger


class _Unscored:
    """A critic that is never called: the drawing needs the graph's shape, not a model."""

    threshold = 0.5

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        raise AssertionError("the drawing never runs the graph")


class _Unopened:
    """A store that is never searched: the graph reads only what its settings need when
    built (its model, size, gate calibration and generation)."""

    embeddings = None
    model = "none"

    def gate_threshold(self) -> float | None:
        return None

    def count(self) -> int:
        return 0

    def ledger(self) -> Ledger:
        return Ledger()

    def follow(self) -> None:
        return None


def drawing_graph() -> Graph:
    """The graph compiled over nothing, for its drawing and its schemas (no store is opened:
    the factories only close over it)."""
    return build_graph(cast("Store", _Unopened()), _Unscored(), offtopic=None)


def mermaid() -> str:
    """The graph's Mermaid drawing (the same five steps with or without a critic)."""
    return str(drawing_graph().get_graph().draw_mermaid()).strip()
