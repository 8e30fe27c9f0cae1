"""The pipeline's Mermaid drawing, generated from the compiled graph itself."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from ragbrain.graph import build_graph
from ragbrain.store import Store


class _Unscored:
    """A critic that is never called: the drawing needs the graph's shape with a critic (as
    the default retriever runs it), not a model."""

    threshold = 0.5

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        raise AssertionError("the drawing never runs the graph")


def mermaid() -> str:
    """Draw the graph with a critic; no store is opened (the factories only close over it).
    Without a critic the graph has no ``critic_filter`` node and the searches end the run."""
    graph = build_graph(cast("Store", None), _Unscored())
    return str(graph.get_graph().draw_mermaid()).strip()
