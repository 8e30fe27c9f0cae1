"""A doctor check's outcome."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One check's outcome: its name, whether it passed, what was found, and the fix.

    ``advice`` marks a finding that is not a fault: the store works as it is, and ``fix``
    would make it serve better (a file of links, notes the model does not read well).
    ``ragbrain doctor`` exits 0 when every finding passed or is advice, so it can serve as
    a health check.
    """

    check: str
    ok: bool
    message: str
    fix: str = ""
    advice: bool = False

    @property
    def fault(self) -> bool:
        """Whether the store has a problem (not merely advice)."""
        return not self.ok and not self.advice
