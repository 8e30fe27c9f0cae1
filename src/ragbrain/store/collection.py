"""The ragbrain collection in Chroma: opening or creating it, and checking its distance space,
dimension and embedding model (converting another space to cosine on request)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ragbrain.errors import StoreMismatchError, StoreNotFoundError
from ragbrain.store.keys import BATCH, COLLECTION, DIMENSION_KEY, MODEL_KEY
from ragbrain.store.resilience import StorePolicy, call

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection

log = logging.getLogger(__name__)


def open_collection(
    client: ClientAPI,
    where: str,
    hint: str,
    *,
    model: str,
    dimension: int,
    create: bool,
    convert_space: bool,
    policy: StorePolicy,
) -> Collection:
    """The ragbrain collection behind ``client``, checked (and with ``create``, made).

    Args:
        client: The Chroma client (``connect``).
        where: The folder or server, for messages.
        hint: The CLI option that names it (``--store DIR``), for messages.
        model: The embedding model's name, recorded in a new collection and checked.
        dimension: The model's vector size, recorded in a new collection and checked.
        create: Create the collection if it is missing.
        convert_space: Copy a collection of another distance space into a cosine one.
        policy: Deadline and retries of each Chroma call.

    Raises:
        StoreNotFoundError: No collection there and ``create`` is false.
        StoreMismatchError: Another distance space (without ``convert_space``) or dimension.
    """
    try:
        collection = call(
            policy,
            f"Opening the collection at {where}",
            lambda: client.get_collection(COLLECTION, embedding_function=None),
        )
    except StoreNotFoundError:
        if not create:
            raise StoreNotFoundError(
                f"{where} holds no ragbrain collection. Create one with "
                f"`ragbrain ingest NOTES_DIR {hint}`."
            ) from None
        collection = call(
            policy,
            f"Creating the collection at {where}",
            lambda: client.get_or_create_collection(
                COLLECTION,
                metadata={MODEL_KEY: model, DIMENSION_KEY: dimension},
                configuration={"hnsw": {"space": "cosine"}},
                embedding_function=None,
            ),
        )
    found = space(collection)
    if found != "cosine":
        if not convert_space:
            raise StoreMismatchError(
                f"The collection in {where} uses the {found!r} distance space; ragbrain "
                "needs 'cosine'. Pass convert_space=True (CLI: --convert-space) to copy it "
                "into a cosine collection."
            )
        old = collection
        collection = call(
            policy,
            f"Converting the collection at {where}",
            lambda: convert_to_cosine(client, old, model, dimension),
        )
    call(
        policy,
        f"Checking the collection at {where}",
        lambda: check_dimension(collection, where, model, dimension),
    )
    return collection


def space(collection: Collection) -> str:
    config: dict[str, Any] = dict(collection.configuration or {})
    for index in ("hnsw", "spann"):
        if config.get(index):
            return str(config[index].get("space", "l2"))
    return str((collection.metadata or {}).get("hnsw:space", "l2"))


def check_dimension(collection: Collection, folder: str, model: str, dimension: int) -> None:
    meta = collection.metadata or {}
    stored = meta.get(DIMENSION_KEY)
    if stored is None and collection.count():
        sample = collection.peek(1)["embeddings"]
        stored = len(sample[0]) if sample is not None and len(sample) else None
    if stored is not None and int(stored) != dimension:
        raise StoreMismatchError(
            f"The store in {folder} holds {stored}-dimensional vectors "
            f"(model {meta.get(MODEL_KEY, 'unknown')!r}) but {model!r} makes {dimension}-"
            "dimensional ones. Use the model the store was built with, or ingest into a new store."
        )
    if meta.get(MODEL_KEY) not in (None, model):
        log.warning(
            "The store in %s was built with %r, queried with %r (same dimension).",
            folder,
            meta.get(MODEL_KEY),
            model,
        )


def convert_to_cosine(client: ClientAPI, old: Collection, model: str, dimension: int) -> Collection:
    """Copy every record into a new cosine collection, then swap it in under the old name."""
    log.warning("Converting the collection %r to the cosine space.", old.name)
    staging = f"{COLLECTION}-cosine-staging"
    existing = {c.name for c in client.list_collections()}
    if staging in existing:
        client.delete_collection(staging)
    new = client.create_collection(
        staging,
        metadata={
            **{k: v for k, v in (old.metadata or {}).items() if not k.startswith("hnsw:")},
            MODEL_KEY: model,
            DIMENSION_KEY: dimension,
        },
        configuration={"hnsw": {"space": "cosine"}},
        embedding_function=None,
    )
    total = old.count()
    for offset in range(0, total, BATCH):
        page = old.get(limit=BATCH, offset=offset, include=["documents", "metadatas", "embeddings"])
        new.add(
            ids=page["ids"],
            documents=page["documents"],
            metadatas=page["metadatas"],
            embeddings=page["embeddings"],
        )
    client.delete_collection(old.name)
    new.modify(name=COLLECTION)
    return new
