"""Keeping an embedded store whole: the writers' lock, and repairing what a crash left behind."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.errors import StoreLockedError
from ragbrain.store.keys import BATCH, LOCK_FILE

if TYPE_CHECKING:
    from ragbrain.store.store import Store


@contextlib.contextmanager
def writer_lock(folder: Path | None) -> Iterator[None]:
    """Hold the writer lock of the store in ``folder`` (None: a server, which orders writes
    itself).

    Raises:
        StoreLockedError: Another process is writing to the same store folder.
    """
    if folder is None:
        yield
        return
    import fcntl

    path = folder / LOCK_FILE
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise StoreLockedError(
                f"The store {folder} is locked by another writer (pid {holder}); "
                "wait for that `ragbrain ingest` to finish and run this one again."
            ) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def restore_missing_vectors(store: Store) -> list[str]:
    """Write back, from their stored records, the chunks that Chroma's vector index lacks.

    A process killed at the wrong moment (SIGKILL, power loss), even after its last write
    returned, can leave a chunk in Chroma's records but not in its HNSW index (seen in the
    crash tests: a query for all 109 chunks returned 108), so no search ever finds it and a
    rerun of the ingest sees it as unchanged. One query for every chunk lists what the index
    holds; the rest are upserted again with their own stored vectors (no embedding).
    ``ragbrain ingest`` runs this first: 2.0 s at 100k chunks, about as long as listing the
    store's ids, which ingest does anyway.

    Returns:
        The ids written back.
    """
    total = store.count()
    if not total:
        return []
    collection = store.collection
    probe = store.call("Reading a vector", lambda: collection.get(limit=1, include=["embeddings"]))
    vector: list[Sequence[float]] = [[float(x) for x in probe["embeddings"][0]]]  # type: ignore[index]
    found = store.call(
        "Listing the vector index",
        lambda: collection.query(query_embeddings=vector, n_results=total, include=["distances"]),
    )
    indexed = set(found["ids"][0])
    missing = [i for i in store.all_ids() if i not in indexed]
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
