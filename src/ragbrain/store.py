"""Opening the Chroma store (embedded), checking its space and dimension, and searching it."""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.embeddings import model_name_of
from ragbrain.errors import InvalidInputError, StoreMismatchError, StoreNotFoundError
from ragbrain.state import Hit

if TYPE_CHECKING:
    import chromadb
    from chromadb.api.models.Collection import Collection
    from langchain_core.embeddings import Embeddings

log = logging.getLogger(__name__)

COLLECTION = "ragbrain"
STORE_ENV = "RAGBRAIN_STORE"
MODEL_KEY = "ragbrain:embedding_model"
DIMENSION_KEY = "ragbrain:dimension"
_BATCH = 1000  # Chroma caps how many records one call may carry.


def default_store_path() -> Path:
    """``$RAGBRAIN_STORE``, else ``$XDG_DATA_HOME/ragbrain/store`` (``~/.local/share/...``)."""
    if env := os.environ.get(STORE_ENV):
        return Path(env).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data_home) / "ragbrain" / "store"


def _client(path: Path) -> chromadb.ClientAPI:
    import chromadb

    return chromadb.PersistentClient(
        path=str(path), settings=chromadb.Settings(anonymized_telemetry=False)
    )


def _space(collection: Collection) -> str:
    config = collection.configuration or {}
    for index in ("hnsw", "spann"):
        if config.get(index):
            return str(config[index].get("space", "l2"))
    return str((collection.metadata or {}).get("hnsw:space", "l2"))


def _type_where(types: Sequence[str] | None) -> dict[str, Any] | None:
    if not types:
        return None
    if len(types) == 1:
        return {"type": types[0]}
    return {"type": {"$in": list(types)}}


class Store:
    """A cosine Chroma collection and the embeddings that fill it."""

    def __init__(self, collection: Collection, embeddings: Embeddings, *, location: str) -> None:
        self.collection = collection
        self.embeddings = embeddings
        self.location = location
        self._lock = threading.Lock()
        self._embed_query = lru_cache(maxsize=256)(self._embed_query_uncached)

    @classmethod
    def open(
        cls,
        path: str | Path | None,
        embeddings: Embeddings,
        *,
        create: bool = False,
        convert_space: bool = False,
    ) -> Store:
        """Open (or with ``create``, create) the store in ``path``.

        Args:
            path: The store folder; None means ``default_store_path()``.
            embeddings: The model that embeds chunks and queries.
            create: Create the folder and a cosine collection if they are missing.
            convert_space: Copy a collection of another distance space into a cosine one
                instead of refusing it.

        Raises:
            StoreNotFoundError: No store there and ``create`` is false.
            StoreMismatchError: The collection's space is not cosine, or its vectors have
                another dimension than ``embeddings`` produces.
        """
        folder = Path(path).expanduser() if path is not None else default_store_path()
        if folder.exists() and not folder.is_dir():
            raise StoreNotFoundError(f"The store path {folder} is a file, not a folder.")
        if not create and not folder.is_dir():
            raise StoreNotFoundError(
                f"No ragbrain store at {folder}. Create one with "
                f"`ragbrain ingest NOTES_DIR --store {folder}`."
            )
        from chromadb.errors import NotFoundError

        client = _client(folder)
        dimension = len(embeddings.embed_query("dimension probe"))
        model = model_name_of(embeddings)
        try:
            collection = client.get_collection(COLLECTION, embedding_function=None)
        except NotFoundError:
            if not create:
                raise StoreNotFoundError(
                    f"The folder {folder} holds no ragbrain collection. Create one with "
                    f"`ragbrain ingest NOTES_DIR --store {folder}`."
                ) from None
            collection = client.create_collection(
                COLLECTION,
                metadata={MODEL_KEY: model, DIMENSION_KEY: dimension},
                configuration={"hnsw": {"space": "cosine"}},
                embedding_function=None,
            )
        space = _space(collection)
        if space != "cosine":
            if not convert_space:
                raise StoreMismatchError(
                    f"The collection in {folder} uses the {space!r} distance space; ragbrain "
                    "needs 'cosine'. Pass convert_space=True (CLI: --convert-space) to copy it "
                    "into a cosine collection."
                )
            collection = _convert_to_cosine(client, collection, model, dimension)
        _check_dimension(collection, folder, model, dimension)
        return cls(collection, embeddings, location=str(folder))

    def _embed_query_uncached(self, query: str) -> tuple[float, ...]:
        vector = self.embeddings.embed_query(query)
        if not all(math.isfinite(x) for x in vector) or not any(vector):
            raise InvalidInputError(f"The embedding of {query[:40]!r} is zero or not finite.")
        return tuple(vector)

    def count(self) -> int:
        """Number of chunks in the store."""
        return int(self.collection.count())

    def search(self, query: str, k: int, types: Sequence[str] | None = None) -> list[Hit]:
        """The ``k`` chunks nearest to ``query``, optionally only of the given types.

        Distances are cosine (0 = same direction); tiny negative ones from float error are
        clamped to 0. Results are sorted, best first.
        """
        vector = list(self._embed_query(query))
        result = self.collection.query(
            query_embeddings=[vector],
            n_results=k,
            where=_type_where(types),
            include=["documents", "metadatas", "distances"],
        )
        ids = result["ids"][0]
        texts = (result["documents"] or [[]])[0]
        metadatas = (result["metadatas"] or [[]])[0]
        distances = (result["distances"] or [[]])[0]
        hits = [
            Hit(
                id=id_,
                text=text or "",
                metadata=dict(meta or {}),
                distance=max(0.0, float(dist)),
                from_fallback=False,
            )
            for id_, text, meta, dist in zip(ids, texts, metadatas, distances, strict=True)
        ]
        return sorted(hits, key=lambda h: h["distance"])

    def ids_by_source(self, root: str) -> dict[str, set[str]]:
        """Chunk ids of every file ingested from ``root``, by source path."""
        found = self.collection.get(where={"root": root}, include=["metadatas"])
        by_source: dict[str, set[str]] = {}
        for id_, meta in zip(found["ids"], found["metadatas"] or [], strict=True):
            by_source.setdefault(str((meta or {}).get("source", "")), set()).add(id_)
        return by_source

    def upsert(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[dict[str, Any]],
        vectors: Sequence[Sequence[float]],
    ) -> None:
        """Write chunks with their vectors; an existing id is overwritten, never duplicated."""
        with self._lock:
            for start in range(0, len(ids), _BATCH):
                end = start + _BATCH
                self.collection.upsert(
                    ids=list(ids[start:end]),
                    documents=list(texts[start:end]),
                    metadatas=[dict(m) for m in metadatas[start:end]],
                    embeddings=[list(v) for v in vectors[start:end]],
                )

    def delete(self, ids: Sequence[str]) -> None:
        """Remove chunks by id."""
        with self._lock:
            for start in range(0, len(ids), _BATCH):
                self.collection.delete(ids=list(ids[start : start + _BATCH]))

    def types(self) -> dict[str, int]:
        """Chunk counts per note type."""
        counts: dict[str, int] = {}
        for meta in self.collection.get(include=["metadatas"])["metadatas"] or []:
            type_ = str((meta or {}).get("type", ""))
            counts[type_] = counts.get(type_, 0) + 1
        return counts


def _check_dimension(collection: Collection, folder: Path, model: str, dimension: int) -> None:
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


def _convert_to_cosine(
    client: chromadb.ClientAPI, old: Collection, model: str, dimension: int
) -> Collection:
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
    for offset in range(0, total, _BATCH):
        page = old.get(
            limit=_BATCH, offset=offset, include=["documents", "metadatas", "embeddings"]
        )
        new.add(
            ids=page["ids"],
            documents=page["documents"],
            metadatas=page["metadatas"],
            embeddings=page["embeddings"],
        )
    client.delete_collection(old.name)
    new.modify(name=COLLECTION)
    return new
