"""The ragbrain collection in Chroma: opening or creating it, and checking its distance space,
dimension and embedding model (converting another space to cosine on request)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ragbrain.errors import StoreMismatchError, StoreNotFoundError
from ragbrain.models.embeddings import EMBEDDING_CHOICES, embeddings_for, model_name_of
from ragbrain.store.keys import BATCH, COLLECTION, DIMENSION_KEY, MODEL_KEY
from ragbrain.store.resilience import StorePolicy, call

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from langchain_core.embeddings import Embeddings

log = logging.getLogger(__name__)


def open_collection(
    client: ClientAPI,
    where: str,
    hint: str,
    *,
    embeddings: Embeddings | None,
    create: bool,
    convert_space: bool,
    policy: StorePolicy,
) -> tuple[Collection, Embeddings]:
    """The ragbrain collection behind ``client``, checked (and with ``create``, made), and
    the embeddings that read it.

    Args:
        client: The Chroma client (``connect``).
        where: The folder or server, for messages.
        hint: The CLI option that names it (``--store DIR``), for messages.
        embeddings: The model that embeds chunks and queries; None loads the model the
            collection records (``embeddings_for``), or for a new one the default.
        create: Create the collection if it is missing.
        convert_space: Copy a collection of another distance space into a cosine one.
        policy: Deadline and retries of each Chroma call.

    Raises:
        StoreNotFoundError: No collection there and ``create`` is false.
        StoreMismatchError: Another distance space (without ``convert_space``) or dimension,
            another model ragbrain knows by name, or (``embeddings`` None) a model it cannot
            load.
    """
    existing: Collection | None
    try:
        existing = call(
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
        existing = None
    if embeddings is None:
        embeddings = _recorded_embeddings(existing, where)
    dimension = len(embeddings.embed_query("dimension probe"))
    model = model_name_of(embeddings)
    if existing is not None:
        collection = existing
    else:
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
    checked = collection
    call(
        policy,
        f"Checking the collection at {where}",
        lambda: check_dimension(checked, where, model, dimension),
    )
    return collection, embeddings


def _recorded_embeddings(collection: Collection | None, where: str) -> Embeddings:
    """The embeddings of the model a collection records (the default for a new store)."""
    recorded = None if collection is None else (collection.metadata or {}).get(MODEL_KEY)
    if recorded is not None and recorded not in EMBEDDING_CHOICES.values():
        raise StoreMismatchError(
            f"The store in {where} was built with {recorded!r}, which ragbrain cannot load by "
            "name: pass the same embeddings object (Python: Store.open(path, embeddings))."
        )
    return embeddings_for(None if recorded is None else str(recorded))


def _known_model(name: object) -> bool:
    return name in EMBEDDING_CHOICES.values()


def _choice_of(name: str) -> str:
    return next((key for key, value in EMBEDDING_CHOICES.items() if value == name), name)


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
            "dimensional ones. Use the model the store was built with, or ingest into a new store"
            + (
                f", or re-embed this one: `ragbrain ingest NOTES_DIR --store {folder} "
                f"--embedding {_choice_of(model)} --re-embed`."
                if _known_model(model) and _known_model(meta.get(MODEL_KEY))
                else "."
            )
        )
    recorded = meta.get(MODEL_KEY)
    if recorded not in (None, model) and _known_model(recorded) and _known_model(model):
        choice = _choice_of(str(recorded))
        raise StoreMismatchError(
            f"The store in {folder} was built with {recorded!r}; its distances mean nothing "
            f"to {model!r} (the same dimension does not make them comparable). Open it "
            f"without choosing a model (readers use the store's), keep ingesting with "
            f"`--embedding {choice}`, or re-embed the store with the other model: "
            f"`ragbrain ingest NOTES_DIR --store {folder} --embedding {_choice_of(model)} "
            "--re-embed` (NOTES_DIR: the folder it was ingested from)."
        )
    if recorded not in (None, model):
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
