"""What a search of the store hands back: one ``Hit`` per chunk found."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict


class Hit(TypedDict):
    """One chunk found by a search, before it becomes a returned ``Document``."""

    id: str
    text: str
    metadata: dict[str, Any]
    distance: float
    from_fallback: bool
    # A compound question's hit: its cosine distance to each part (``ragbrain.nodes.parts``).
    part_distances: NotRequired[list[float]]
