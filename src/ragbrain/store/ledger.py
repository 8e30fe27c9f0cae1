"""Names the store is read and written by (the collection, its metadata keys, call sizes),
and the store's own record, kept in its collection's metadata: the folders its notes were
ingested from (its roots), a generation that every write changes, and an unfinished ingest.

Every process that opens the store (a folder or a server) reads the same record, so a
long-lived reader learns from one small metadata read that another process wrote, without
listing the chunks. Chroma replaces a collection's metadata whole on every change, so each
update here reads the current metadata first and changes only its own keys.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

log = logging.getLogger(__name__)

# --- names the store is read and written by ---

COLLECTION = "ragbrain"
LOCK_FILE = "ragbrain.lock"
MODEL_KEY = "ragbrain:embedding_model"
DIMENSION_KEY = "ragbrain:dimension"
GATE_KEY = "ragbrain:gate_threshold"  # written by `ragbrain calibrate`
GATE_SOURCE_KEY = "ragbrain:gate_source"
#: The off-topic cut ``ragbrain.refusal.offtopic`` learns at ingest (JSON).
OFFTOPIC_KEY = "ragbrain:offtopic"
#: Chroma caps how many records one call may carry.
BATCH = 1000
#: Records read per call when listing a whole store. Chroma reads a call's metadata with one
#: SQL statement naming every id, and SQLite refuses more than 32,766 variables: an unpaged
#: listing fails on a store of about 33k chunks or more ("too many SQL variables").
PAGE = 5000

# --- the store's record ---

#: The roots, a JSON list of absolute folder paths (the ``root`` of their chunks).
ROOTS_KEY = "ragbrain:roots"
#: A new random token after every write (chunks written, deleted or given new metadata).
GENERATION_KEY = "ragbrain:generation"
#: Ingests that began writing and have not finished: a JSON list (see ``Unfinished``).
UNFINISHED_KEY = "ragbrain:unfinished"

#: Runs one Chroma call, named for its error message (``Store.call``).
Caller = Callable[[str, Callable[[], Any]], Any]


@dataclass(frozen=True)
class Unfinished:
    """An ingest that began writing and has not finished: still running, killed, or stopped
    by Ctrl-C (``interrupted``); the store may lack some of the folder's notes."""

    path: str
    written: int = 0
    total: int = 0
    interrupted: bool = False
    started: float = 0.0

    def note(self) -> str:
        """One line for a run's trace and the command line."""
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.started))
        done = f"{self.written} of {self.total} chunks written"
        how = (
            "was interrupted" if self.interrupted else "has not finished (still running, or killed)"
        )
        return (
            f"the ingest of {self.path} started {when} {how} ({done}): the store may lack some "
            f"of its notes; run `ragbrain ingest {self.path}` again to finish it"
        )


@dataclass(frozen=True)
class Ledger:
    """The record as read: roots (None: an older store that does not record them), the
    generation (None: never written by a ragbrain that keeps it) and an unfinished ingest."""

    roots: tuple[str, ...] | None = None
    generation: str | None = None
    unfinished: tuple[Unfinished, ...] = ()


def parse(metadata: Mapping[str, Any] | None) -> Ledger:
    """The ledger in a collection's metadata; malformed entries read as absent."""
    metadata = metadata or {}
    roots: tuple[str, ...] | None = None
    raw = metadata.get(ROOTS_KEY)
    if isinstance(raw, str):
        try:
            listed = json.loads(raw)
        except ValueError:
            listed = None
        if isinstance(listed, list) and all(isinstance(r, str) for r in listed):
            roots = tuple(listed)
    generation = metadata.get(GENERATION_KEY)
    return Ledger(
        roots=roots,
        generation=generation if isinstance(generation, str) else None,
        unfinished=_unfinished(metadata.get(UNFINISHED_KEY)),
    )


def _unfinished(raw: object) -> tuple[Unfinished, ...]:
    if not isinstance(raw, str) or not raw:
        return ()
    try:
        listed = json.loads(raw)
        return tuple(
            Unfinished(
                path=str(data["path"]),
                written=int(data.get("written", 0)),
                total=int(data.get("total", 0)),
                interrupted=bool(data.get("interrupted", False)),
                started=float(data.get("started", 0.0)),
            )
            for data in listed
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return ()


def new_generation() -> str:
    """A token no other write has: time, process and randomness."""
    return f"{time.time_ns():x}-{os.getpid():x}-{secrets.token_hex(4)}"


def current_metadata(collection: Collection) -> dict[str, Any]:
    """The collection's metadata as stored now (another process may have changed it since
    this handle was opened); the handle's own copy when the client cannot be asked."""
    # Chroma's Collection keeps the metadata it was opened with; its client reads it afresh
    # (cheap on an embedded store).
    client = getattr(collection, "_client", None)
    if client is None:
        return dict(collection.metadata or {})
    model = client.get_collection(
        collection.name, tenant=collection.tenant, database=collection.database
    )
    return dict(model.metadata or {})


def read(collection: Collection, run: Caller) -> Ledger:
    """The ledger as stored now."""
    return parse(run("Reading the store's record", lambda: current_metadata(collection)))


def update(collection: Collection, run: Caller, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Set (a None value: remove) some keys of the collection's metadata, keeping the rest as
    stored now; returns the metadata written.

    Chroma refuses changes to its own ``hnsw:`` keys, so they are left out of the update (they
    live in the collection's configuration and stay as they are).
    """

    def write() -> dict[str, Any]:
        kept = {k: v for k, v in current_metadata(collection).items() if not k.startswith("hnsw:")}
        merged = {k: v for k, v in {**kept, **changes}.items() if v is not None}
        collection.modify(metadata=merged)
        return merged

    written: dict[str, Any] = run("Writing the store's record", write)
    return written


def bump(
    collection: Collection,
    run: Caller,
    changes: Mapping[str, Any],
    *,
    generation: str | None = None,
) -> str:
    """Give the store a new generation (``generation``, or a fresh one) with ``changes``;
    returns it."""
    generation = generation or new_generation()
    update(collection, run, {**changes, GENERATION_KEY: generation})
    return generation


def roots_json(roots: Sequence[str]) -> str:
    """The value ``ROOTS_KEY`` holds for these roots (sorted, without repeats)."""
    return json.dumps(sorted(set(roots)), ensure_ascii=False)


def unfinished_json(entries: Sequence[Unfinished]) -> str | None:
    """The value ``UNFINISHED_KEY`` holds for ``entries`` (None, which removes it: none)."""
    if not entries:
        return None
    return json.dumps(
        [
            {
                "path": e.path,
                "written": e.written,
                "total": e.total,
                "interrupted": e.interrupted,
                "started": e.started,
            }
            for e in entries
        ],
        ensure_ascii=False,
    )


class LedgerView:
    """The ledger a long-lived reader sees: read again only when the store may have changed
    (an embedded store's ``version`` moved; a server store at most every ``server_seconds``),
    so asking it on every query costs a file stat, or nothing."""

    def __init__(
        self,
        collection: Collection,
        run: Caller,
        version: Callable[[], object],
        server_seconds: float = 0.1,
    ) -> None:
        self._collection, self._run, self._version = collection, run, version
        self._server_seconds = server_seconds
        self._seen: tuple[object, float, Ledger] | None = None

    def get(self) -> Ledger:
        """The ledger, read afresh when the store may have changed since the last read."""
        version, now = self._version(), time.monotonic()
        seen = self._seen
        if seen is not None and (
            (version is not None and version == seen[0])
            or (version is None and now - seen[1] < self._server_seconds)
        ):
            return seen[2]
        ledger = read(self._collection, self._run)
        self._seen = (version, now, ledger)
        return ledger

    def forget(self) -> None:
        """Read it again next time (this process has just written)."""
        self._seen = None
