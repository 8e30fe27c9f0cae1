"""One file, one source: which ingested root a path belongs to, and merging roots that overlap.

A note's ``source`` is its path relative to the root that holds it, whichever path was
ingested (the root, a folder inside it, the file itself). The store records its roots
(``ragbrain.store.ledger``). A path inside a root is stored under that root; a path outside
every root makes a new one (the folder, or a file's folder); a new root that holds roots
already ingested takes them in: their chunks move under it, their sources gaining the path
between the two folders (no file is read and nothing is embedded), and a chunk that is then
already there (the same file ingested under both) is dropped.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ragbrain.ingest.chunks import chunk_id
from ragbrain.store.ledger import BATCH, ROOTS_KEY, roots_json

if TYPE_CHECKING:
    from ragbrain.store import Store

log = logging.getLogger(__name__)
T = TypeVar("T")


def real(path: Path) -> Path:
    """``path`` with links resolved (as far as it exists)."""
    return Path(os.path.realpath(path))


def _holds(outer: str, inner: Path) -> bool:
    """Whether the root ``outer`` holds ``inner`` (a real path), or is it."""
    return inner.is_relative_to(real(Path(outer)))


@dataclass(frozen=True)
class Placement:
    """Where an ingested path's notes are stored.

    Attributes:
        root: The root the notes are stored under (their chunks' ``root``).
        path: The ingested path, spelled under ``root``.
        new: ``root`` was not a root of the store before.
        absorbed: Roots of the store inside the new ``root``, to merge into it.
    """

    root: Path
    path: Path
    new: bool = False
    absorbed: tuple[str, ...] = ()


def place(path: Path, roots: Sequence[str], root: Path | None = None) -> Placement:
    """The root that ``path`` (absolute) belongs to among the store's ``roots``.

    Args:
        path: The file or folder to ingest.
        roots: The store's roots (absolute folder paths).
        root: The folder to make the root if no root holds ``path`` (default: ``path``
            itself, or a file's folder).
    """
    # A file keeps its own name (a link to another note stays a note of its own).
    resolved = real(path) if path.is_dir() else real(path.parent) / path.name
    holding = [r for r in roots if _holds(r, resolved)]
    if holding:
        outer = min(holding, key=lambda r: (len(real(Path(r)).parts), r))
        return Placement(Path(outer), Path(outer) / resolved.relative_to(real(Path(outer))))
    candidate = Path(
        os.path.abspath(root if root is not None else path if path.is_dir() else path.parent)
    )
    inside = tuple(r for r in roots if _holds(str(candidate), real(Path(r))))
    return Placement(candidate, path, new=True, absorbed=inside)


def overlaps(roots: Sequence[str]) -> list[tuple[str, str]]:
    """``(inner, outer)`` for each root that lies inside another (or is the same folder
    spelled otherwise), with the outermost root that holds it."""
    found = []
    for inner in roots:
        holding = [
            o
            for o in roots
            if o != inner
            and _holds(o, real(Path(inner)))
            and (real(Path(o)) != real(Path(inner)) or o < inner)
        ]
        if holding:
            found.append((inner, min(holding, key=lambda r: (len(real(Path(r)).parts), r))))
    return found


def stored_roots(store: Store) -> list[str]:
    """The distinct ``root`` of the store's chunks (a store that does not record its roots)."""
    roots: set[str] = set()
    for page in store.pages(["metadatas"]):
        roots.update(str((m or {}).get("root", "")) for m in page["metadatas"] or [])
    return sorted(r for r in roots if r)


def known_roots(store: Store) -> list[str]:
    """The store's roots: as recorded, else read from its chunks."""
    recorded = store.ledger().roots
    return list(recorded) if recorded is not None else stored_roots(store)


def only_under(stored: dict[str, T], root: Path, folder: Path | None) -> dict[str, T]:
    """The entries of ``stored`` (by source) whose file lies under ``folder`` (inside
    ``root``); all of them for the root itself or None."""
    if folder is None or folder == root:
        return stored
    under = folder.relative_to(root).as_posix() + "/"
    return {source: value for source, value in stored.items() if source.startswith(under)}


@dataclass
class Merge:
    """One root merged into another: chunks moved under it, copies dropped."""

    inner: str
    outer: str
    moved: int = 0
    dropped: int = 0

    def line(self) -> str:
        """For people: what happened to the inner root's chunks."""
        return (
            f"{self.inner} merged into {self.outer}: {self.moved} chunks moved under it, "
            f"{self.dropped} copies of chunks already there dropped"
        )


@dataclass
class Settled:
    """What ``settle`` did to the store's roots."""

    roots: list[str] = field(default_factory=list)
    merges: list[Merge] = field(default_factory=list)


def merge_root(store: Store, inner: str, outer: str) -> Merge:
    """Move every chunk of the root ``inner`` under the root ``outer`` (which holds it): the
    same text, vector and metadata, with ``root`` and ``source`` rewritten (so a new id).
    A chunk whose new id is already stored (the file was ingested under both) is dropped.
    New chunks are written before old ones are deleted, a batch at a time."""
    between = real(Path(inner)).relative_to(real(Path(outer))).as_posix()
    prefix = "" if between == "." else f"{between}/"
    merge = Merge(inner, outer)
    ids = sorted(i for chunks in store.metadata_by_source(inner).values() for i in chunks)
    collection = store.collection
    for start in range(0, len(ids), BATCH):
        got = store.call(
            "Reading chunks",
            partial(
                collection.get,
                ids=ids[start : start + BATCH],
                include=["documents", "metadatas", "embeddings"],
            ),
        )
        texts = [t or "" for t in got["documents"] or []]
        metas = [
            {**(m or {}), "root": outer, "source": prefix + str((m or {}).get("source", ""))}
            for m in got["metadatas"] or []
        ]
        new_ids = [chunk_id(t, m) for t, m in zip(texts, metas, strict=True)]
        vectors = got["embeddings"] if got["embeddings"] is not None else []
        there = store.call("Reading chunks", partial(collection.get, ids=new_ids, include=[]))
        present = set(there["ids"])
        fresh = [i for i, new in enumerate(new_ids) if new not in present]
        if fresh:
            store.upsert(
                [new_ids[i] for i in fresh],
                [texts[i] for i in fresh],
                [metas[i] for i in fresh],
                [[float(x) for x in vectors[i]] for i in fresh],
            )
        store.delete([old for old, new in zip(got["ids"], new_ids, strict=True) if old != new])
        merge.moved += len(fresh)
        merge.dropped += len(new_ids) - len(fresh)
    log.info("%s", merge.line())
    return merge


def settle(store: Store, roots: Sequence[str], placement: Placement | None = None) -> Settled:
    """Merge the store's overlapping ``roots`` (and with ``placement`` of a new root, the
    roots it holds) into the outermost, and record the roots; call it holding the store's
    writer lock.

    Returns:
        The roots as recorded now, and the merges made.
    """
    settled = Settled(roots=list(roots))
    target = dict(overlaps(roots))
    if placement is not None and placement.new:
        outer = str(placement.root)
        target.update({inner: outer for inner in placement.absorbed if inner != outer})
        settled.roots.append(outer)
    for inner in sorted(target):
        outer = target[inner]
        while outer in target:  # straight to the outermost
            outer = target[outer]
        settled.merges.append(merge_root(store, inner, outer))
    merged = {m.inner for m in settled.merges}
    settled.roots = sorted(set(settled.roots) - merged)
    if store.ledger().roots != tuple(settled.roots):
        store.record({ROOTS_KEY: roots_json(settled.roots)})
    return settled
