"""Search filters beside the soft type filter: hard note types, path prefixes, tags (any or
all) and a modification time range; one validated value, and the rule that says whether a
chunk's metadata matches.

Every filter is the caller's scope: they combine with AND, and the fallback search keeps them
(it widens the soft ``type_filter`` only). The rules, in one place:

- ``types``: note types every chunk must have (case-insensitively), in every step: LangChain's
  ``filter`` (``search_kwargs={"filter": {"kind": "module"}}``) arrives here.
- ``path``: folders or files relative to the ingested folder, as a result's ``source`` shows
  them (``bug``, ``projects/alpha``, ``bug/x.md``), or a dotted name's prefix. A prefix
  matches itself and what lies under it, component by component, the components split at
  ``/`` or ``.``: ``bug`` matches ``bug/x.md`` and ``bug.md``, not ``bugs/x.md``; ``shutil``
  matches ``shutil.copy`` and ``shutil/x.py``, not ``shutilx``. Case matters (as in file
  names). Absolute paths and ``..`` are refused. Several: any of them.
- ``tags``: matched case-insensitively, a leading ``#`` ignored; a tag matches itself and the
  nested tags under it (``project`` matches ``project/alpha``, as Obsidian's tag search does).
  Several: any of them, or all of them with ``all_tags``.
- ``after`` / ``before``: ISO dates or date-times; a chunk's time is its note's front-matter
  ``date:`` when it has one, else the file's modification time at ingest. ``after`` is
  inclusive, ``before`` exclusive (``after=2024-03-01, before=2024-04-01`` is March). A date
  or date-time without a zone is UTC. A chunk ingested before times were recorded has none
  and is left out by a date filter.

(A little longer than the package's ~300-line modules: the rules above and the one value that
checks and applies them stay together, so that they cannot drift apart.)
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ragbrain.errors import InvalidInputError
from ragbrain.query.typematch import fold

#: The metadata key of a chunk's time: seconds since the epoch (UTC), an int.
MODIFIED_KEY = "modified"
#: The names a caller uses, in Python (a dict), on the command line and over MCP.
FIELDS = ("types", "path", "tags", "all_tags", "after", "before")
#: At most this many path prefixes or tags in one filter.
MAX_ITEMS = 50
MAX_ITEM_CHARS = 500
_DATE_HELP = "an ISO date or date-time such as 2024-03-01 or 2024-03-01T09:30:00+02:00"


def fold_tag(tag: str) -> str:
    """The key tags are compared by: without a leading ``#`` and spaces, case-folded."""
    return tag.strip().lstrip("#").strip().casefold()


def stored_tags(value: object) -> list[str]:
    """The folded tags of a chunk's ``tags`` metadata (ingest stores them comma-joined)."""
    if not isinstance(value, str) or not value:
        return []
    return [t for t in (fold_tag(part) for part in value.split(",")) if t]


def under(name: str, prefix: str) -> bool:
    """Whether ``name`` is ``prefix`` or lies under it (``/``-separated components)."""
    return name == prefix or name.startswith(prefix + "/")


def path_under(name: str, prefix: str) -> bool:
    """Whether the source ``name`` is ``prefix`` or lies under it, a component further split
    at ``/`` or ``.`` (``shutil`` holds ``shutil/x.py`` and ``shutil.copy``, not ``shutilx``)."""
    return name == prefix or name.startswith((prefix + "/", prefix + "."))


def to_timestamp(value: Any, field: str) -> float:
    """Seconds since the epoch of an ISO string, a ``date`` or a ``datetime``; no zone is UTC.

    Raises:
        InvalidInputError: Anything else, naming ``field``.
    """
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise InvalidInputError(f"{field} must be {_DATE_HELP}.") from None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return float(value.timestamp())
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).timestamp()
    raise InvalidInputError(f"{field} must be {_DATE_HELP}, not {type(value).__name__}.")


def iso(timestamp: float) -> str:
    """A timestamp as an ISO date-time in UTC (``2024-03-01T00:00:00Z``)."""
    moment = dt.datetime.fromtimestamp(timestamp, tz=dt.UTC)
    return moment.isoformat().replace("+00:00", "Z")


def time_label(value: object) -> str | None:
    """A chunk's ``modified`` metadata as ISO UTC for people and clients; None if it has none."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    try:
        return iso(float(value))
    except (OverflowError, OSError, ValueError):
        return None


def _items(value: Any, field: str) -> list[str]:
    """A non-empty list of non-blank strings from one string or a sequence of them."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence) or isinstance(value, bytes):
        raise InvalidInputError(f"{field} must be a string or a list of strings.")
    if not value:
        raise InvalidInputError(f"{field} is an empty list; omit it, or give at least one.")
    if len(value) > MAX_ITEMS:
        raise InvalidInputError(f"{field} holds {len(value)} items; the limit is {MAX_ITEMS}.")
    for position, item in enumerate(value):
        if not isinstance(item, str):
            raise InvalidInputError(f"{field}[{position}] must be a string.")
        if not item.strip():
            raise InvalidInputError(f"{field}[{position}] is blank.")
        if len(item) > MAX_ITEM_CHARS:
            raise InvalidInputError(f"{field}[{position}] is over {MAX_ITEM_CHARS} characters.")
    return list(value)


def _path(raw: str, field: str) -> str:
    """A path prefix as sources are written: relative, ``/``-separated, no ``..``."""
    text = raw.strip()
    if text.startswith(("/", "~", "\\")) or (len(text) > 1 and text[1] == ":"):
        raise InvalidInputError(
            f"{field} must be relative to the ingested folder, as a result's `source` shows "
            "it (e.g. 'bug' or 'projects/alpha'), not an absolute path."
        )
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise InvalidInputError(f"{field} must not hold '..'.")
    if not parts:
        raise InvalidInputError(f"{field} names no folder; omit it to search every folder.")
    return "/".join(parts)


def _tag(raw: str, field: str) -> str:
    tag = fold_tag(raw)
    if not tag:
        raise InvalidInputError(f"{field} is only '#'.")
    if "," in tag:
        raise InvalidInputError(f"{field} holds a comma; give each tag as its own item.")
    return tag.rstrip("/")


@dataclass(frozen=True)
class Filters:
    """Note types, path prefixes, tags and a time range that every returned chunk must satisfy
    (AND).

    Build one with ``Filters.parse`` (or the constructor's checks): paths are normalized
    (``bug/`` is ``bug``), tags folded, times in seconds since the epoch (UTC).
    """

    paths: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    all_tags: bool = False
    after: float | None = None
    before: float | None = None
    types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Refuse contradictions: ``all_tags`` without tags, an empty time range."""
        if any(t != fold(t) or not t for t in self.types):
            raise InvalidInputError("types must be folded note types: use Filters.parse.")
        if self.all_tags and not self.tags:
            raise InvalidInputError("all_tags needs tags to match.")
        for name, value in (("after", self.after), ("before", self.before)):
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise InvalidInputError(f"{name} must be a finite timestamp.")
        if self.after is not None and self.before is not None and self.after >= self.before:
            raise InvalidInputError(
                f"after ({iso(self.after)}) must be earlier than before ({iso(self.before)}): "
                "the range holds no time."
            )

    @classmethod
    def parse(cls, value: Filters | Mapping[str, Any] | None) -> Filters | None:
        """A checked ``Filters`` from a mapping of ``FIELDS`` (or None when nothing filters).

        Args:
            value: ``{"types": str | list, "path": str | list, "tags": str | list,
                "all_tags": bool, "after": str | date | datetime, "before": ...}`` (any
                subset; None values are left out), a ``Filters``, or None.

        Raises:
            InvalidInputError: An unknown field, a wrong type, an empty list, a blank item, an
                absolute path or one with ``..``, a date that is not ISO, ``all_tags``
                without tags, or ``after`` not before ``before``; the message names the field.
        """
        if value is None:
            return None
        if isinstance(value, Filters):
            return value if value else None
        if not isinstance(value, Mapping):
            raise InvalidInputError(
                f"filters must be a mapping of {list(FIELDS)}, got {type(value).__name__}."
            )
        unknown = sorted(str(key) for key in value if key not in FIELDS)
        if unknown:
            raise InvalidInputError(f"Unknown filter field(s) {unknown}; allowed: {list(FIELDS)}.")
        given = {key: v for key, v in value.items() if v is not None}
        paths = (
            [
                _path(p, f"path[{i}]" if not isinstance(given["path"], str) else "path")
                for i, p in enumerate(_items(given["path"], "path"))
            ]
            if "path" in given
            else []
        )
        tags = (
            [
                _tag(t, f"tags[{i}]" if not isinstance(given["tags"], str) else "tags")
                for i, t in enumerate(_items(given["tags"], "tags"))
            ]
            if "tags" in given
            else []
        )
        types = [fold(t) for t in _items(given["types"], "types")] if "types" in given else []
        all_tags = given.get("all_tags", False)
        if not isinstance(all_tags, bool):
            raise InvalidInputError("all_tags must be true or false.")
        after = to_timestamp(given["after"], "after") if "after" in given else None
        before = to_timestamp(given["before"], "before") if "before" in given else None
        found = cls(
            paths=tuple(dict.fromkeys(paths)),
            tags=tuple(dict.fromkeys(tags)),
            types=tuple(dict.fromkeys(types)),
            all_tags=all_tags,
            after=after,
            before=before,
        )
        return found if found else None

    def __bool__(self) -> bool:
        """Whether anything is filtered."""
        return bool(
            self.types
            or self.paths
            or self.tags
            or self.after is not None
            or self.before is not None
        )

    def with_types(self, types: Iterable[str]) -> Filters:
        """These filters narrowed to ``types`` as well (a hard ``filter`` kept under a call's
        own ``filters``): with types of their own, the types in both.

        Raises:
            InvalidInputError: The two share no type (nothing could pass).
        """
        wanted = tuple(dict.fromkeys(fold(t) for t in types if t.strip()))
        if not wanted:
            return self
        if self.types:
            both = tuple(t for t in self.types if t in wanted)
            if not both:
                raise InvalidInputError(
                    f"filters types {list(self.types)} share no type with the retriever's "
                    f"filter {list(wanted)}: nothing could pass both."
                )
            wanted = both
        return replace(self, types=wanted)

    def spec(self) -> dict[str, Any]:
        """The filters as JSON values (``parse`` reads them back): what the graph state holds."""
        spec: dict[str, Any] = {}
        if self.types:
            spec["types"] = list(self.types)
        if self.paths:
            spec["path"] = list(self.paths)
        if self.tags:
            spec["tags"] = list(self.tags)
            spec["all_tags"] = self.all_tags
        if self.after is not None:
            spec["after"] = iso(self.after)
        if self.before is not None:
            spec["before"] = iso(self.before)
        return spec

    def describe(self) -> str:
        """One phrase for the trace: ``path under 'bug'; tags any of 'db'; modified ...``."""
        parts = []
        if self.types:
            parts.append("type " + " or ".join(repr(t) for t in self.types) + " (hard)")
        if self.paths:
            parts.append("path under " + " or ".join(repr(p) for p in self.paths))
        if self.tags:
            how = "all" if self.all_tags else "any"
            parts.append(f"tags {how} of " + ", ".join(repr(t) for t in self.tags))
        if self.after is not None and self.before is not None:
            parts.append(f"modified from {iso(self.after)} to before {iso(self.before)}")
        elif self.after is not None:
            parts.append(f"modified on or after {iso(self.after)}")
        elif self.before is not None:
            parts.append(f"modified before {iso(self.before)}")
        return "; ".join(parts)

    @property
    def dated(self) -> bool:
        """Whether a time range is set (chunks without a recorded time then never match)."""
        return self.after is not None or self.before is not None

    def time_ok(self, modified: object) -> bool:
        """Whether a chunk's ``modified`` value lies in the range (True when none is set)."""
        if not self.dated:
            return True
        if isinstance(modified, bool) or not isinstance(modified, int | float):
            return False
        if self.after is not None and modified < self.after:
            return False
        return self.before is None or modified < self.before

    def tags_ok(self, tags: Iterable[str]) -> bool:
        """Whether folded stored ``tags`` satisfy the tag filter (True when none is set)."""
        if not self.tags:
            return True
        have = list(tags)
        hits = [any(under(t, wanted) for t in have) for wanted in self.tags]
        return all(hits) if self.all_tags else any(hits)

    def matches(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a chunk with this metadata (``type``, ``source``, ``tags``, ``modified``)
        passes."""
        if self.types and fold(str(metadata.get("type", ""))) not in self.types:
            return False
        if self.paths:
            source = metadata.get("source")
            if not isinstance(source, str) or not any(path_under(source, p) for p in self.paths):
                return False
        return self.tags_ok(stored_tags(metadata.get("tags"))) and self.time_ok(
            metadata.get(MODIFIED_KEY)
        )

    def chroma_where(self) -> dict[str, Any] | None:
        """The part of the filters Chroma's ``where`` can say (the time range), or None; the
        paths and tags are matched in memory (``matches``)."""
        clauses: list[dict[str, Any]] = []
        if self.after is not None:
            clauses.append({MODIFIED_KEY: {"$gte": self.after}})
        if self.before is not None:
            clauses.append({MODIFIED_KEY: {"$lt": self.before}})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}
