"""Gathering changed paths into batches: one batch once they have been quiet for a while."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ragbrain.errors import InvalidInputError


class Debouncer:
    """Paths gathered until ``quiet`` seconds pass without a new one, or ``longest`` since
    the first; the clock is passed in, so tests need no sleeps."""

    def __init__(self, quiet: float, longest: float | None = None) -> None:
        if quiet < 0:
            raise InvalidInputError(f"debounce must be 0 seconds or more, got {quiet}.")
        self.quiet = quiet
        self.longest = longest if longest is not None else max(10 * quiet, 5.0)
        self._paths: dict[Path, None] = {}
        self._first = 0.0
        self._last = 0.0

    def add(self, paths: Iterable[Path], now: float) -> None:
        """Note changed paths seen at ``now``."""
        paths = list(paths)
        if not paths:
            return
        if not self._paths:
            self._first = now
        self._last = now
        self._paths.update(dict.fromkeys(paths))

    def wait(self, now: float) -> float | None:
        """Seconds until the batch is due (0: now); None when there is nothing to apply."""
        if not self._paths:
            return None
        due = min(self._last + self.quiet, self._first + self.longest)
        return max(0.0, due - now)

    def take(self, now: float) -> list[Path]:
        """The batch if it is due (and forget it), else nothing."""
        if self.wait(now) != 0.0:
            return []
        paths, self._paths = list(self._paths), {}
        return paths
