"""Matching requested note types against stored ones: case-insensitively, and naming the
closest known types when a requested one matches none.

Types are stored as written (``SQLite`` stays ``SQLite``); a filter for ``sqlite`` finds the
chunks of ``SQLite`` and ``Sqlite`` alike. These functions are pure: the callers (the store's
search, the retriever, the CLI, the MCP server) bring the list of stored types.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

#: At most this many close matches are named for an unknown type.
CLOSEST = 3
#: difflib's similarity cut-off for a close match (0-1).
CUTOFF = 0.6


def fold(type_: str) -> str:
    """The key types are compared by: case-folded, surrounding spaces removed."""
    return type_.strip().casefold()


def stored_spellings(requested: Iterable[str], known: Iterable[str]) -> list[str]:
    """The stored types each requested type matches case-insensitively, as stored.

    Args:
        requested: The types a filter asks for.
        known: Every type the store holds, as written.

    Returns:
        The stored spellings that match, in ``known``'s order, then each requested type that
        matches none as it was given (so that a filter for it still finds nothing, and a type
        written after ``known`` was read still matches when spelled exactly).
    """
    wanted = {fold(t): t for t in requested}
    matched = [t for t in known if fold(t) in wanted]
    found = {fold(t) for t in matched}
    return [*dict.fromkeys(matched), *(t for key, t in wanted.items() if key not in found)]


def unknown_types(requested: Sequence[str], known: Iterable[str]) -> list[tuple[str, list[str]]]:
    """The requested types that match no stored type, each with the closest stored ones.

    Args:
        requested: The types a filter asks for.
        known: Every type the store holds, as written.

    Returns:
        ``(requested type, closest stored types)`` pairs in the order requested; the closest
        (at most ``CLOSEST`` names by ``difflib``, best first, each in every stored spelling)
        may be empty.
    """
    by_fold: dict[str, list[str]] = {}
    for type_ in known:
        if type_ and type_ not in by_fold.get(fold(type_), []):
            by_fold.setdefault(fold(type_), []).append(type_)
    missing = []
    for type_ in dict.fromkeys(requested):
        if fold(type_) in by_fold:
            continue
        close = difflib.get_close_matches(fold(type_), list(by_fold), n=CLOSEST, cutoff=CUTOFF)
        missing.append((type_, [name for c in close for name in sorted(by_fold[c])]))
    return missing


def unknown_types_message(
    unknown: Sequence[tuple[str, Sequence[str]]], known: Iterable[str] | None = None
) -> str:
    """One line naming the unknown types and their closest known ones ("" when none); with
    ``known`` holding no type at all, it says which setting names the key that holds it."""
    parts = []
    for type_, close in unknown:
        hint = f"closest: {', '.join(close)}" if close else "no close match"
        parts.append(f"{type_!r} ({hint})")
    if not parts:
        return ""
    if known is not None and not any(t.strip() for t in known):
        return (
            f"no stored note type matches {'; '.join(parts)}: no chunk holds a note type; "
            "a wrapped vector store names the metadata key that holds it with "
            "from_vectorstore(..., type_key=...)"
        )
    return (
        f"no stored note type matches {'; '.join(parts)}; types match case-insensitively, "
        "`ragbrain types` lists them"
    )
