"""Opening the store ``ingest`` and ``watch`` write to, and choosing a new store's model."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.cli.common import err

if TYPE_CHECKING:
    from ragbrain.store import Store
    from ragbrain.store.connect import StorePolicy


def _open_for_writing(
    notes: Path | None,
    store: Path | None,
    server: str | None,
    convert_space: bool,
    embedding: str | None = None,
) -> Store:
    """The store ``ingest`` and ``watch`` write to: created when missing, with ``embedding``,
    else the model the ``notes``' languages call for (an existing store keeps its own)."""
    from ragbrain.models.embeddings import embeddings_for
    from ragbrain.store import Store
    from ragbrain.store.connect import StorePolicy

    policy = StorePolicy.from_env()
    if not embedding and notes is not None:
        embedding = _new_store_model(notes, store, server, policy)
    return Store.open(
        store,
        embeddings_for(embedding) if embedding else None,
        create=True,
        convert_space=convert_space,
        server=server,
        policy=policy,
    )


def _new_store_model(
    path: Path, store: Path | None, server: str | None, policy: StorePolicy
) -> str | None:
    """None for an existing store (it keeps its model); for a new one, the model its notes'
    languages call for, said on stderr."""
    from ragbrain.errors import StoreNotFoundError
    from ragbrain.ingest.model_choice import model_for_notes
    from ragbrain.store import COLLECTION, connect
    from ragbrain.store.connect import call

    try:
        client, where, _ = connect(store, server, policy, create=False)
        call(
            policy,
            f"Opening the collection at {where}",
            lambda: client.get_collection(COLLECTION, embedding_function=None),
        )
        return None
    except StoreNotFoundError:
        pass
    model, why = model_for_notes(path)
    err.print(f"new store: {why}", highlight=False)
    return model
