"""Every chunk's source, tags and time as arrays, so a filter becomes a boolean mask at once.

An index of the whole store (the lexical index) keeps these columns beside its ids; a mask over
its positions answers "which chunks does this filter leave?" in well under a millisecond at
100k chunks: a path prefix is a range of the sorted source names, a tag a range of the sorted
tag names, a time range one comparison.
"""

from __future__ import annotations

import bisect
import difflib
import math
from collections.abc import Sequence
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from ragbrain.query.filters import Filters, path_under, stored_tags, under

#: At most this many close matches are named for a path or tag that matches nothing.
CLOSEST = 3

BoolArray = npt.NDArray[np.bool_]


def _under_codes(
    names: Sequence[str], prefix: str, dotted: bool = False
) -> tuple[int | None, int, int]:
    """The code of ``prefix`` itself (None if absent) and the code range [lo, hi) of the names
    under it, in the sorted ``names``: ``prefix + "/"`` up to ``prefix + "0"`` ('0' follows
    '/'); ``dotted`` from ``prefix + "."`` ('.' precedes '/'), for sources split at dots too."""
    at = bisect.bisect_left(names, prefix)
    exact = at if at < len(names) and names[at] == prefix else None
    lo = bisect.bisect_left(names, prefix + ("." if dotted else "/"))
    hi = bisect.bisect_left(names, prefix + "0")
    return exact, lo, hi


class Facets:
    """The source, tags and time of each chunk of an index, position by position."""

    def __init__(
        self, sources: Sequence[str], tags: Sequence[str], modified: Sequence[float]
    ) -> None:
        """Args:
        sources: Each chunk's ``source``.
        tags: Each chunk's ``tags`` metadata as stored (comma-joined).
        modified: Each chunk's time in seconds since the epoch; NaN where none was recorded.
        """
        self.size = len(sources)
        self.names = sorted(set(sources))
        code = {name: i for i, name in enumerate(self.names)}
        self.source_codes = np.fromiter((code[s] for s in sources), np.int32, self.size)
        folded = [stored_tags(t) for t in tags]
        self.tag_names = sorted({t for chunk in folded for t in chunk})
        tag_code = {name: i for i, name in enumerate(self.tag_names)}
        self.tag_flat = np.array([tag_code[t] for chunk in folded for t in chunk], np.int32)
        self.tag_owner = np.repeat(
            np.arange(self.size, dtype=np.int32), [len(chunk) for chunk in folded]
        )
        self.modified = np.asarray(modified, dtype=np.float64).reshape(self.size)

    def _codes_mask(
        self,
        codes: npt.NDArray[np.int32],
        names: Sequence[str],
        prefix: str,
        dotted: bool = False,
    ) -> Any:
        exact, lo, hi = _under_codes(names, prefix, dotted)
        hit = (codes >= lo) & (codes < hi)
        return hit | (codes == exact) if exact is not None else hit

    def mask(self, filters: Filters) -> BoolArray:
        """The chunks that pass ``filters`` (True where they do)."""
        keep = np.ones(self.size, dtype=bool)
        if filters.paths:
            inside = np.zeros(self.size, dtype=bool)
            for prefix in filters.paths:
                inside |= self._codes_mask(self.source_codes, self.names, prefix, dotted=True)
            keep &= inside
        if filters.tags:
            found = np.zeros(self.size, dtype=np.int32)
            for tag in filters.tags:
                entries = self._codes_mask(self.tag_flat, self.tag_names, tag)
                # A chunk counts once per wanted tag, however many of its tags sit under it.
                found += np.bincount(self.tag_owner[entries], minlength=self.size) > 0
            keep &= found == len(filters.tags) if filters.all_tags else found > 0
        if filters.dated:
            with np.errstate(invalid="ignore"):
                if filters.after is not None:
                    keep &= self.modified >= filters.after
                if filters.before is not None:
                    keep &= self.modified < filters.before
        return keep

    def missing_times(self) -> int:
        """How many chunks have no recorded time (ingested before times were recorded)."""
        return int(np.isnan(self.modified).sum())

    @cached_property
    def folders(self) -> list[str]:
        """Every folder that holds a source, and every source, sorted."""
        found = set(self.names)
        for name in self.names:
            # Every prefix that ends before a '/' or a '.' (a folder, a dotted name's parent).
            found.update(name[:at] for at, char in enumerate(name) if char in "/." and at)
        return sorted(found)

    def unmatched(self, filters: Filters) -> list[str]:
        """One phrase per path prefix or tag that matches no chunk at all, with the closest
        stored folders or tags (``difflib``), so an empty result says why."""
        said = []
        for prefix in filters.paths:
            if not any(path_under(name, prefix) for name in self._near(self.names, prefix)):
                close = difflib.get_close_matches(prefix, self.folders, n=CLOSEST, cutoff=0.6)
                said.append(f"no stored source lies under {prefix!r}{_closest(close)}")
        for tag in filters.tags:
            if not any(under(name, tag) for name in self._near(self.tag_names, tag)):
                close = difflib.get_close_matches(tag, self.tag_names, n=CLOSEST, cutoff=0.6)
                said.append(f"no stored tag matches {tag!r}{_closest(close)}")
        return said

    @staticmethod
    def _near(names: Sequence[str], prefix: str) -> Sequence[str]:
        """The names that could lie under ``prefix``: it and those after it up to ``prefix0``."""
        return names[bisect.bisect_left(names, prefix) : bisect.bisect_left(names, prefix + "0")]


def _closest(close: Sequence[str]) -> str:
    return f" (closest: {', '.join(repr(c) for c in close)})" if close else " (no close match)"


def time_of(value: object) -> float:
    """A ``modified`` metadata value as a float; NaN when it is missing or not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)
