"""Reading a store without searching it (no model loaded): a note back from its chunks,
every chunk's metadata, the note types with their counts.

Reading a note back from the store's own text: whole, a line range, or a chunk and its
neighbours; capped, with the range to ask for next.

Reading a store's chunk metadata without loading its embedding model (``ragbrain types``,
``ingest --re-embed``'s check of the notes folder).

Listing a store's note types with their chunk and file counts, without loading a model.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain._util import UNSAFE
from ragbrain.errors import InvalidInputError, StoreNotFoundError
from ragbrain.query.typematch import fold
from ragbrain.store.connect import StorePolicy, call, connect
from ragbrain.store.ledger import COLLECTION, PAGE

if TYPE_CHECKING:
    from ragbrain.store import Store


# --- a note read back ---

MAX_READ_CHARS = 12_000
MAX_NEIGHBOURS = 10
MAX_SOURCE_CHARS = 1000
_DRIVE = re.compile(r"^[A-Za-z]:")
_TARGET = re.compile(r"^(?P<source>.+):(?P<start>\d{1,9})(?:(?P<dash>-)(?P<end>\d{1,9})?)?$")


@dataclass(frozen=True)
class Excerpt:
    """A part of one note as the store holds it. Lines are the file's (1-based, inclusive).

    ``next_lines`` is the range to ask for to read on when the cap cut the text, else None.
    ``start_line`` etc. are None for a note ingested before line spans were recorded.
    """

    source: str
    title: str
    type: str
    text: str
    start_line: int | None
    end_line: int | None
    first_line: int | None
    last_line: int | None
    chunks: tuple[int, ...]
    truncated: bool
    next_lines: tuple[int, int] | None


def check_source(source: str) -> str:
    """A ``source`` as search returns it: a relative path with forward slashes.

    Raises:
        InvalidInputError: Empty, too long, absolute, with ``..``, backslashes or control
            characters.
    """
    if not source or not source.strip():
        raise InvalidInputError("source is empty; pass a `source` as search returns it.")
    if len(source) > MAX_SOURCE_CHARS:
        raise InvalidInputError(f"source is longer than {MAX_SOURCE_CHARS} characters.")
    if UNSAFE.search(source):
        raise InvalidInputError("source holds control characters.")
    if source.startswith(("/", "\\", "~")) or _DRIVE.match(source):
        raise InvalidInputError(
            "source must be relative to its ingested folder, as search returns it "
            "(for example 'bug/backup.md'), not an absolute path."
        )
    if "\\" in source or ".." in source.split("/"):
        raise InvalidInputError("source must not hold '..' or backslashes.")
    return source


def parse_target(target: str) -> tuple[str, tuple[int, int] | None]:
    """``SOURCE[:LINES]`` -> the source and the line range (``12-30``, ``12``, ``12-``).

    Raises:
        InvalidInputError: A bad source (see ``check_source``).
    """
    match = _TARGET.match(target)
    if match is None:
        return check_source(target), None
    start = int(match["start"])
    end = start if match["dash"] is None else int(match["end"] or 10_000_000)
    return check_source(match["source"]), (start, end)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _rebuild(chunks: list[tuple[str, dict[str, Any]]]) -> tuple[str, int] | None:
    """The note's body and the file line it starts on, from its chunks' texts and places.

    Overlapping chunks agree on what they share; the whitespace the splitter stripped
    between two chunks comes back as the right number of line breaks (then spaces).
    None when a chunk lacks its place (ingested before spans were recorded).
    """
    places = [(_int(m.get("start_index")), _int(m.get("start_line"))) for _, m in chunks]
    if any(index is None or line is None for index, line in places):
        return None
    first_index, first_line = places[0]
    assert first_index is not None and first_line is not None
    body = ""
    for (text, _), (index, line) in zip(chunks, places, strict=True):
        assert index is not None and line is not None
        offset = index - first_index
        if offset > len(body):
            breaks = max(0, line - (first_line + body.count("\n")))
            body += "\n" * breaks + " " * max(0, offset - len(body) - breaks)
        if offset + len(text) >= len(body):
            body = body[:offset] + text
    return body, first_line


def _lines_wanted(
    lines: tuple[int, int] | None,
    chunk: int | None,
    neighbours: int,
    chunks: list[tuple[str, dict[str, Any]]],
    first: int,
    last: int,
    source: str,
) -> tuple[int, int]:
    if chunk is not None:
        low, high = max(0, chunk - neighbours), min(len(chunks) - 1, chunk + neighbours)
        start = _int(chunks[low][1].get("start_line")) or first
        end = _int(chunks[high][1].get("end_line")) or last
        return start, end
    if lines is None:
        return first, last
    start, end = lines
    if start < 1 or end < 1:
        raise InvalidInputError(f"lines {start}-{end}: line numbers start at 1.")
    if start > end:
        raise InvalidInputError(f"lines {start}-{end} are reversed; ask for {end}-{start}.")
    if start > last:
        raise InvalidInputError(
            f"lines {start}-{end} are past the end of {source}, which has lines {first}-{last}."
        )
    if end < first:
        raise InvalidInputError(
            f"lines {start}-{end} are {source}'s front matter, which is not stored; its text "
            f"is lines {first}-{last}."
        )
    return max(start, first), min(end, last)


def read_source(
    store: Store,
    source: str,
    *,
    lines: tuple[int, int] | None = None,
    chunk: int | None = None,
    neighbours: int = 0,
    max_chars: int = MAX_READ_CHARS,
) -> Excerpt:
    """Read a note back from the store: the whole note, a line range, or one chunk with
    ``neighbours`` chunks on each side (as whole lines). Works for a server store and when
    the file has moved or changed since it was ingested: only the store's text is read.

    The text is cleaned of control characters and cut at a line end before ``max_chars``
    (a single longer line is cut inside); ``next_lines`` then says where to read on.

    Args:
        store: The opened store.
        source: The note's path as search returns it (relative, forward slashes).
        lines: ``(start, end)``, 1-based and inclusive, in the file; an end past the note's
            last line is read to the end; the front matter is not stored.
        chunk: A chunk number (0 = first) instead of ``lines``.
        neighbours: With ``chunk``: how many chunks before and after to add (0-10).
        max_chars: The cap on the returned text.

    Returns:
        The excerpt, with its line span and what was cut.

    Raises:
        InvalidInputError: A bad ``source`` (absolute, ``..``), one no note in the store has,
            ``lines`` and ``chunk`` together, a reversed or out-of-range range, a chunk
            number the note does not have, ``neighbours`` out of 0-10.
    """
    check_source(source)
    if lines is not None and chunk is not None:
        raise InvalidInputError("pass either lines or chunk, not both.")
    if not 0 <= neighbours <= MAX_NEIGHBOURS:
        raise InvalidInputError(f"neighbours must be in 0..{MAX_NEIGHBOURS}, got {neighbours}.")
    if neighbours and chunk is None:
        raise InvalidInputError("neighbours needs a chunk number.")
    found = store.chunks_of(source)
    if not found:
        raise InvalidInputError(
            f"unknown source {source!r}: no note in this store has it; pass a `source` as "
            "search returns it."
        )
    roots = {str(m.get("root", "")) for _, m in found}
    if len(roots) > 1:
        raise InvalidInputError(
            f"source {source!r} was ingested from {len(roots)} different folders; read it "
            "from a store that holds one of them."
        )
    found.sort(key=lambda item: _int(item[1].get("chunk")) or 0)
    if chunk is not None and not 0 <= chunk < len(found):
        raise InvalidInputError(
            f"{source} has chunks 0-{len(found) - 1}; there is no chunk {chunk}."
        )
    meta = found[0][1]
    title, type_ = str(meta.get("title", "")), str(meta.get("type", ""))
    rebuilt = _rebuild(found)
    if rebuilt is None:  # no spans: whole chunks, without line numbers
        if lines is not None:
            raise InvalidInputError(
                f"{source} was ingested before line spans were recorded; ingest it again "
                "to read it by lines (or ask for a chunk)."
            )
        picked = (
            found if chunk is None else found[max(0, chunk - neighbours) : chunk + neighbours + 1]
        )
        text = UNSAFE.sub("", "\n\n".join(t for t, _ in picked))
        numbers = tuple(_int(m.get("chunk")) or 0 for _, m in picked)
        return Excerpt(
            source=source,
            title=title,
            type=type_,
            text=text[:max_chars],
            start_line=None,
            end_line=None,
            first_line=None,
            last_line=None,
            chunks=numbers,
            truncated=len(text) > max_chars,
            next_lines=None,
        )
    body, first = rebuilt
    all_lines = UNSAFE.sub("", body).split("\n")
    last = first + len(all_lines) - 1
    start, end = _lines_wanted(lines, chunk, neighbours, found, first, last, source)
    kept: list[str] = []
    size = 0
    for number in range(start, end + 1):
        line = all_lines[number - first]
        if kept and size + len(line) + 1 > max_chars:
            break
        kept.append(line[: max_chars - size] if not kept else line)
        size += len(kept[-1]) + 1
    shown_end = start + len(kept) - 1
    cut_line = len(all_lines[start - first]) > max_chars
    truncated = shown_end < end or cut_line
    next_lines = (shown_end + 1, end) if shown_end < end else None
    numbers = tuple(
        _int(m.get("chunk")) or 0
        for _, m in found
        if (_int(m.get("start_line")) or 0) <= shown_end and (_int(m.get("end_line")) or 0) >= start
    )
    return Excerpt(
        source=source,
        title=title,
        type=type_,
        text="\n".join(kept),
        start_line=start,
        end_line=shown_end,
        first_line=first,
        last_line=last,
        chunks=numbers,
        truncated=truncated,
        next_lines=next_lines,
    )


# --- every chunk's metadata ---


def stored_metadata(
    path: str | Path | None, server: str | None, policy: StorePolicy, *, missing: str
) -> list[Mapping[str, Any]]:
    """Every chunk's metadata of the store in ``path`` (or on ``server``), page by page.

    Args:
        path: The store folder (None with ``server``).
        server: A Chroma server's URL.
        policy: Deadlines and retries of the store calls.
        missing: What to tell the user when there is no ragbrain collection there.

    Raises:
        StoreNotFoundError: No store there (the message ends with ``missing``).
        StoreUnavailableError: The server could not be reached within the deadline.
    """
    client, where, _ = connect(path, server, policy, create=False)
    try:
        collection = call(
            policy,
            f"Opening the collection at {where}",
            lambda: client.get_collection(COLLECTION, embedding_function=None),
        )
    except StoreNotFoundError:
        raise StoreNotFoundError(f"{where} holds no ragbrain collection. {missing}") from None
    metadatas: list[Mapping[str, Any]] = []
    for offset in range(0, 1 << 62, PAGE):
        page = call(
            policy,
            f"Listing chunks ({where})",
            partial(collection.get, limit=PAGE, offset=offset, include=["metadatas"]),
        )
        metadatas += [meta or {} for meta in page["metadatas"] or []]
        if len(page["ids"]) < PAGE:
            break
    return metadatas


# --- note types with their counts ---


@dataclass(frozen=True)
class TypeRow:
    """One note type: its name as stored, its chunks and the files they come from."""

    type: str
    chunks: int
    files: int


def count_types(metadatas: Iterable[Mapping[str, Any]]) -> list[TypeRow]:
    """Chunks and files per type, most chunks first (then by name).

    Args:
        metadatas: The chunks' metadata (``type``, ``root`` and ``source`` keys).
    """
    chunks: Counter[str] = Counter()
    files: dict[str, set[tuple[str, str]]] = {}
    for meta in metadatas:
        type_ = str(meta.get("type", ""))
        chunks[type_] += 1
        files.setdefault(type_, set()).add((str(meta.get("root")), str(meta.get("source"))))
    order = sorted(chunks, key=lambda t: (-chunks[t], t))
    return [TypeRow(t, chunks[t], len(files[t])) for t in order]


def case_variants(rows: Iterable[TypeRow]) -> list[list[str]]:
    """Groups of stored types that differ only in case (a type filter matches them all)."""
    groups: dict[str, list[str]] = {}
    for row in rows:
        groups.setdefault(fold(row.type), []).append(row.type)
    return [sorted(group) for group in groups.values() if len(group) > 1]


def list_types(
    path: str | Path | None = None,
    *,
    server: str | None = None,
    policy: StorePolicy | None = None,
) -> list[TypeRow]:
    """Every note type of the store in ``path`` (or on ``server``) with its counts.

    Raises:
        StoreNotFoundError: No store there.
        StoreUnavailableError: The server could not be reached within the deadline.
    """
    metadatas = stored_metadata(
        path,
        server,
        policy or StorePolicy(),
        missing="Create one with `ragbrain ingest NOTES_DIR`.",
    )
    return count_types(metadatas)
