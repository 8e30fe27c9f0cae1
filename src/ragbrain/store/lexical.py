"""Keeping the lexical index in step with its store: where it lives, generations, rebuilds."""

from __future__ import annotations

import json
import logging
import threading
import time
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragbrain.lexical.index import LexicalIndex, LexicalIndexError, fingerprint
from ragbrain.store.ledger import new_generation

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
    *,
    record: Mapping[str, Any] | None = None,
) -> LexicalIndex:
    """Bring the lexical index of ``store`` in step with the store's chunks, and save it.

    The index on disk (or ``index``) is reused when its fingerprint matches the store's ids.
    Otherwise only the chunks it lacks are read and tokenized, those the store no longer has
    are dropped, and the result is written back. A corrupt, unreadable or outdated index
    file is rebuilt from scratch, with a warning. The other chunks of a file that gained
    chunks get their metadata read again (an edit moves the whole file's time).

    The file is stamped with the store's generation (``ragbrain.store.ledger``) read before
    the store's ids, so a reader whose store shows the same generation may take the file as
    it is. A writer passes ``record`` once its writes are done: the file is stamped with a new
    generation, saved, and only then is that generation (with ``record``'s keys) written to
    the store, so a reader that sees it finds the file in step.

    Args:
        changed: Chunks whose metadata (not text) the caller has just rewritten, with it
            (ingest records a touched file's new time so): the index takes it as given.
        record: As a writer: keys of the store's record to write with the new generation
            (``{}`` for none); None as a reader.

    Returns:
        The index, matching the store's current ids.
    """
    path = index_path(store)
    generation = store.ledger().generation  # before the ids: a write after it changes it
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
        elif record is None and path.is_file():
            return index
        return _save(store, index, generation, record)
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
    index = _save(store, index, generation, record)
    log.info(
        "Lexical index of %s: %d chunks tokenized, %d dropped, %d in all (%.1f s).",
        store.location,
        len(rows),
        len(drop),
        len(index),
        time.perf_counter() - started,
    )
    return index


def _save(
    store: Store, index: LexicalIndex, generation: str | None, record: Mapping[str, Any] | None
) -> LexicalIndex:
    """Save ``index`` stamped with ``generation`` (a reader's) or, for a writer (``record``
    given), with a new one that the store then records."""
    path = index_path(store)
    if record is None:
        index.generation = generation
        index.save(path)
        return index
    index.generation = new_generation()
    index.save(path)
    store.record(record, generation=index.generation)
    return index


def stored_generation(path: Path) -> str | None:
    """The generation an index file is stamped with, reading only its header (None: none,
    or no readable file)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(bytes(data["header"]).decode("utf-8"))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    generation = header.get("generation") if isinstance(header, dict) else None
    return generation if isinstance(generation, str) else None


#: How often, at most, a reader of a server store asks it for its generation (an embedded
#: store is asked only when its SQLite file has changed: a stat per query).
SERVER_RECHECK_SECONDS = 0.1


class LexicalSearcher:
    """The index a graph searches, kept in step with the store by the store's own record.

    A long-lived process (a server, Studio, a LangChain app) thus sees what another process
    wrote without reopening, as dense search does. On every query an embedded store's
    ``Store.version`` (a stat of its SQLite file) says whether anything was written; if so,
    or on a server store at most every ``SERVER_RECHECK_SECONDS``, the store's generation
    (``ragbrain.store.ledger``, changed by every write) is read. A new generation brings
    the index in step: from the file the writer saved when it is stamped with that
    generation, else from the store (its ids, and the chunks the index lacks). A writer
    that does not keep the record (Chroma written directly) is seen by the chunk count.
    """

    def __init__(self, store: Store, index: LexicalIndex | None = None) -> None:
        """Open (syncing as needed) the index of ``store``; ``index`` skips the first read."""
        self.store = store
        self._version = store.version()  # before the sync: a write after it changes it
        self._generation = store.ledger().generation
        self._index = sync_lexical(store, index)
        self._checked = time.monotonic()
        self._lock = threading.Lock()
        # The index holds every chunk's type: the store's type filter need not ask Chroma
        # (and keeps the rare types' vectors if they are missing: see TypeIndex.learn_from).
        store.learn_types_from(lambda: self.index)

    @property
    def index(self) -> LexicalIndex:
        """The current index, brought in step first if the store has changed."""
        version = self.store.version()
        if version is not None and version == self._version:
            return self._index
        if version is None and time.monotonic() - self._checked < SERVER_RECHECK_SECONDS:
            return self._index
        with self._lock:
            self._follow(version)
        return self._index

    def _follow(self, version: object) -> None:
        """Catch up with the store if its generation moved (call with the lock held)."""
        self._checked = time.monotonic()
        self._version = version  # type: ignore[assignment]
        generation = self.store.ledger().generation
        if generation != self._generation:
            self._index = self._catch_up(generation)
        elif self.store.count() != len(self._index):
            self._index = sync_lexical(self.store, self._index)
        self._generation = generation

    def _catch_up(self, generation: str | None) -> LexicalIndex:
        """The index at ``generation``: the writer's file if stamped with it, else synced."""
        path = index_path(self.store)
        if generation is not None and stored_generation(path) == generation:
            try:
                return LexicalIndex.load(path)
            except LexicalIndexError as exc:
                log.warning("Reading the lexical index again from the store: %s", exc)
        return sync_lexical(self.store, self._index)

    def refresh(self) -> LexicalIndex:
        """Bring the index in step with the store now: after this process wrote to it, the
        next search must not wait for anything."""
        with self._lock:
            self._follow(self.store.version())
        return self._index
