"""What the parts of ``Store`` share: the state ``Store.__init__`` sets, and the operations
one part calls while another defines them (``Store``: the collection, ``call``, ``version``;
``writing``: the writer lock; ``records``: ``record``), declared here for the type checker.

``Store`` is assembled from one class per responsibility, each a subclass of ``StoreBase``:
``reading.Reading`` (listings and reads by id), ``searching.Searching`` (nearest chunks,
hits by id, query vectors, types), ``writing.Writing`` (writes under the writer lock, crash
repair) and ``records.Records`` (the ledger, the gate and off-topic records, the model);
``store.Store`` opens a store and follows other processes' writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Mapping
    from contextlib import AbstractContextManager
    from functools import _lru_cache_wrapper
    from pathlib import Path

    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from langchain_core.embeddings import Embeddings

    from ragbrain.store.follow import Follower
    from ragbrain.store.ledger import LedgerView
    from ragbrain.store.resilience import StorePolicy
    from ragbrain.store.scoped import ScopeVectors
    from ragbrain.store.type_index import TypeIndex

T = TypeVar("T")


class StoreBase:
    """The state every part of ``Store`` reads (set by ``Store.__init__``) and the
    operations the parts call on each other (defined by ``Store`` and its parts)."""

    embeddings: Embeddings
    location: str
    policy: StorePolicy
    folder: Path | None  # None for a server-backed store
    client: ClientAPI | None
    _follower: Follower | None  # None for a store without a SQLite file to follow
    _writers: threading.RLock  # one writing thread at a time in this process
    _write_depth: int
    _writer_interrupted: bool  # see ``Writing.writing``
    _lock: threading.Lock
    _embed_query: _lru_cache_wrapper[tuple[float, ...]]
    _type_index: TypeIndex
    _types_seen: tuple[object, float, list[str]] | None
    _scope_vectors: ScopeVectors
    _ledger: LedgerView

    if TYPE_CHECKING:

        @property
        def collection(self) -> Collection:
            """The Chroma collection, reopened first if another process wrote."""

        @collection.setter
        def collection(self, collection: Collection) -> None: ...

        def call(self, what: str, fn: Callable[[], T]) -> T:
            """Run one Chroma operation under the store's deadline and retry policy."""

        def version(self) -> tuple[int, int] | None:
            """A token that changes whenever an embedded store's data may have."""

        def _refuse_a_stale_model(self) -> None: ...

        def writing(self, wait: float | None = None) -> AbstractContextManager[None]:
            """Hold the store's writer lock (``Writing.writing``)."""

        def record(
            self, changes: Mapping[str, Any] | None = None, *, generation: str | None = None
        ) -> str:
            """Write ``changes`` into the store's record with a new generation."""
