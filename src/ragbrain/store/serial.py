"""One Chroma call at a time on a store folder, across every process that opens it.

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
writers' lock (``repair.writer_lock``) stays what orders whole ingests. Another program's
client on the same folder does not take it (docs/many-processes.md).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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
    writer waits for the writers' lock (``repair.lock_wait``): a process frozen inside a
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
    from ragbrain.errors import StoreLockedError
    from ragbrain.store.repair import lock_wait

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
