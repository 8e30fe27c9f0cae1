"""The pipeline's Mermaid drawing, generated from the compiled graph itself."""

from __future__ import annotations

from typing import cast

from ragbrain.graph import build_graph
from ragbrain.store import Store


def mermaid() -> str:
    """Draw the graph; no store is opened (the factories only close over it)."""
    return str(build_graph(cast("Store", None)).get_graph().draw_mermaid()).strip()
