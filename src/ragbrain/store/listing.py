"""Reading a store's chunk metadata without loading its embedding model (``ragbrain types``,
``ingest --re-embed``'s check of the notes folder)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from ragbrain.errors import StoreNotFoundError
from ragbrain.store.connect import connect
from ragbrain.store.keys import COLLECTION, PAGE
from ragbrain.store.resilience import StorePolicy, call


def stored_metadata(
    path: str | Path | None, server: str | None, policy: StorePolicy, *, missing: str
) -> list[Mapping[str, Any]]:
    """Every chunk's metadata of the store in ``path`` (or on ``server``), page by page.

    Args:
        path: The store folder (None with ``server``).
        server: A Chroma server's URL.
        policy: Deadlines and retries of the store calls.
        missing: What to tell the user when there is no ragbrain collection there.

    Raises:
        StoreNotFoundError: No store there (the message ends with ``missing``).
        StoreUnavailableError: The server could not be reached within the deadline.
    """
    client, where, _ = connect(path, server, policy, create=False)
    try:
        collection = call(
            policy,
            f"Opening the collection at {where}",
            lambda: client.get_collection(COLLECTION, embedding_function=None),
        )
    except StoreNotFoundError:
        raise StoreNotFoundError(f"{where} holds no ragbrain collection. {missing}") from None
    metadatas: list[Mapping[str, Any]] = []
    for offset in range(0, 1 << 62, PAGE):
        page = call(
            policy,
            f"Listing chunks ({where})",
            partial(collection.get, limit=PAGE, offset=offset, include=["metadatas"]),
        )
        metadatas += [meta or {} for meta in page["metadatas"] or []]
        if len(page["ids"]) < PAGE:
            break
    return metadatas
