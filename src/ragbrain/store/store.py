"""Store: one cosine Chroma collection and the embeddings that fill it.

``Store`` opens a store (a folder or a server), follows other processes' writes, and does
everything else a store does, in this order: reading chunks back (listings page by page,
chunks by id or by source, counts per type), searching (the chunks nearest to a query with
type and scope filters, chunks by id with their distance to a query, the query vectors'
cache, the note types), writing (under the writer lock, and crash repair) and its records
in the collection's metadata (the ledger, the gate and off-topic records, the model).
The rooms beside it hold what it calls: ``connect`` (reaching Chroma), ``processes``
(following, the locks, repair), ``ledger``, ``search`` (filtered search) and ``lexical``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import numpy as np

from ragbrain.checks import check_embeddings, check_location
from ragbrain.errors import InvalidInputError, StoreMismatchError, StoreNotFoundError
from ragbrain.models.embeddings import EMBEDDING_CHOICES, embeddings_for, model_name_of
from ragbrain.paths import cache_root
from ragbrain.query.typematch import stored_spellings
from ragbrain.store.connect import ServerAccess, StorePolicy, call, connect, open_collection
from ragbrain.store.ledger import (
    BATCH,
    COLLECTION,
    DIMENSION_KEY,
    GATE_KEY,
    GATE_SOURCE_KEY,
    GENERATION_KEY,
    MODEL_KEY,
    OFFTOPIC_KEY,
    PAGE,
    Ledger,
    LedgerView,
    bump,
    current_metadata,
)
from ragbrain.store.ledger import update as update_ledger
from ragbrain.store.processes import (
    Follower,
    StoreGoneError,
    fresh_client,
    release_memory,
    restore_missing_vectors,
    retire,
    writer_lock,
)
from ragbrain.store.search import (
    HeldRows,
    Hit,
    KnownScope,
    KnownTypes,
    Rows,
    ScopeVectors,
    TypeIndex,
    scan_nearest,
    scoped_nearest,
    type_where,
    typed_nearest,
)

if TYPE_CHECKING:
    from functools import _lru_cache_wrapper

    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import GetResult, Include
    from langchain_core.embeddings import Embeddings

    from ragbrain.query.filters import Filters
    from ragbrain.store.vectorstore import RagbrainChroma

log = logging.getLogger(__name__)

T = TypeVar("T")


class _Live:
    """The store's current collection, for the parts that keep a handle on it: every use
    goes through ``Store.collection``, so it follows other processes' writes."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store.collection, name)


#: How long a server store's list of types is reused when no index of the store has it.
TYPES_SECONDS = 5.0


class Store:
    """A cosine Chroma collection and the embeddings that fill it.

    A store on a folder follows other processes: before each read and write it checks
    (``follow``: a stat of Chroma's SQLite file, and a small read of it when that moved)
    whether another process wrote since it last looked, and if so reopens its Chroma client
    with fresh segments. It writes only inside ``writing``: holding the writer lock, after
    following what others wrote.

    Its methods, in order: opening and following; reading chunks back; searching; writing
    chunks; the store's records (the module's docstring says what each holds).
    """

    embeddings: Embeddings
    location: str
    policy: StorePolicy
    folder: Path | None  # None for a server-backed store
    client: ClientAPI | None
    _follower: Follower | None  # None for a store without a SQLite file to follow
    _writers: threading.RLock  # one writing thread at a time in this process
    _write_depth: int
    _writer_interrupted: bool  # see ``writing``
    _lock: threading.Lock
    _embed_query: _lru_cache_wrapper[tuple[float, ...]]
    _type_index: TypeIndex
    _types_seen: tuple[object, float, list[str]] | None
    _scope_vectors: ScopeVectors
    _rows: HeldRows
    _ledger: LedgerView

    def __init__(
        self,
        collection: Collection,
        embeddings: Embeddings,
        *,
        location: str,
        policy: StorePolicy | None = None,
        folder: Path | None = None,
        client: ClientAPI | None = None,
        follows_model: bool = False,
    ) -> None:
        """Args:
        follows_model: ``embeddings`` is the model the store recorded when it was opened
            (none was chosen): if another process re-embeds the store with another model,
            this store switches to it; otherwise it refuses to search until reopened.
        """
        self._collection = collection
        self.embeddings = embeddings
        self._follows_model = follows_model
        # The model the store recorded when opened: only a change of it is a re-embed.
        self._recorded_model = (collection.metadata or {}).get(MODEL_KEY)
        self._mismatch: str | None = None
        self._writers = threading.RLock()  # one writing thread at a time in this process
        self._write_depth = 0
        self._follow_lock = threading.Lock()
        # Whether ``client`` is the store's own (``Store.open``, a reopen), not a caller's.
        self._owns_client = False
        self.client = client  # the Chroma client behind ``collection`` (``as_vectorstore``)
        self.location = location
        self.policy = policy or StorePolicy()
        self.folder = folder  # None for a server-backed store
        self._lock = threading.Lock()
        self._writer_interrupted = False  # see ``writing``
        self._embed_query = lru_cache(maxsize=256)(self._embed_query_uncached)
        live = cast("Collection", _Live(self))
        self._type_index = TypeIndex(
            live, cache_folder=self.sidecar("type-vectors"), version=self.version
        )
        self._types_seen = None
        self._scope_vectors = ScopeVectors(live)
        self._rows = HeldRows(
            self.count, lambda: self.pages(["documents", "metadatas", "embeddings"]), self.version
        )
        self._ledger = LedgerView(live, self.call, self.version)
        sqlite = self.sqlite_file()
        self._follower = None if sqlite is None else Follower(sqlite, self._generation)
        if self._follower is not None:
            self._follower.settle()

    # --- following other processes (issue: many processes, one store) ---
    @property
    def collection(self) -> Collection:
        """The Chroma collection, reopened first if another process wrote (``follow``)."""
        self.follow()
        return self._collection

    @collection.setter
    def collection(self, collection: Collection) -> None:
        self._collection = collection

    def sqlite_file(self) -> Path | None:
        """The SQLite file every write to the store changes; None for a server store."""
        return None if self.folder is None else self.folder / "chroma.sqlite3"

    def _generation(self) -> object:
        return current_metadata(self._collection).get(GENERATION_KEY)

    def follow(self) -> None:
        """Reopen the Chroma client with fresh segments if another process wrote since this
        store last looked (a stat when nothing changed; see ``ragbrain.store.processes``). Not
        while this process writes: its own client sees its own writes.

        Raises:
            StoreNotFoundError: The store's folder is gone (deleted, moved, being replaced);
                it is used again once it is back.
        """
        if self._follower is None or self._write_depth:
            return
        if not self._changed():
            return
        with self._follow_lock:
            if not self._write_depth and self._changed():
                self._reopen()

    def _changed(self) -> bool:
        assert self._follower is not None
        try:
            return self._follower.changed()
        except StoreGoneError:
            raise StoreNotFoundError(
                f"The store {self.location} is gone: {self._follower.sqlite} is missing (the "
                "folder was deleted, moved or is being replaced). It is used again as soon "
                "as it is back."
            ) from None

    def _reopen(self) -> None:
        """A fresh client and collection, the model checked, the caches that may be stale
        dropped (the lexical index follows the store's generation by itself)."""
        assert self._follower is not None
        started = time.perf_counter()
        self._follower.settle()  # before opening: a write after this is seen next time
        release_memory()  # what the clients dropped since the last reopen held
        collection, client = self.call("Reopening the store", self._fresh_collection)
        self._check_model(collection)
        old, self._collection, self.client = self.client, collection, client
        if self._owns_client:
            retire(old)
        self._owns_client = True
        self._types_seen = None
        self._rows.forget()
        self._ledger.forget()
        log.info(
            "Another process wrote to %s: reopened it (%.0f ms).",
            self.location,
            (time.perf_counter() - started) * 1e3,
        )

    def _fresh_collection(self) -> tuple[Collection, ClientAPI]:
        """A client that reads the folder afresh, and the collection through it."""
        assert self.folder is not None
        client = fresh_client(self.folder)
        return client.get_collection(COLLECTION, embedding_function=None), client

    def _check_model(self, collection: Collection) -> None:
        """After another process's write: if it re-embedded the store with another model,
        switch to that model (``follows_model``), else refuse to search from now on."""
        recorded = (collection.metadata or {}).get(MODEL_KEY)
        current = self.model
        if recorded == self._recorded_model:
            return  # as when opened (a caller's model of the same dimension is its choice)
        self._recorded_model = recorded
        self._mismatch = None
        if recorded in (None, current):
            return
        if self._follows_model and recorded in EMBEDDING_CHOICES.values():
            log.warning(
                "%s was re-embedded with %s by another process: queries now use it.",
                self.location,
                recorded,
            )
            self.embeddings = embeddings_for(str(recorded))
            self.forget_queries()
            return
        self._mismatch = (
            f"The store {self.location} was re-embedded with {recorded!r} by another process, "
            f"but this process embeds with {current!r}: its queries would mean nothing "
            "against the new vectors, so it does not search. Open the store again without "
            f"choosing a model (it then uses the store's), or with {recorded!r}."
        )

    def _refuse_a_stale_model(self) -> None:
        """Raise ``StoreMismatchError`` if another process re-embedded the store with a model
        this store cannot switch to (``_check_model``), after following it."""
        self.follow()
        if self._mismatch is not None:
            raise StoreMismatchError(self._mismatch)

    def sidecar(self, name: str, suffix: str = "") -> Path:
        """Where ragbrain keeps a file or folder beside the collection: ``<store>/<name><suffix>``,
        or for a server store, ``$RAGBRAIN_CACHE/<name>/<digest of the URL><suffix>``."""
        if self.folder is not None:
            return self.folder / f"{name}{suffix}"
        digest = hashlib.sha256(self.location.encode()).hexdigest()[:16]
        return cache_root() / name / f"{digest}{suffix}"

    def learn_types_from(self, known: Callable[[], KnownTypes]) -> None:
        """Let type-filtered searches read chunk types from an index of the whole store
        (``known()`` returns its current version; the lexical index registers itself), and
        keep the rare types' vectors if they are missing (``TypeIndex.learn_from``)."""
        self._type_index.learn_from(known)

    def keep_small_types(self, known: KnownTypes) -> list[str]:
        """Keep on disk the vectors of the types too rare for over-fetching to find (see
        ``TypeIndex.keep_small_types``); ``known`` must be in step with the store."""
        return self._type_index.keep_small_types(known)

    @classmethod
    def open(
        cls,
        path: str | Path | None,
        embeddings: Embeddings | None = None,
        *,
        create: bool = False,
        convert_space: bool = False,
        server: str | None = None,
        policy: StorePolicy | None = None,
        access: ServerAccess | None = None,
    ) -> Store:
        """Open (or with ``create``, create) the store in ``path`` or on a Chroma ``server``.

        Args:
            path: The store folder; None means ``default_store_path()``. Ignored with ``server``.
            embeddings: The model that embeds chunks and queries; None loads the model the
                store records (``embeddings_for``), or for a new store the default.
            create: Create the folder and a cosine collection if they are missing.
            convert_space: Copy a collection of another distance space into a cosine one
                instead of refusing it.
            server: ``http://HOST:PORT`` of a Chroma server (``chroma run``) to use instead
                of a folder.
            policy: Deadline and retries of every store call; None is ``StorePolicy()``.
            access: With ``server``: its token, tenant and database (``ServerAccess``); None
                reads them from the environment (``$RAGBRAIN_SERVER_TOKEN_FILE`` ...).

        Raises:
            StoreNotFoundError: No store there and ``create`` is false.
            StoreMismatchError: The collection's space is not cosine, its vectors have
                another dimension than ``embeddings`` produces, it was built with another
                model ragbrain knows by name, or (``embeddings`` None) with one it cannot load.
            StoreUnavailableError: The server could not be reached within the deadline.
        """
        check_location(path, "Store.open")
        check_embeddings(embeddings, "Store.open")
        policy = policy or StorePolicy()
        client, where, folder = connect(path, server, policy, create=create, access=access)
        hint = f"--server {server}" if server else f"--store {where}"
        follows_model = embeddings is None
        collection, embeddings = open_collection(
            client,
            where,
            hint,
            embeddings=embeddings,
            model=None if embeddings is None else model_name_of(embeddings),
            create=create,
            convert_space=convert_space,
            policy=policy,
        )
        store = cls(
            collection,
            embeddings,
            location=where,
            policy=policy,
            folder=folder,
            client=client,
            follows_model=follows_model,
        )
        store._owns_client = folder is not None
        return store

    def as_vectorstore(
        self, *, type_key: str = "type", source_key: str = "source", **unknown: Any
    ) -> RagbrainChroma:
        """This store as a langchain-chroma ``Chroma`` (the same client and collection,
        embedding with this store's model), for any LangChain code to read and write: its
        writes go through the store, so the lexical index follows
        (``ragbrain.store.vectorstore``).

        Args:
            type_key: The metadata key of written documents that holds their note type
                (an app's ``kind``): its value becomes ragbrain's ``type``, the key is kept.
            source_key: The key that holds their source (an app's ``url``), likewise.

        Raises:
            InvalidInputError: An unknown keyword argument (naming the accepted ones), or the
                store was made without its client (not by ``Store.open``).
            WrongTypeError: A key that is not a non-empty string.
        """
        # Imported when called: langchain-chroma loads only for callers that use it.
        from ragbrain.store.vectorstore import as_vectorstore

        return as_vectorstore(self, type_key=type_key, source_key=source_key, **unknown)

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """Run one Chroma operation under the store's deadline and retry policy."""
        return call(self.policy, f"{what} ({self.location})", fn)

    def version(self) -> tuple[int, int] | None:
        """A token that changes whenever an embedded store's data may have (the modification
        time and size of its SQLite file, where Chroma writes every add, update and delete,
        by any process; reads leave it alone); None for a server store or an unreadable file.

        Long-lived readers compare it before paying for ``count``, which grows with the
        store (docs/decisions/measured-costs.md). Take it *before* the count it vouches for,
        so a write in between changes it again.
        """
        if self.folder is None:
            return None
        try:
            stat = (self.folder / "chroma.sqlite3").stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    # --- reading chunks back (every read under the store's deadline) ---

    def count(self) -> int:
        """Number of chunks in the store."""
        return int(self.call("Counting chunks", self.collection.count))

    def pages(self, include: Include, where: dict[str, Any] | None = None) -> Iterator[GetResult]:
        """Every record (or those matching ``where``), ``PAGE`` at a time, as Chroma's
        ``get`` returns them; a store of any size, in the collection's own order."""
        offset = 0
        while True:
            page = self.call(
                "Listing chunks",
                partial(
                    self.collection.get, where=where, include=include, limit=PAGE, offset=offset
                ),
            )
            if not page["ids"]:
                return
            yield page
            offset += len(page["ids"])

    def ids_by_source(self, root: str, sources: Sequence[str] | None = None) -> dict[str, set[str]]:
        """Chunk ids of every file ingested from ``root`` (or only of ``sources``), by source
        path."""
        return {
            source: set(chunks) for source, chunks in self.metadata_by_source(root, sources).items()
        }

    def metadata_by_source(
        self, root: str, sources: Sequence[str] | None = None
    ) -> dict[str, dict[str, dict[str, Any]]]:
        """The metadata of every chunk ingested from ``root`` (or only of ``sources``), by
        source path, then by chunk id."""
        by_source: dict[str, dict[str, dict[str, Any]]] = {}
        where: dict[str, Any] = {"root": root}
        if sources is not None:
            where = {"$and": [where, {"source": {"$in": list(sources) or [""]}}]}
        for page in self.pages(["metadatas"], where=where):
            for id_, meta in zip(page["ids"], page["metadatas"] or [], strict=True):
                source = str((meta or {}).get("source", ""))
                by_source.setdefault(source, {})[id_] = dict(meta or {})
        return by_source

    def all_ids(self) -> list[str]:
        """Every chunk id in the store (what the lexical index's fingerprint is checked against)."""
        found = self.call("Listing chunk ids", lambda: self.collection.get(include=[]))
        return list(found["ids"])

    def texts_and_types(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """``(id, text, type)`` of the given chunks (missing ids are left out)."""
        return [(id_, text, str(meta.get("type", ""))) for id_, text, meta in self.rows(ids)]

    def rows(self, ids: Sequence[str]) -> list[tuple[str, str, dict[str, Any]]]:
        """``(id, text, metadata)`` of the given chunks (missing ids are left out)."""
        rows: list[tuple[str, str, dict[str, Any]]] = []
        for start in range(0, len(ids), BATCH):
            batch = list(ids[start : start + BATCH])
            found = self.call(
                "Reading chunks",
                lambda batch=batch: self.collection.get(  # type: ignore[misc]
                    ids=batch, include=["documents", "metadatas"]
                ),
            )
            texts = found["documents"] or [""] * len(found["ids"])
            metas = found["metadatas"] or [{}] * len(found["ids"])
            rows += [
                (id_, text or "", dict(meta or {}))
                for id_, text, meta in zip(found["ids"], texts, metas, strict=True)
            ]
        return rows

    def chunks_of(self, source: str) -> list[tuple[str, dict[str, Any]]]:
        """``(text, metadata)`` of every chunk whose ``source`` is exactly ``source``."""
        found: list[tuple[str, dict[str, Any]]] = []
        for page in self.pages(["documents", "metadatas"], where={"source": source}):
            texts = page["documents"] or [""] * len(page["ids"])
            metas = page["metadatas"] or [{}] * len(page["ids"])
            found += [(t or "", dict(m or {})) for t, m in zip(texts, metas, strict=True)]
        return found

    def types(self) -> dict[str, int]:
        """Chunk counts per note type."""
        counts: dict[str, int] = {}
        for page in self.pages(["metadatas"]):
            for meta in page["metadatas"] or []:
                type_ = str((meta or {}).get("type", ""))
                counts[type_] = counts.get(type_, 0) + 1
        return counts

    # --- searching (what the graph's nodes ask of a store) ---

    def _query_vector(self, query: str) -> tuple[float, ...]:
        """``embed_query``, refused when another process re-embedded the store with a model
        this store cannot switch to."""
        self._refuse_a_stale_model()
        return self._embed_query(query)

    def embed_query(self, query: str) -> tuple[float, ...]:
        """The query's vector as searches use it: from a small per-store cache, checked to be
        finite and not zero."""
        return self._query_vector(query)

    def forget_queries(self) -> None:
        """Empty the query-vector cache, so the next searches embed each query afresh."""
        self._embed_query.cache_clear()

    def _embed_query_uncached(self, query: str) -> tuple[float, ...]:
        vector = self.embeddings.embed_query(query)
        if not all(math.isfinite(x) for x in vector) or not any(vector):
            raise InvalidInputError(f"The embedding of {query[:40]!r} is zero or not finite.")
        return tuple(vector)

    def search_vector(self, vector: Sequence[float], k: int) -> list[Hit]:
        """``search`` by a query vector already embedded (many queries embedded in one batch:
        ``ragbrain.models.batch.embed_queries``), without type or scope filters.

        Raises:
            InvalidInputError: A vector that is zero or not finite.
        """
        if not all(math.isfinite(x) for x in vector) or not any(vector):
            raise InvalidInputError("A query vector is zero or not finite.")
        return self._nearest([list(vector)], k, None)

    def search(
        self,
        query: str,
        k: int,
        types: Sequence[str] | None = None,
        filters: Filters | None = None,
    ) -> list[Hit]:
        """The ``k`` chunks nearest to ``query``, optionally only of the given types
        (matched case-insensitively: ``sqlite`` finds ``SQLite``; see ``known_types``) and
        only those that pass ``filters`` (paths, tags, time; ``ragbrain.query.filters``).

        Distances are cosine (0 = same direction); tiny negative ones from float error are
        clamped to 0. Results are sorted, best first.
        """
        vector: list[Sequence[float]] = [self._query_vector(query)]
        if filters:
            return self._scoped(vector[0], k, types, filters)
        if not types:
            return self._nearest(vector, k, None)
        # Types match case-insensitively: filter on every stored spelling of each.
        types = stored_spellings(types, self.known_types())
        # Type filter: Chroma's `where` is 25-70x slower at 100k chunks, so first
        # over-fetch unfiltered and filter in memory (see search.py); a rare type falls
        # through to Chroma's own filter.
        hits = typed_nearest(self.collection, self._type_index, vector[0], k, set(types))
        return hits if hits is not None else self._nearest(vector, k, type_where(types))

    def scope_index(self) -> KnownScope | None:
        """The index of the whole store that masks chunks by filters (the lexical index, once
        registered with ``learn_types_from``); None without one."""
        known = self._type_index.whole_store()
        return known if isinstance(known, KnownScope) else None

    def _scoped(
        self, vector: Sequence[float], k: int, types: Sequence[str] | None, filters: Filters
    ) -> list[Hit]:
        """Filtered search: by the whole-store index's mask when there is one and it agrees
        with Chroma (``store.scoped``), else by reading the candidates' metadata."""
        known = self.scope_index()
        if known is not None:
            hits = self.call(
                "Searching",
                lambda: scoped_nearest(
                    self.collection, known, self._scope_vectors, vector, k, types, filters
                ),
            )
            if hits is not None:
                return sorted(hits, key=lambda h: h["distance"])
        # Chroma narrows what it can (every stored spelling of each type, the time range);
        # paths and tags are checked in memory, chunk by chunk.
        spelled = type_where(stored_spellings(types, self.known_types())) if types else None
        hard = filters.types and type_where(stored_spellings(filters.types, self.known_types()))
        clauses = [c for c in (spelled, hard, filters.chroma_where()) if c]
        where = None if not clauses else clauses[0] if len(clauses) == 1 else {"$and": clauses}
        pages = (
            (list(page["ids"]), list(page["metadatas"] or []))
            for page in self.pages(["metadatas"], where)
        )
        candidates = list(pages)  # each page read under the store's deadline
        hits = self.call(
            "Searching",
            lambda: scan_nearest(self.collection, candidates, vector, k, types, filters),
        )
        return sorted(hits, key=lambda h: h["distance"])

    def _nearest(
        self, vector: list[Sequence[float]], k: int, where: dict[str, Any] | None
    ) -> list[Hit]:
        # Chroma refuses tuples (the query-embedding cache holds tuples).
        embeddings: list[Sequence[float]] = [list(v) for v in vector]
        result = self.call(
            "Searching",
            lambda: self.collection.query(
                query_embeddings=embeddings,
                n_results=k,
                where=where,
                include=["documents", "metadatas", "distances"],
            ),
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

    def hits_by_id(self, query: str, ids: Sequence[str]) -> list[Hit]:
        """The given chunks as hits, each with its true cosine distance to ``query``.

        Computed from the chunk's stored embedding, so a chunk found by the lexical index
        carries the same kind of distance as one found by the vector search. Read from the
        copy of a small store held in memory when it is current (``search.HeldRows``),
        else from Chroma. An id the store lacks is left out; one asked twice is read once.
        """
        ids = list(dict.fromkeys(ids))
        if not ids:
            return []
        query_vector = np.asarray(self._query_vector(query), dtype=np.float64)
        rows = self._rows.rows(ids)
        if rows is None:
            found = self.call(
                "Reading chunks",
                lambda: self.collection.get(
                    ids=ids, include=["documents", "metadatas", "embeddings"]
                ),
            )
            if not found["ids"]:
                return []
            count = len(found["ids"])
            rows = Rows(
                ids=list(found["ids"]),
                texts=[text or "" for text in found["documents"] or [""] * count],
                metadatas=[dict(meta or {}) for meta in found["metadatas"] or [{}] * count],
                vectors=np.asarray(found["embeddings"], dtype=np.float64).reshape(count, -1),
            )
        if not rows.ids:
            return []
        norms = np.linalg.norm(rows.vectors, axis=1) * np.linalg.norm(query_vector)
        cosines = (rows.vectors @ query_vector) / np.where(norms > 0, norms, 1.0)
        return [
            Hit(
                id=id_,
                text=text,
                metadata=meta,
                distance=max(0.0, 1.0 - float(cos)),
                from_fallback=False,
            )
            for id_, text, meta, cos in zip(
                rows.ids, rows.texts, rows.metadatas, cosines, strict=True
            )
        ]

    def known_types(self) -> list[str]:
        """Every note type in the store, as written: from the index of the whole store when
        one is registered (``learn_types_from``), else read from Chroma and kept until the
        store changes (a server store's for at most ``TYPES_SECONDS``)."""
        known = self._type_index.known_types()
        if known is not None:
            return known
        version, now = self.version(), time.monotonic()
        seen = self._types_seen
        if seen is not None and (
            (version is not None and seen[0] == version)
            or (version is None and now - seen[1] < TYPES_SECONDS)
        ):
            return seen[2]
        names = sorted(self.types())
        self._types_seen = (version, now, names)
        return names

    # --- writing chunks (reading them too, to repair a crash) ---

    @contextlib.contextmanager
    def writing(self, wait: float | None = None) -> Iterator[None]:
        """Hold the store's writer lock (embedded stores only; a server orders writes itself).

        Another writer is waited for, ``wait`` seconds at most (None: ``processes.lock_wait``;
        0 tries once); once the lock is held, what
        other processes wrote is followed (``follow``) before anything is written, so this
        process never writes over a newer store with an older view of it. Re-entrant: every
        write method of the store takes it, inside a caller's ``writing`` too.

        Finding that the last writer was killed while writing makes this store's next
        ``restore_missing_vectors`` calls thorough, until one finds the index whole.

        Raises:
            StoreLockedError: Another process held the lock for the whole wait.
            StoreNotFoundError: The store's folder is gone.
            StoreMismatchError: Another process re-embedded the store with a model this
                store cannot switch to.
        """
        with self._writers:
            if self._write_depth:
                self._write_depth += 1
                try:
                    yield
                finally:
                    self._write_depth -= 1
                return
            with writer_lock(self.folder, wait) as interrupted:
                if interrupted:
                    self._writer_interrupted = True
                self._refuse_a_stale_model()
                self._write_depth = 1
                try:
                    yield
                finally:
                    self._write_depth = 0
                    if self._follower is not None:
                        self._follower.settle()  # this process's own writes: nothing to follow

    def restore_missing_vectors(self, thorough: bool | None = None) -> list[str]:
        """Write back the chunks Chroma's vector index lost in a crash (``processes``): those it
        lacks, and with ``thorough`` those it holds but no search reaches.

        Args:
            thorough: Also search every chunk by its own vector (``processes.unreachable_vectors``);
                None: when ``writing`` found that the last writer was killed.

        Returns:
            The ids written back.
        """
        automatic = thorough is None and self._writer_interrupted
        restored = restore_missing_vectors(self, unreachable=bool(thorough) or automatic)
        if automatic and not restored:
            self._writer_interrupted = False
        return restored

    def upsert(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[dict[str, Any]],
        vectors: Sequence[Sequence[float]],
    ) -> None:
        """Write chunks with their vectors; an existing id is overwritten, never duplicated.

        Raises:
            InvalidInputError: Lengths differ, or a vector is empty, NaN, infinite, all zero
                or of another dimension than the store's (nothing is written then).
        """
        self._check_vectors(ids, texts, metadatas, vectors)
        self._types_seen = None
        self._type_index.forget(ids)  # their type may change: look it up again when seen
        # Upserting by id is idempotent, so a retried batch never duplicates.
        self._in_batches(
            "Writing chunks",
            "upsert",
            ids,
            documents=texts,
            metadatas=[dict(m) for m in metadatas],
            embeddings=vectors,
        )

    def _check_vectors(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[dict[str, Any]],
        vectors: Sequence[Sequence[float]],
    ) -> None:
        self._refuse_a_stale_model()
        if not len(ids) == len(texts) == len(metadatas) == len(vectors):
            raise InvalidInputError(
                f"upsert needs as many ids, texts, metadatas and vectors; got {len(ids)}, "
                f"{len(texts)}, {len(metadatas)} and {len(vectors)}."
            )
        stored = (self.collection.metadata or {}).get(DIMENSION_KEY)
        expected = int(stored) if isinstance(stored, int | float) else None
        for id_, vector in zip(ids, vectors, strict=True):
            if expected is not None and len(vector) != expected:
                raise InvalidInputError(
                    f"The vector of chunk {id_} has {len(vector)} dimensions; the store holds "
                    f"{expected}-dimensional ones. Embed with the store's model."
                )
            if not any(vector) or not all(math.isfinite(x) for x in vector):
                raise InvalidInputError(
                    f"The vector of chunk {id_} is empty, all zero, NaN or infinite; the "
                    "embedding model returned a vector that cannot be searched."
                )

    def delete(self, ids: Sequence[str]) -> None:
        """Remove chunks by id."""
        self._type_index.forget(ids)
        self._in_batches("Deleting chunks", "delete", ids)

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Update the metadata of existing chunks (Chroma merges it key by key; a None value
        removes a key), keeping their texts and vectors: ingest records a file's new time this
        way (the time is not part of a chunk's id)."""
        if len(ids) != len(metadatas):
            raise InvalidInputError(
                f"update_metadata needs as many ids as metadatas; got {len(ids)} and "
                f"{len(metadatas)}."
            )
        self._types_seen = None
        self._type_index.forget(ids)
        self._in_batches(
            "Writing chunk metadata", "update", ids, metadatas=[dict(m) for m in metadatas]
        )

    def _in_batches(
        self,
        what: str,
        method: Literal["upsert", "update", "delete"],
        ids: Sequence[str],
        **columns: Sequence[Any],
    ) -> None:
        """Call the collection's ``method`` on each batch of ``ids`` with the same slice of
        every column, under the writer lock, then record the change so that every reader
        learns of it."""
        with self.writing(), self._lock:
            try:
                for start in range(0, len(ids), BATCH):
                    end = start + BATCH
                    batch = {name: list(values[start:end]) for name, values in columns.items()}
                    write = getattr(self.collection, method)
                    self.call(what, partial(write, ids=list(ids[start:end]), **batch))
            finally:
                self._rows.forget()  # after the write: a load begun before it is not kept
            if ids:
                self.record()

    # --- the store's records (collection metadata) ---

    @property
    def model(self) -> str:
        """The name of the model that embeds this store's queries, as a store records it
        (``ragbrain.models.embeddings.model_name_of``); its settings follow from it
        (``ragbrain.settings``)."""
        return model_name_of(self.embeddings)

    @property
    def embedding_model(self) -> str | None:
        """The embedding model behind this store's distances: the one queries are embedded
        with, unless the store records another (then None: the distances mix two models)."""
        model = self.model
        recorded = (self.collection.metadata or {}).get(MODEL_KEY)
        return model if recorded in (None, model) else None

    def ledger(self) -> Ledger:
        """The store's own record (``store.ledger``): its roots, its generation, an unfinished
        ingest. Read again only when the store may have changed (a file stat on an embedded
        store), so a reader may ask on every query."""
        return self._ledger.get()

    def record(
        self, changes: Mapping[str, Any] | None = None, *, generation: str | None = None
    ) -> str:
        """Write ``changes`` (``store.ledger`` keys; None removes one) into the store's record
        with a new generation (or ``generation``), which tells every reader that the store
        changed; returns the generation."""
        with self.writing():
            written = bump(self.collection, self.call, changes or {}, generation=generation)
        self._ledger.forget()
        return written

    def gate_threshold(self) -> float | None:
        """The gate threshold calibrated for this store, if ``ragbrain calibrate`` wrote one."""
        value = (self.collection.metadata or {}).get(GATE_KEY)
        return float(value) if isinstance(value, int | float) else None

    def set_gate_threshold(self, threshold: float, source: str) -> None:
        """Record a calibrated gate threshold (and what produced it) in the collection metadata."""
        if not 0.0 <= threshold <= 2.0:
            raise InvalidInputError(
                f"A gate threshold is a cosine distance in [0, 2], got {threshold}."
            )
        with self.writing():
            update_ledger(
                self.collection, self.call, {GATE_KEY: threshold, GATE_SOURCE_KEY: source}
            )

    def offtopic_record(self) -> str | None:
        """The off-topic cut ingest learnt for this store (JSON), if any, as stored now."""
        value = current_metadata(self.collection).get(OFFTOPIC_KEY)
        return value if isinstance(value, str) else None

    def set_offtopic_record(self, record: str) -> None:
        """Record the off-topic cut (``ragbrain.refusal.offtopic.OffTopicCut.to_json``),
        keeping the rest of the store's record as stored now."""
        with self.writing():
            update_ledger(self.collection, self.call, {OFFTOPIC_KEY: record})

    @staticmethod
    def read_gate_threshold(
        path: str | Path | None, *, server: str | None = None, policy: StorePolicy | None = None
    ) -> float | None:
        """The calibrated gate threshold of the store in ``path`` or on ``server``."""
        policy = policy or StorePolicy()
        client, where, _ = connect(path, server, policy, create=True)
        metadata = call(
            policy,
            f"Reading the gate threshold at {where}",
            lambda: client.get_collection(COLLECTION, embedding_function=None).metadata,
        )
        value = (metadata or {}).get(GATE_KEY)
        return float(value) if isinstance(value, int | float) else None
