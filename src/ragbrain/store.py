"""Opening the Chroma store (in a folder or on a server), checking its space and dimension."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ragbrain.embeddings import EMBEDDING_CHOICES, embeddings_for, model_name_of
from ragbrain.errors import (
    InvalidInputError,
    StoreLockedError,
    StoreMismatchError,
    StoreNotFoundError,
    StoreUnavailableError,
)
from ragbrain.resilience import StorePolicy, bound_requests, call
from ragbrain.state import Hit
from ragbrain.type_index import KnownTypes, TypeIndex, type_where, typed_nearest

if TYPE_CHECKING:
    import httpx
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import GetResult, Include
    from langchain_core.embeddings import Embeddings

log = logging.getLogger(__name__)
T = TypeVar("T")

COLLECTION = "ragbrain"
STORE_ENV = "RAGBRAIN_STORE"
SERVER_ENV = "RAGBRAIN_SERVER"
LOCK_FILE = "ragbrain.lock"
MODEL_KEY = "ragbrain:embedding_model"
DIMENSION_KEY = "ragbrain:dimension"
GATE_KEY = "ragbrain:gate_threshold"  # written by `ragbrain calibrate`
GATE_SOURCE_KEY = "ragbrain:gate_source"
_BATCH = 1000  # Chroma caps how many records one call may carry.
#: Records read per call when listing a whole store. Chroma reads a call's metadata with one
#: SQL statement naming every id, and SQLite refuses more than 32,766 variables: an unpaged
#: listing fails on a store of about 33k chunks or more ("too many SQL variables").
PAGE = 5000


def default_store_path() -> Path:
    """``$RAGBRAIN_STORE``, else ``$XDG_DATA_HOME/ragbrain/store`` (``~/.local/share/...``)."""
    if env := os.environ.get(STORE_ENV):
        return Path(env).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data_home) / "ragbrain" / "store"


def _client(path: Path) -> ClientAPI:
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


# --- server mode (issue #6) ---
def parse_server_url(url: str) -> tuple[str, int, bool]:
    """``http://HOST:PORT`` (or https) as (host, port, ssl); the port defaults to 8000.

    Raises:
        InvalidInputError: Not an http(s) URL with a host.
    """
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except (ValueError, AttributeError) as exc:
        raise InvalidInputError(f"The server URL {url!r} is not valid ({exc}).") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise InvalidInputError(
            f"The server URL must look like http://HOST:PORT (or https://), got {url!r}."
        )
    return parts.hostname, port or 8000, parts.scheme == "https"


@lru_cache(maxsize=1)
def _probe_client() -> httpx.Client:
    """One client for heartbeats (each new httpx client spends ~0.1 s loading certificates)."""
    import httpx

    return httpx.Client()


def _server_client(url: str, policy: StorePolicy) -> ClientAPI:
    """An HttpClient whose every request has a timeout (see ``resilience.bound_requests``).

    chromadb's constructor already talks to the server without a timeout, so a bounded
    heartbeat goes first: a server that is down or frozen fails here, within the deadline.
    """
    import chromadb
    from chromadb.config import Settings

    from ragbrain.resilience import attempt_timeout

    host, port, ssl = parse_server_url(url)
    base = f"{'https' if ssl else 'http'}://{host}:{port}"

    def heartbeat() -> None:
        response = _probe_client().get(f"{base}/api/v2/heartbeat", timeout=attempt_timeout())
        if response.status_code in (429, 502, 503, 504):
            raise ConnectionError(f"HTTP {response.status_code} from {base}")
        if response.status_code != 200:
            raise StoreUnavailableError(
                f"{base} answered HTTP {response.status_code} to a heartbeat: is it a Chroma "
                "server (`chroma run --host HOST --port PORT`)?"
            )

    where = f"Reaching the Chroma server at {base}"
    call(policy, where, heartbeat)
    settings = Settings(anonymized_telemetry=False)
    client = call(
        policy,
        where,
        lambda: chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings),
    )
    bound_requests(client)
    return client


def connect(
    path: str | Path | None, server: str | None, policy: StorePolicy, *, create: bool
) -> tuple[ClientAPI, str, Path | None]:
    """A client for the folder or the server, where it is (for messages), and the folder."""
    if server:
        host, port, ssl = parse_server_url(server)
        return _server_client(server, policy), f"{'https' if ssl else 'http'}://{host}:{port}", None
    folder = Path(path).expanduser() if path is not None else default_store_path()
    if folder.exists() and not folder.is_dir():
        raise StoreNotFoundError(f"The store path {folder} is a file, not a folder.")
    if not create and not folder.is_dir():
        raise StoreNotFoundError(
            f"No ragbrain store at {folder}. Create one with "
            f"`ragbrain ingest NOTES_DIR --store {folder}`."
        )
    return _client(folder), str(folder), folder


# --- end server mode ---


def _space(collection: Collection) -> str:
    config: dict[str, Any] = dict(collection.configuration or {})
    for index in ("hnsw", "spann"):
        if config.get(index):
            return str(config[index].get("space", "l2"))
    return str((collection.metadata or {}).get("hnsw:space", "l2"))


class Store:
    """A cosine Chroma collection and the embeddings that fill it."""

    def __init__(
        self,
        collection: Collection,
        embeddings: Embeddings,
        *,
        location: str,
        policy: StorePolicy | None = None,
        folder: Path | None = None,
    ) -> None:
        self.collection = collection
        self.embeddings = embeddings
        self.location = location
        self.policy = policy or StorePolicy()
        self.folder = folder  # None for a server-backed store
        self._lock = threading.Lock()
        self._embed_query = lru_cache(maxsize=256)(self._embed_query_uncached)
        self._type_index = TypeIndex(
            collection, cache_folder=self.sidecar("type-vectors"), version=self.version
        )

    @property
    def embedding_model(self) -> str | None:
        """The embedding model behind this store's distances: the one queries are embedded
        with, unless the store records another (then None: the distances mix two models)."""
        model = model_name_of(self.embeddings)
        recorded = (self.collection.metadata or {}).get(MODEL_KEY)
        return model if recorded in (None, model) else None

    def sidecar(self, name: str, suffix: str = "") -> Path:
        """Where ragbrain keeps a file or folder beside the collection: ``<store>/<name><suffix>``,
        or for a server store, ``$RAGBRAIN_CACHE/<name>/<digest of the URL><suffix>``."""
        if self.folder is not None:
            return self.folder / f"{name}{suffix}"
        from ragbrain.evaluation.beir import cache_root

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

        Raises:
            StoreNotFoundError: No store there and ``create`` is false.
            StoreMismatchError: The collection's space is not cosine, its vectors have
                another dimension than ``embeddings`` produces, it was built with another
                model ragbrain knows by name, or (``embeddings`` None) with one it cannot load.
            StoreUnavailableError: The server could not be reached within the deadline.
        """
        policy = policy or StorePolicy()
        client, where, folder = connect(path, server, policy, create=create)
        hint = f"--server {server}" if server else f"--store {where}"
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
        space = _space(collection)
        if space != "cosine":
            if not convert_space:
                raise StoreMismatchError(
                    f"The collection in {where} uses the {space!r} distance space; ragbrain "
                    "needs 'cosine'. Pass convert_space=True (CLI: --convert-space) to copy it "
                    "into a cosine collection."
                )
            collection = call(
                policy,
                f"Converting the collection at {where}",
                lambda: _convert_to_cosine(client, collection, model, dimension),
            )
        call(
            policy,
            f"Checking the collection at {where}",
            lambda: _check_dimension(collection, where, model, dimension),
        )
        return cls(collection, embeddings, location=where, policy=policy, folder=folder)

    # --- server mode (issue #6) ---
    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """Run one Chroma operation under the store's deadline and retry policy."""
        return call(self.policy, f"{what} ({self.location})", fn)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the store's writer lock (embedded stores only; a server orders writes itself).

        Raises:
            StoreLockedError: Another process is writing to the same store folder.
        """
        if self.folder is None:
            yield
            return
        import fcntl

        path = self.folder / LOCK_FILE
        with path.open("a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "unknown"
                raise StoreLockedError(
                    f"The store {self.folder} is locked by another writer (pid {holder}); "
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

    def restore_missing_vectors(self) -> list[str]:
        """Write back, from their stored records, the chunks that Chroma's vector index lacks.

        A process killed at the wrong moment (SIGKILL, power loss), even after its last write
        returned, can leave a chunk in Chroma's records but not in its HNSW index (seen in
        the crash tests: a query for all 109 chunks returned 108), so no search ever finds it
        and a rerun of the ingest sees it as unchanged. One query for every chunk lists what
        the index holds; the rest are upserted again with their own stored vectors (no
        embedding). ``ragbrain ingest`` runs this first: 2.0 s at 100k chunks, about as long
        as listing the store's ids, which ingest does anyway.

        Returns:
            The ids written back.
        """
        total = self.count()
        if not total:
            return []
        probe = self._call(
            "Reading a vector", lambda: self.collection.get(limit=1, include=["embeddings"])
        )
        vector: list[Sequence[float]] = [[float(x) for x in probe["embeddings"][0]]]  # type: ignore[index]
        found = self._call(
            "Listing the vector index",
            lambda: self.collection.query(
                query_embeddings=vector, n_results=total, include=["distances"]
            ),
        )
        indexed = set(found["ids"][0])
        missing = [i for i in self.all_ids() if i not in indexed]
        for start in range(0, len(missing), _BATCH):
            batch = missing[start : start + _BATCH]
            got = self._call(
                "Reading chunks",
                partial(
                    self.collection.get, ids=batch, include=["documents", "metadatas", "embeddings"]
                ),
            )
            self._call(
                "Writing chunks",
                partial(
                    self.collection.upsert,
                    ids=list(got["ids"]),
                    documents=got["documents"],
                    metadatas=got["metadatas"],
                    embeddings=got["embeddings"],
                ),
            )
        return missing

    # --- end server mode ---

    def _embed_query_uncached(self, query: str) -> tuple[float, ...]:
        vector = self.embeddings.embed_query(query)
        if not all(math.isfinite(x) for x in vector) or not any(vector):
            raise InvalidInputError(f"The embedding of {query[:40]!r} is zero or not finite.")
        return tuple(vector)

    # --- gate calibration (issue #4) ---
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
        kept = {
            k: v for k, v in (self.collection.metadata or {}).items() if not k.startswith("hnsw:")
        }
        self._call(
            "Writing the gate threshold",
            lambda: self.collection.modify(
                metadata={**kept, GATE_KEY: threshold, GATE_SOURCE_KEY: source}
            ),
        )

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

    # --- end gate calibration ---
    def count(self) -> int:
        """Number of chunks in the store."""
        return int(self._call("Counting chunks", self.collection.count))

    def version(self) -> tuple[int, int] | None:
        """A token that changes whenever an embedded store's data may have (the modification
        time and size of its SQLite file, where Chroma writes every add, update and delete,
        by any process; reads leave it alone); None for a server store or an unreadable file.

        Long-lived readers compare it before paying for ``count``: Chroma's costs ~10 ms at
        100k chunks and ~120 ms at 1M. Take it *before* the count it vouches for, so a write
        in between changes it again.
        """
        if self.folder is None:
            return None
        try:
            stat = (self.folder / "chroma.sqlite3").stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def search(self, query: str, k: int, types: Sequence[str] | None = None) -> list[Hit]:
        """The ``k`` chunks nearest to ``query``, optionally only of the given types.

        Distances are cosine (0 = same direction); tiny negative ones from float error are
        clamped to 0. Results are sorted, best first.
        """
        vector: list[Sequence[float]] = [self._embed_query(query)]
        if not types:
            return self._nearest(vector, k, None)
        # Type filter (issue #4): Chroma's `where` is 25-70x slower at 100k chunks, so first
        # over-fetch unfiltered and filter in memory (see type_index.py); a rare type falls
        # through to Chroma's own filter.
        hits = typed_nearest(self.collection, self._type_index, vector[0], k, set(types))
        return hits if hits is not None else self._nearest(vector, k, type_where(types))

    def _nearest(
        self, vector: list[Sequence[float]], k: int, where: dict[str, Any] | None
    ) -> list[Hit]:
        # Chroma refuses tuples (the query-embedding cache holds tuples).
        embeddings: list[Sequence[float]] = [list(v) for v in vector]
        result = self._call(
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

    def pages(self, include: Include, where: dict[str, Any] | None = None) -> Iterator[GetResult]:
        """Every record (or those matching ``where``), ``PAGE`` at a time, as Chroma's
        ``get`` returns them; a store of any size, in the collection's own order."""
        offset = 0
        while True:
            page = self._call(
                "Listing chunks",
                partial(
                    self.collection.get, where=where, include=include, limit=PAGE, offset=offset
                ),
            )
            if not page["ids"]:
                return
            yield page
            offset += len(page["ids"])

    def ids_by_source(self, root: str) -> dict[str, set[str]]:
        """Chunk ids of every file ingested from ``root``, by source path."""
        by_source: dict[str, set[str]] = {}
        for page in self.pages(["metadatas"], where={"root": root}):
            for id_, meta in zip(page["ids"], page["metadatas"] or [], strict=True):
                by_source.setdefault(str((meta or {}).get("source", "")), set()).add(id_)
        return by_source

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
        self._type_index.forget(ids)  # their type may change: look it up again when seen
        with self._lock:
            for start in range(0, len(ids), _BATCH):
                end = start + _BATCH
                # Upserting by id is idempotent, so a retried batch never duplicates.
                self._call(
                    "Writing chunks",
                    partial(
                        self.collection.upsert,
                        ids=list(ids[start:end]),
                        documents=list(texts[start:end]),
                        metadatas=[dict(m) for m in metadatas[start:end]],
                        embeddings=list(vectors[start:end]),
                    ),
                )

    def _check_vectors(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[dict[str, Any]],
        vectors: Sequence[Sequence[float]],
    ) -> None:
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
        with self._lock:
            for start in range(0, len(ids), _BATCH):
                batch = list(ids[start : start + _BATCH])
                self._call("Deleting chunks", partial(self.collection.delete, ids=batch))

    # --- lexical index (issue #5) ---
    def all_ids(self) -> list[str]:
        """Every chunk id in the store (what the lexical index's fingerprint is checked against)."""
        found = self._call("Listing chunk ids", lambda: self.collection.get(include=[]))
        return list(found["ids"])

    def texts_and_types(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """``(id, text, type)`` of the given chunks (missing ids are left out)."""
        rows: list[tuple[str, str, str]] = []
        for start in range(0, len(ids), _BATCH):
            batch = list(ids[start : start + _BATCH])
            found = self._call(
                "Reading chunks",
                lambda batch=batch: self.collection.get(  # type: ignore[misc]
                    ids=batch, include=["documents", "metadatas"]
                ),
            )
            texts = found["documents"] or [""] * len(found["ids"])
            metas = found["metadatas"] or [{}] * len(found["ids"])
            rows += [
                (id_, text or "", str((meta or {}).get("type", "")))
                for id_, text, meta in zip(found["ids"], texts, metas, strict=True)
            ]
        return rows

    def hits_by_id(self, query: str, ids: Sequence[str]) -> list[Hit]:
        """The given chunks as hits, each with its true cosine distance to ``query``.

        Computed from the chunk's stored embedding, so a chunk found by the lexical index
        carries the same kind of distance as one found by the vector search.
        """
        if not ids:
            return []
        found = self._call(
            "Reading chunks",
            lambda: self.collection.get(
                ids=list(ids), include=["documents", "metadatas", "embeddings"]
            ),
        )
        if not found["ids"]:
            return []
        query_vector = np.asarray(self._embed_query(query), dtype=np.float64)
        vectors = np.asarray(found["embeddings"], dtype=np.float64).reshape(len(found["ids"]), -1)
        norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query_vector)
        cosines = (vectors @ query_vector) / np.where(norms > 0, norms, 1.0)
        texts = found["documents"] or [""] * len(found["ids"])
        metas = found["metadatas"] or [{}] * len(found["ids"])
        return [
            Hit(
                id=id_,
                text=text or "",
                metadata=dict(meta or {}),
                distance=max(0.0, 1.0 - float(cos)),
                from_fallback=False,
            )
            for id_, text, meta, cos in zip(found["ids"], texts, metas, cosines, strict=True)
        ]

    # --- end lexical index ---
    def types(self) -> dict[str, int]:
        """Chunk counts per note type."""
        counts: dict[str, int] = {}
        for page in self.pages(["metadatas"]):
            for meta in page["metadatas"] or []:
                type_ = str((meta or {}).get("type", ""))
                counts[type_] = counts.get(type_, 0) + 1
        return counts


def _recorded_embeddings(collection: Collection | None, where: str) -> Embeddings:
    """The embeddings of the model a collection records (the default for a new store)."""
    recorded = None if collection is None else (collection.metadata or {}).get(MODEL_KEY)
    if recorded is not None and recorded not in EMBEDDING_CHOICES.values():
        raise StoreMismatchError(
            f"The store in {where} was built with {recorded!r}, which ragbrain cannot load by "
            "name: pass the same embeddings object (Python: Store.open(path, embeddings))."
        )
    return embeddings_for(None if recorded is None else str(recorded))


def _check_dimension(collection: Collection, folder: str, model: str, dimension: int) -> None:
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
    recorded = meta.get(MODEL_KEY)
    if recorded not in (None, model) and _known_model(recorded) and _known_model(model):
        choice = _choice_of(str(recorded))
        raise StoreMismatchError(
            f"The store in {folder} was built with {recorded!r}; its distances mean nothing "
            f"to {model!r} (the same dimension does not make them comparable). Open it "
            f"without choosing a model (readers use the store's), keep ingesting with "
            f"`--embedding {choice}`, or re-embed the notes into a new store: "
            f"`ragbrain ingest NOTES_DIR --embedding {_choice_of(model)} --store NEW_STORE`."
        )
    if recorded not in (None, model):
        log.warning(
            "The store in %s was built with %r, queried with %r (same dimension).",
            folder,
            meta.get(MODEL_KEY),
            model,
        )


def _known_model(name: object) -> bool:
    return name in EMBEDDING_CHOICES.values()


def _choice_of(name: str) -> str:
    return next((key for key, value in EMBEDDING_CHOICES.items() if value == name), name)


def _convert_to_cosine(
    client: ClientAPI, old: Collection, model: str, dimension: int
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
