"""Keeping the lexical index in step with its store: where it lives, staleness, rebuilds."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.lexical.index import LexicalIndex, LexicalIndexError, fingerprint
from ragbrain.store import type_index

if TYPE_CHECKING:
    from ragbrain.store import Store

log = logging.getLogger(__name__)


def index_path(store: Store) -> Path:
    """``<store folder>/lexical.npz``; for a server store, a file in the cache folder."""
    return store.sidecar("lexical", ".npz")


def sync_lexical(
    store: Store,
    index: LexicalIndex | None = None,
    changed: Mapping[str, Mapping[str, Any]] | None = None,
) -> LexicalIndex:
    """Bring the lexical index of ``store`` in step with the store's chunks, and save it.

    The index on disk (or ``index``) is reused when its fingerprint matches the store's ids.
    Otherwise only the chunks it lacks are read and tokenized, those the store no longer has
    are dropped, and the result is written back. A corrupt, unreadable or outdated index
    file is rebuilt from scratch, with a warning. The other chunks of a file that gained
    chunks get their metadata read again (an edit moves the whole file's time).

    Args:
        changed: Chunks whose metadata (not text) the caller has just rewritten, with it
            (ingest records a touched file's new time so): the index takes it as given.

    Returns:
        The index, matching the store's current ids.
    """
    path = index_path(store)
    if index is None:
        try:
            index = LexicalIndex.load(path)
        except LexicalIndexError as exc:
            if path.exists():
                log.warning("Rebuilding the lexical index: %s", exc)
            index = LexicalIndex.build([], [], [])
    ids = store.all_ids()
    if index.fingerprint == fingerprint(ids):
        if changed:
            index = index.with_metadata(changed)
            index.save(path)
        elif not path.is_file():
            index.save(path)
        return index
    started = time.perf_counter()
    wanted = set(ids)
    drop = {id_ for id_ in index.ids if id_ not in wanted}
    rows = store.rows([id_ for id_ in ids if id_ not in index])
    new_ids = {r[0] for r in rows}
    touched = {str(r[2].get("source", "")) for r in rows}
    types = [str(r[2].get("type", "")) for r in rows]
    index = index.updated(
        drop, [r[0] for r in rows], [r[1] for r in rows], types, [r[2] for r in rows]
    )
    siblings = [i for i in index.ids_of_sources(touched) if i not in new_ids]
    fresh = {id_: meta for id_, _, meta in store.rows(siblings)} if siblings else {}
    index = index.with_metadata({**fresh, **(changed or {})})
    index.save(path)
    log.info(
        "Lexical index of %s: %d chunks tokenized, %d dropped, %d in all (%.1f s).",
        store.location,
        len(rows),
        len(drop),
        len(index),
        time.perf_counter() - started,
    )
    return index


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


class LexicalSearcher:
    """The index a graph searches, rechecked against the store now and then.

    A long-lived process (a server, Studio) thus sees chunks another process ingested
    without reopening; the check runs at most every ``type_index.RECHECK_SECONDS`` (one
    interval for every long-lived reader), and for an embedded store only when its
    ``Store.version`` has changed. Every writer saves the index after writing, so a changed
    index file is read again (it also carries metadata rewritten in place: a file's new
    time); otherwise a changed chunk count resyncs it.
    """

    def __init__(self, store: Store, index: LexicalIndex | None = None) -> None:
        """Open (syncing as needed) the index of ``store``; ``index`` skips the first read."""
        self.store = store
        self._version = store.version()  # before the sync: a write after it changes it
        self._index = sync_lexical(store, index)
        self._file = _stamp(index_path(store))
        self._checked = time.monotonic()
        self._lock = threading.Lock()
        # The index holds every chunk's type: the store's type filter need not ask Chroma
        # (and keeps the rare types' vectors if they are missing: see TypeIndex.learn_from).
        store.learn_types_from(lambda: self.index)

    @property
    def index(self) -> LexicalIndex:
        """The current index; resynced when the store's chunk count no longer matches."""
        now = time.monotonic()
        if now - self._checked >= type_index.RECHECK_SECONDS:
            with self._lock:
                self._checked = now
                version = self.store.version()
                if version is None or version != self._version:
                    self._version = version
                    if _stamp(index_path(self.store)) != self._file:
                        self._index = self._reread()
                    elif self.store.count() != len(self._index):
                        self._index = sync_lexical(self.store, self._index)
                        self._file = _stamp(index_path(self.store))
        return self._index

    def _reread(self) -> LexicalIndex:
        """The index file as another writer left it, brought in step (call with the lock)."""
        try:
            on_disk: LexicalIndex | None = LexicalIndex.load(index_path(self.store))
        except LexicalIndexError:
            on_disk = self._index
        index = sync_lexical(self.store, on_disk)
        self._file = _stamp(index_path(self.store))
        return index

    def refresh(self) -> LexicalIndex:
        """Bring the index in step with the store now: after this process wrote to it, the
        next search must not wait for the periodic check. The file on disk is read again,
        so metadata that an ingest rewrote in place (a file's new time) is seen too."""
        with self._lock:
            self._checked = time.monotonic()
            self._version = self.store.version()
            self._index = self._reread()
        return self._index
