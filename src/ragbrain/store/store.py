"""Store: one cosine Chroma collection and the embeddings that fill it.

``Store`` opens a store (a folder or a server) and follows other processes' writes; what it
does once open lives in one module per responsibility, each a part of the class
(``base.py`` says what they share): ``reading.py`` (listings and reads by id),
``searching.py`` (nearest chunks, hits by id, types), ``writing.py`` (writes under the
writer lock, crash repair) and ``records.py`` (the ledger, the gate and off-topic records,
the model). Connecting, the collection's checks and following live in the modules beside it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ragbrain.checks import check_embeddings, check_location
from ragbrain.errors import StoreMismatchError, StoreNotFoundError
from ragbrain.models.embeddings import EMBEDDING_CHOICES, embeddings_for
from ragbrain.paths import cache_root
from ragbrain.store.collection import open_collection
from ragbrain.store.connect import ServerAccess, connect
from ragbrain.store.follow import (
    Follower,
    StoreGoneError,
    fresh_client,
    release_memory,
    retire,
)
from ragbrain.store.keys import COLLECTION, MODEL_KEY
from ragbrain.store.ledger import GENERATION_KEY, LedgerView, current_metadata
from ragbrain.store.records import Records
from ragbrain.store.resilience import StorePolicy, call
from ragbrain.store.scoped import ScopeVectors
from ragbrain.store.searching import Searching
from ragbrain.store.type_index import KnownTypes, TypeIndex
from ragbrain.store.writing import Writing

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from langchain_core.embeddings import Embeddings

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


class Store(Searching, Writing, Records):
    """A cosine Chroma collection and the embeddings that fill it.

    A store on a folder follows other processes: before each read and write it checks
    (``follow``: a stat of Chroma's SQLite file, and a small read of it when that moved)
    whether another process wrote since it last looked, and if so reopens its Chroma client
    with fresh segments. It writes only inside ``writing``: holding the writer lock, after
    following what others wrote.

    This class opens and follows; the rest comes from its parts: ``Searching`` (and the
    ``Reading`` under it), ``Writing`` and ``Records`` (``ragbrain.store.base``).
    """

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
        store last looked (a stat when nothing changed; see ``ragbrain.store.follow``). Not
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
