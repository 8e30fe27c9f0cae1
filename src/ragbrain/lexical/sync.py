"""Keeping the lexical index in step with its store: where it lives, staleness, rebuilds."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.lexical.index import LexicalIndex, LexicalIndexError, fingerprint
from ragbrain.store import type_index

if TYPE_CHECKING:
    from ragbrain.store import Store

log = logging.getLogger(__name__)


def index_path(store: Store) -> Path:
    """``<store folder>/lexical.npz``; for a server store, a file in the cache folder."""
    return store.sidecar("lexical", ".npz")


def sync_lexical(store: Store, index: LexicalIndex | None = None) -> LexicalIndex:
    """Bring the lexical index of ``store`` in step with the store's chunks, and save it.

    The index on disk (or ``index``) is reused when its fingerprint matches the store's ids.
    Otherwise only the chunks it lacks are read and tokenized, those the store no longer has
    are dropped, and the result is written back. A corrupt, unreadable or outdated index
    file is rebuilt from scratch, with a warning.

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
        if not path.is_file():
            index.save(path)
        return index
    started = time.perf_counter()
    wanted = set(ids)
    drop = {id_ for id_ in index.ids if id_ not in wanted}
    rows = store.texts_and_types([id_ for id_ in ids if id_ not in index])
    index = index.updated(drop, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])
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


class LexicalSearcher:
    """The index a graph searches, rechecked against the store's chunk count now and then.

    A long-lived process (a server, Studio) thus sees chunks another process ingested
    without reopening; the check is one ``count`` call at most every
    ``type_index.RECHECK_SECONDS`` (one interval for every long-lived reader), and for an
    embedded store only when its ``Store.version`` has changed.
    """

    def __init__(self, store: Store, index: LexicalIndex | None = None) -> None:
        """Open (syncing as needed) the index of ``store``; ``index`` skips the first read."""
        self.store = store
        self._version = store.version()  # before the sync: a write after it changes it
        self._index = sync_lexical(store, index)
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
                    if self.store.count() != len(self._index):
                        self._index = sync_lexical(self.store, self._index)
        return self._index
