"""Following other processes' writes to an embedded Chroma folder.

A ``chromadb.PersistentClient`` keeps its vector (HNSW) segment in memory, one per folder and
process, and does not read another process's writes into it: its searches go on returning
deleted ids (which then fail with ``InternalError: Error finding id``) and miss new ones, and
a second client on the same folder is handed the same cached segment. Only a client built
after dropping Chroma's cached system for the folder (``fresh_client``) reads the segment
afresh (measured with chromadb 1.5: the new client finds the other process's chunk, the
cached one does not; docs/server.md).

``Follower`` says cheaply whether another process wrote: a stat of ``chroma.sqlite3`` (every
write by any process changes it) and, only when the stat moved, one read of the SQLite file
for the last write's sequence number and the collections' metadata. The stat alone is not
enough: opening a client touches the file's time too, so two processes that reopened on
every moved stat would reopen each other forever.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import os
import sqlite3
import sys
import threading
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.store.serial import serialize

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.config import Settings

#: The data a write changes: the write log's last sequence number, each segment's applied
#: one, and every collection's metadata (the ledger, the model, the gate).
_DATA_SQL = (
    "SELECT (SELECT max(seq_id) FROM embeddings_queue), "
    "(SELECT group_concat(segment_id || ':' || seq_id) FROM max_seq_id), "
    "(SELECT group_concat(collection_id || key || coalesce(str_value, '') || "
    "coalesce(int_value, '') || coalesce(float_value, '') || coalesce(bool_value, ''), '|') "
    "FROM collection_metadata)"
)

_CLIENTS = threading.Lock()

#: What a stat says of the file: inode (a folder swapped in by a re-embed, or restored),
#: size and modification time.
Stat = tuple[int, int, int]


class StoreGoneError(Exception):
    """The folder's SQLite file is missing (the folder deleted, moved or being replaced)."""


class Follower:
    """Whether the data in a Chroma folder changed since this process last settled on it.

    ``changed()`` costs a stat when nothing changed (microseconds), and one read-only SQLite
    query (about 0.4 ms) when the stat moved. ``settle()`` marks the current state as seen:
    after this process opened a fresh client, or wrote (under the writer lock).
    """

    def __init__(self, sqlite: Path, fallback: Callable[[], object] | None = None) -> None:
        """Args:
        sqlite: The folder's ``chroma.sqlite3``.
        fallback: A token of the data to use if the SQLite file cannot be read as chromadb
            1.x writes it (another version): the store's generation, read through Chroma.
        """
        self.sqlite = Path(os.path.abspath(sqlite))  # a file URI needs an absolute path
        self._fallback = fallback
        self._stat: Stat | None = None
        self._data: object = None

    def stat(self) -> Stat | None:
        """The file's inode, size and modification time; None when it is missing."""
        try:
            found = self.sqlite.stat()
        except OSError:
            return None
        return found.st_ino, found.st_size, found.st_mtime_ns

    def data(self) -> object:
        """A token of the folder's data (see ``_DATA_SQL``), with the file's inode."""
        try:
            db = sqlite3.connect(f"{self.sqlite.as_uri()}?mode=ro", uri=True, timeout=5.0)
            try:
                row = db.execute(_DATA_SQL).fetchone()
            finally:
                db.close()
            digest: str | None = hashlib.blake2b(repr(row).encode(), digest_size=16).hexdigest()
        except sqlite3.Error:
            digest = repr(self._fallback()) if self._fallback is not None else None
        stat = self.stat()
        return (None if stat is None else stat[0], digest)

    def changed(self) -> bool:
        """Whether another writer changed the data since ``settle``.

        Raises:
            StoreGoneError: The SQLite file is missing.
        """
        stat = self.stat()
        if stat is None:
            raise StoreGoneError(str(self.sqlite))
        if stat == self._stat:
            return False
        data = self.data()
        if data == self._data:
            self._stat = stat  # touched, not written (another process opened a client)
            return False
        return True

    def settle(self) -> None:
        """Take the folder's current state as seen (nothing to follow until it changes)."""
        self._stat = self.stat()
        self._data = self.data()


def fresh_client(path: Path, settings: Settings | None = None) -> ClientAPI:
    """A ``PersistentClient`` on ``path`` that reads the folder afresh: Chroma's cached system
    for the path is set aside first (not stopped: clients and collections opened from it go
    on working, on what they loaded, until dropped), so this client loads its segments from
    disk. Later clients on the path share the new system; the old one's references stay
    counted, so closing an old client never stops the new system. Its every call to
    Chroma holds the folder's index lock (``ragbrain.store.serial``)."""
    import chromadb
    from chromadb.api.shared_system_client import SharedSystemClient
    from chromadb.config import Settings

    settings = settings or Settings(anonymized_telemetry=False)
    with _CLIENTS:
        systems = SharedSystemClient._identifier_to_system
        counts = SharedSystemClient._identifier_to_refcount
        kept = 0
        for cached in [i for i in systems if Path(i).resolve() == path.resolve()]:
            systems.pop(cached)
            kept += counts.pop(cached, 0)
        client = chromadb.PersistentClient(path=str(path), settings=settings)
        serialize(getattr(client, "_server", None), path)  # one call at a time (``serial``)
        found = getattr(client, "_identifier", None)
        if kept and isinstance(found, str):
            identifier = found
            with SharedSystemClient._refcount_lock:
                counts[identifier] = counts.get(identifier, 0) + kept
        return client


@lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    try:
        return None if name is None else ctypes.CDLL(name)
    except OSError:
        return None


def release_memory() -> None:
    """Hand the memory freed by a dropped Chroma client back to the system (glibc's
    ``malloc_trim``; nothing elsewhere). Without it a process that reopens often keeps what
    the old segments held (measured on a 10k-chunk store, 30 reopens: docs/many-processes.md)."""
    libc = _libc()
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim(0)


def retire(client: object) -> None:
    """Let a client's Chroma system be freed once its last user drops it.

    A chromadb ``System`` and its components refer to each other, so a dropped client's
    segments (a whole HNSW index) wait for Python's cycle collector; this breaks the cycle
    instead. A client or collection still in use keeps its own component (its ``_server``)
    and goes on working; later clients on the path use the fresh system.
    """
    server = getattr(client, "_server", None)
    instances = getattr(getattr(server, "_system", None), "_instances", None)
    if isinstance(instances, dict):
        instances.clear()
