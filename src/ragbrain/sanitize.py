"""Making stored text safe to show: control characters removed, length capped."""

from __future__ import annotations

import re

# C0/C1 control characters except tab and newline, and the bidirectional overrides and
# isolates that can make text read differently from what it holds.
UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean_text(text: str, limit: int) -> tuple[str, bool]:
    """Strip control characters (tab and newline stay) and cap the length.

    Returns:
        The cleaned text and whether it was cut.
    """
    cleaned = UNSAFE.sub("", text)
    return cleaned[:limit], len(cleaned) > limit
