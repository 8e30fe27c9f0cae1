"""apply_changes(): bring the store in step with some changed paths of a folder, as ingest would.

The watcher calls this with the paths a burst of file events named. Only the files at or
under those paths are read again; the result is the same as a full ``ingest`` of the
folder (same walk, same reader, same chunk ids), with the same order: new chunks are
written before stale ones are deleted, under the store's writer lock.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.ingest.chunks import Chunk, chunk_note, splitter_for
from ragbrain.ingest.files import MAX_BYTES, NoteFile, Skipped, list_candidates, read_note
from ragbrain.ingest.roots import only_under
from ragbrain.ingest.run import retime, stale_times, write_chunks

if TYPE_CHECKING:
    from ragbrain.store import Store

log = logging.getLogger(__name__)


@dataclass
class Change:
    """What happened to one file's chunks."""

    source: str
    added: int = 0
    deleted: int = 0
    gone: bool = False  # the file is no longer there (deleted, moved away, now skipped)

    def line(self) -> str:
        """``bug/x.md: 2 chunks added, 1 deleted`` or ``bug/y.md: removed (3 chunks)``."""
        if self.gone:
            return f"{self.source}: removed ({self.deleted} chunks)"
        return f"{self.source}: {self.added} chunks added, {self.deleted} deleted"


@dataclass
class Update:
    """One applied batch of changes under one folder."""

    root: Path
    changes: list[Change] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    retry: list[Path] = field(default_factory=list)  # changed while being read: read again


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _affected(root: Path, paths: Iterable[Path], sources: Iterable[str]) -> set[str]:
    """The sources at or under any of ``paths`` (a deleted folder names all its files)."""
    prefixes = set()
    for path in paths:
        try:
            relative = Path(os.path.abspath(path)).relative_to(root).as_posix()
        except ValueError:
            continue  # outside this folder
        prefixes.add("" if relative == "." else relative)
    if "" in prefixes:
        return set(sources)
    return {s for s in sources if s in prefixes or any(s.startswith(p + "/") for p in prefixes)}


def _read(root: Path, path: Path, type_: str | None, max_bytes: int) -> NoteFile | Skipped | None:
    """The note, a reason to skip it, or None when it changed while being read."""
    before = _stamp(path)
    try:
        note = read_note(root, path, type_, max_bytes)
    except (ValueError, OSError) as exc:
        return Skipped(path, str(exc))
    if before is None or _stamp(path) != before:
        return None
    return note


def apply_changes(
    store: Store,
    root: Path,
    paths: Iterable[Path],
    *,
    type_: str | None = None,
    prune: bool = True,
    max_bytes: int = MAX_BYTES,
    exclude: Sequence[str] = (),
    include: Sequence[str] = (),
    folder: Path | None = None,
) -> Update:
    """Re-read the files at or under ``paths`` in the folder ``root`` and update the store.

    A file that is gone (or now skipped) loses its chunks (with ``prune``); a file that
    changed while it was read is left as it was and returned in ``Update.retry``.

    Args:
        store: The opened store.
        root: The ingested folder (absolute), as ``ingest`` was given it.
        paths: Changed files or folders (created, modified, deleted, moved from or to).
        type_: As for ``ingest``.
        prune: Delete the chunks of files that are no longer there.
        max_bytes: Larger files are skipped.
        exclude, include: Gitignore patterns, as for ``ingest`` (relative to ``folder``): a
            file they leave out loses its chunks (with ``prune``) like a deleted one.
        folder: The watched folder, inside ``root`` (default: ``root``): only files under
            it are read, and only their chunks can be pruned.

    Raises:
        StoreLockedError: Another process is writing to the store.
    """
    root = Path(os.path.abspath(root))
    folder = root if folder is None else Path(os.path.abspath(folder))
    update = Update(root=root)
    with store.writing():
        found: dict[str, Path | Skipped] = {}
        listed = list_candidates(root, exclude, include, folder) if folder.is_dir() else []
        for candidate in listed:
            path = candidate.path if isinstance(candidate, Skipped) else candidate
            found[path.relative_to(root).as_posix()] = candidate
        # The rest of the root is not this folder's to prune.
        stored = only_under(store.metadata_by_source(str(root)), root, folder)
        existing = {source: set(chunks) for source, chunks in stored.items()}
        paths = list(paths)
        to_write: list[Chunk] = []
        to_retime: list[Chunk] = []
        stale: list[str] = []
        for source in sorted(_affected(root, paths, set(existing) | set(found))):
            item = found.get(source)
            have = existing.get(source, set())
            read: NoteFile | Skipped | None = item if isinstance(item, Skipped) else None
            if isinstance(item, Path):
                read = _read(root, item, type_, max_bytes)
                if read is None:
                    update.retry.append(item)
                    continue
            if isinstance(read, Skipped):
                update.skipped.append(read)
            if not isinstance(read, NoteFile):  # gone or now skipped
                if prune and have:
                    stale += sorted(have)
                    update.changes.append(Change(source, deleted=len(have), gone=True))
                continue
            chunks = chunk_note(read, splitter_for(store.embeddings))
            wanted = {c.id for c in chunks}
            new = [c for c in chunks if c.id not in have]
            old = sorted(have - wanted)
            to_write += new
            stale += old
            to_retime += stale_times(chunks, stored.get(source, {}))
            if new or old:
                update.changes.append(Change(source, added=len(new), deleted=len(old)))
        if not to_write and not stale and not to_retime:
            return update
        write_chunks(store, to_write)
        store.delete(stale)
        retime(store, to_retime)
        from ragbrain.store.lexical import sync_lexical

        changed = {c.id: c.metadata for c in to_retime}
        store.keep_small_types(sync_lexical(store, changed=changed, record={}))
        from ragbrain.refusal.offtopic import store_cut

        store_cut(store)  # learnt again once the store's size has moved past STALE_CHANGE
    return update
