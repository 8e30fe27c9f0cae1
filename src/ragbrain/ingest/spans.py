"""Where each chunk lies in its file: 1-based, inclusive line spans and offsets in the body."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A chunk's place: its first and last line in the file, and its offset in the body."""

    start_line: int
    end_line: int
    start_index: int


def line_spans(body: str, pieces: Sequence[str], first_line: int) -> list[Span]:
    """Locate each piece of ``body`` (in order, as a splitter returned them) in the file.

    A splitter returns substrings of the body with surrounding whitespace stripped, in
    order, each starting after the one before (they may overlap); so each piece is searched
    from just after the previous piece's start. Lines are counted on ``\\n``.

    Args:
        body: The text the pieces were cut from.
        pieces: The chunks' texts, in order.
        first_line: The file's line number (1-based) of the body's first character.

    Returns:
        One span per piece.

    Raises:
        ValueError: A piece is not found in the body (it was not cut from it).
    """
    spans: list[Span] = []
    position = 0
    for piece in pieces:
        start = body.find(piece, position)
        if start < 0:
            raise ValueError(f"chunk {len(spans)} is not a part of its note's text")
        start_line = first_line + body.count("\n", 0, start)
        spans.append(Span(start_line, start_line + piece.count("\n"), start))
        position = start + 1
    return spans
