"""A doctor check's outcome."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One check's outcome: its name, whether it passed, what was found, and the fix."""

    check: str
    ok: bool
    message: str
    fix: str = ""
