"""Many processes on one store folder: one Chroma call at a time, following other
processes' writes, the writers' lock and repairing what a crash left behind.

One Chroma call at a time on a store folder, across every process that opens it.

An embedded Chroma (1.x) keeps each collection's HNSW index in memory, one copy per process,
and writes it to the folder's index files once a process has applied ``hnsw:sync_threshold``
(1000) new records to its copy. Any process does that, a reader too: before every read,
Chroma applies the records other processes logged since the files were last written to its
own copy, and a reader that applied 1000 of them writes its copy out. Nothing orders two
processes doing so at once, nor a process loading the files while another writes them: the
files then mix two processes' graphs (whose internal ids differ), or a reader loads half
a file. Measured (chromadb 1.5.9, docs/many-processes.md): one process ingesting 1,200
records into a 4,000-chunk store while another searched in a loop left, in the first
round, a store whose next opening crashed the process (SIGSEGV), after the searcher had
failed once with ``Error deserializing pickle file: EOF while parsing``; smaller mixes lose
chunks from the graph's reach instead ("index reach" in ``ragbrain doctor``).

So every call a ragbrain client on a folder makes to Chroma (reads too: any of them may
write the index files) holds an exclusive lock on ``<store>/index.lock`` for the call's
length only: calls take milliseconds, a long ingest takes the lock once per call, and the
writers' lock (``writer_lock``) stays what orders whole ingests. Another program's
client on the same folder does not take it (docs/many-processes.md).

Following other processes' writes to an embedded Chroma folder.

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

Keeping an embedded store whole: the writers' lock, and repairing what a crash left behind.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import hashlib
import logging
import os
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ragbrain.errors import InvalidInputError, StoreLockedError, StoreNotFoundError
from ragbrain.paths import LOCK_WAIT_ENV
from ragbrain.store.ledger import BATCH, LOCK_FILE

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from chromadb.config import Settings


# --- one Chroma call at a time ---

#: The lock file beside ``chroma.sqlite3``.
INDEX_LOCK = "index.lock"

#: The client methods that reach the collection's records or index (``ServerAPI``).
CALLS = (
    "_add",
    "_count",
    "_delete",
    "_fork",
    "_fork_count",
    "_get",
    "_get_indexing_status",
    "_modify",
    "_peek",
    "_query",
    "_search",
    "_update",
    "_upsert",
)

_held = threading.local()


@contextlib.contextmanager
def one_call_at_a_time(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s index lock (re-entrant within a thread). A folder that is gone is
    not locked: the call then fails as Chroma says."""
    held: dict[Path, int] = _held.__dict__.setdefault("folders", {})
    if held.get(folder):
        held[folder] += 1
        try:
            yield
        finally:
            held[folder] -= 1
        return
    try:
        fd = os.open(folder / INDEX_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        yield
        return
    try:
        _take(fd, folder)
        held[folder] = 1
        try:
            yield
        finally:
            held[folder] = 0
    finally:
        os.close(fd)  # lets go of the lock


def _take(fd: int, folder: Path) -> None:
    """Take the lock on ``fd``, waiting (polling, 1 to 20 ms apart) at most as long as a
    writer waits for the writers' lock (``lock_wait``): a process frozen inside a
    call (stopped, swapping) makes the others fail with a clear error, not hang.

    Raises:
        StoreLockedError: The lock stayed held for the whole wait.
    """
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    wait = lock_wait()
    end, pause = time.monotonic() + wait, 0.001
    while True:
        time.sleep(pause)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= end:
                raise StoreLockedError(
                    f"Another process has held {folder / INDEX_LOCK} for {wait:g} s, in one "
                    "Chroma call: is it stopped or stuck? Its next call, or its end, frees it."
                ) from None
            pause = min(pause * 2, 0.02)


def serialize(server: object, folder: Path) -> None:
    """Make every call of a Chroma ``ServerAPI`` (a client's ``_server``, which its
    collections call) hold ``folder``'s index lock."""
    if getattr(server, "_ragbrain_serial", None) is not None:
        return
    for name in CALLS:
        method = getattr(server, name, None)
        if callable(method):
            setattr(server, name, _locked(method, folder))
    server._ragbrain_serial = folder  # type: ignore[attr-defined]


def _locked(method: Callable[..., Any], folder: Path) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        with one_call_at_a_time(folder):
            return method(*args, **kwargs)

    return call


# --- following other processes' writes ---

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
    Chroma holds the folder's index lock (``serialize``)."""
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
        serialize(getattr(client, "_server", None), path)  # one call at a time (``serialize``)
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


# --- the writers' lock and crash repair ---

log = logging.getLogger(__name__)

#: Runs one Chroma call, named for its error message: ``Store.call``, or
#: ``functools.partial(connect.call, policy)``.
Caller = Callable[[str, Callable[[], Any]], Any]


#: Seconds a writer waits for another to let go of the lock before giving up (ingest of a
#: large folder holds it for minutes: a tool call should not fail at once, nor hang forever).
LOCK_WAIT = 30.0
#: How often a waiting writer tries the lock again.
_LOCK_POLL = 0.05


def holder_line() -> str:
    """What the lock file says of the process holding it: pid, host and command."""
    command = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:200] if sys.argv else ""
    return f"pid {os.getpid()} on {socket.gethostname()}: {command}".replace("\n", " ")


def lock_wait() -> float:
    """Seconds a writer waits for the lock: ``$RAGBRAIN_LOCK_WAIT``, else ``LOCK_WAIT``.

    Raises:
        InvalidInputError: The variable is not a number of seconds >= 0.
    """
    raw = os.environ.get(LOCK_WAIT_ENV)
    if not raw:
        return LOCK_WAIT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise InvalidInputError(f"${LOCK_WAIT_ENV} must be seconds >= 0, got {raw!r}.")
    return value


@contextlib.contextmanager
def writer_lock(folder: Path | None, wait: float | None = None) -> Iterator[bool]:
    """Hold the writer lock of the store in ``folder`` (None: a server, which orders writes
    itself); yield whether the last writer was interrupted.

    Another writer holding it is waited for, ``wait`` seconds at most (None:
    ``lock_wait()``). The lock file names
    its holder (pid, host, command) while it writes and is emptied when it lets go (even
    on an error), so a holder still named when the lock is free is a writer that was killed
    while writing (or a store last written before ragbrain emptied the file): then the
    store's vector index deserves the thorough check (``restore_missing_vectors``).

    A writer that has to wait says so once (a warning: whom it waits for, and how long at
    most), so a command does not sit silent for the whole wait.

    Raises:
        StoreLockedError: Another process held the lock for all of ``wait`` seconds (its
            ``holder`` says who).
        StoreNotFoundError: The store's folder is gone (deleted, moved or being replaced).
    """
    if folder is None:
        yield False
        return
    import fcntl

    wait = lock_wait() if wait is None else max(0.0, wait)
    path = folder / LOCK_FILE
    try:
        handle = path.open("a+")
    except FileNotFoundError:
        raise StoreNotFoundError(
            f"The store {folder} is gone: the folder is missing (deleted, moved or being "
            "replaced). Nothing was written; try again once it is back."
        ) from None
    with handle:
        end = time.monotonic() + wait
        said = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "a process that has not said who it is"
                if time.monotonic() >= end:
                    raise StoreLockedError(
                        f"The store {folder} is locked by another writer ({holder}); waited "
                        f"{wait:g} s. Wait for it to finish and try again.",
                        holder=holder,
                    ) from None
                if not said:
                    log.warning(
                        "Waiting for another writer of %s to finish (%s); up to %g s "
                        "($%s sets how long).",
                        folder,
                        holder,
                        wait,
                        LOCK_WAIT_ENV,
                    )
                    said = True
                time.sleep(_LOCK_POLL)
        try:
            handle.seek(0)
            interrupted = bool(handle.read().strip())
            handle.seek(0)
            handle.truncate()
            handle.write(holder_line())
            handle.flush()
            yield interrupted
        finally:
            # Let go (an error raised inside is no kill): the next writer has nothing to check.
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)


class _Store(Protocol):
    """What crash repair needs of a ``ragbrain.store.Store`` (this module never imports it)."""

    collection: Collection

    def count(self) -> int: ...

    def all_ids(self) -> list[str]: ...

    def call(self, what: str, fn: Callable[[], Any]) -> Any: ...


def restore_missing_vectors(store: _Store, *, unreachable: bool = False) -> list[str]:
    """Write back, from their stored records, the chunks that Chroma's vector index lacks.

    A process killed at the wrong moment (SIGKILL, power loss), even after its last write
    returned, can leave a chunk in Chroma's records but not in its HNSW index (seen in the
    crash tests: a query for all 109 chunks returned 108), so no search ever finds it and a
    rerun of the ingest sees it as unchanged. One query for every chunk lists what the index
    holds; the rest are upserted again with their own stored vectors (no embedding). That
    query is still a walk of HNSW's graph (with a beam as wide as the store), so it also
    lists as missing a chunk the graph cut off, which HNSW does to chunks whose vector has
    many exact copies (seen in 3 of 600 stores of 300 hashed bag-of-words texts, a third of
    them deleted); writing those back is harmless, if not always a cure.
    ``ragbrain ingest`` runs this first: 2.0 s at 100k chunks, about as long as listing the
    store's ids, which ingest does anyway.

    With ``unreachable`` (after an interrupted writer, see ``writer_lock``), the chunks the
    index holds but no search reaches (``unreachable_vectors``) are written back too.

    Returns:
        The ids written back.
    """
    total = store.count()
    if not total:
        return []
    collection = store.collection
    probe = store.call("Reading a vector", lambda: collection.get(limit=1, include=["embeddings"]))
    vector: list[Sequence[float]] = [[float(x) for x in probe["embeddings"][0]]]
    # Asking for every chunk widens the search's beam to the whole store: it lists every
    # chunk the graph reaches (see above for the ones it cannot).
    found = store.call(
        "Listing the vector index",
        lambda: collection.query(query_embeddings=vector, n_results=total, include=["distances"]),
    )
    indexed = set(found["ids"][0])
    ids = store.all_ids()
    missing = [i for i in ids if i not in indexed]
    if unreachable:
        missing += unreachable_vectors(collection, [i for i in ids if i in indexed], store.call)
    for start in range(0, len(missing), BATCH):
        batch = missing[start : start + BATCH]
        got = store.call(
            "Reading chunks",
            partial(collection.get, ids=batch, include=["documents", "metadatas", "embeddings"]),
        )
        store.call(
            "Writing chunks",
            partial(
                collection.upsert,
                ids=list(got["ids"]),
                documents=got["documents"],
                metadatas=got["metadatas"],
                embeddings=got["embeddings"],
            ),
        )
    return missing


def unreachable_vectors(
    collection: Collection, ids: Sequence[str], run: Caller, k: int = 10
) -> list[str]:
    """The chunks among ``ids`` that a search for their own stored vector does not find.

    Such a chunk is in Chroma's HNSW index but cut off from its graph: a search for its very
    vector returns other chunks (seen after a SIGKILL during a burst of watched edits: found
    at distance 0 when all 149 chunks were asked for, missed at every smaller ``n_results``).
    Writing it again with the same vector links it back in. One search per chunk: 3.7 s at
    10k chunks of 384 dimensions on a 2-core machine, so ingest runs it only after an
    interrupted writer (or when asked). A chunk counts as found when it is among the hits
    that tie with the best (copies of the same text in other notes tie with it: up to ``k``
    of them; more would be written back again, which changes nothing). ``run(what, fn)``
    runs each Chroma call (``Store.call``: under the store's deadline and retries).
    """
    # Asked for all of them, the beam spans the store and finds even a cut-off chunk (the
    # crash above), so fewer.
    n_results = min(k, run("Counting chunks", collection.count) - 1)
    lost: list[str] = []
    if n_results < 1:
        return lost
    for start in range(0, len(ids), BATCH):
        batch = list(ids[start : start + BATCH])
        got = run("Reading vectors", partial(collection.get, ids=batch, include=["embeddings"]))
        hits = run(
            "Searching chunks by their own vectors",
            partial(
                collection.query,
                query_embeddings=list(got["embeddings"]),
                n_results=n_results,
                include=["distances"],
            ),
        )
        for id_, found, distances in zip(
            got["ids"], hits["ids"], hits["distances"] or [], strict=True
        ):
            tied = [h for h, d in zip(found, distances, strict=True) if d <= distances[0] + 1e-4]
            if id_ not in tied:
                lost.append(id_)
    return lost
