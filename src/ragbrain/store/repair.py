"""Keeping an embedded store whole: the writers' lock, and repairing what a crash left behind."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ragbrain.errors import InvalidInputError, StoreLockedError, StoreNotFoundError
from ragbrain.paths import LOCK_WAIT_ENV
from ragbrain.store.keys import BATCH, LOCK_FILE

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection


log = logging.getLogger(__name__)

#: Runs one Chroma call, named for its error message: ``Store.call``, or
#: ``functools.partial(resilience.call, policy)``.
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
