"""A caller's langchain-chroma collection under ragbrain: the ``Store`` over it and the view
through which ragbrain reads it.

A caller's langchain-chroma ``Chroma`` as a ragbrain ``Store``: the caller's client and
collection reused (never a second client), the collection checked once (distance space,
vector lengths, dimension, stored texts, metadata keys), and ragbrain's files about it kept
in the cache folder, or in a temporary folder for an in-memory client.

A user's own Chroma collection as ragbrain reads it: cosine distances whatever its distance
space, the note type and source under ragbrain's metadata keys, and ragbrain's own collection
keys (a calibrated gate, ...) kept in a file beside it, never written into the collection.

``CollectionView`` offers the part of chromadb's ``Collection`` that ragbrain's store code
calls (``query``, ``get``, ``peek``, ``count``, ``metadata``, ``modify``); every search path
(plain, type-filtered, scoped, the lexical index's reads) goes through it unchanged. To
ragbrain the collection is read-only: writes belong to the caller's own vector store.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from ragbrain._util import write_text
from ragbrain.checks import describe
from ragbrain.errors import (
    InvalidInputError,
    StoreMismatchError,
    StoreNotFoundError,
    WrongTypeError,
)
from ragbrain.models import agreement
from ragbrain.paths import cache_root
from ragbrain.store.connect import StorePolicy
from ragbrain.store.connect import space as collection_space
from ragbrain.store.store import Store

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from langchain_core.embeddings import Embeddings


# --- a caller's collection as a Store ---

log = logging.getLogger(__name__)

#: Records read (vectors, texts, metadata), spread over the collection, to inspect it.
SAMPLE = 1000
#: In that many evenly spaced pages.
SAMPLE_PAGES = 10
NO_TEXTS = "no stored texts: dense search only (no BM25), critic off"


@dataclass(frozen=True)
class Inspection:
    """What a look at a sample of the collection found.

    Attributes:
        name: The collection's name.
        space: Its distance space.
        unit: Every sampled vector is unit length.
        count: Its records.
        texts: The sample holds stored texts (none: no BM25, no critic).
        keys: The metadata keys the sample holds.
        type_key: The key that holds the note type; ``source_key`` the source.
        dimension: The query model's vector length.
        model: The query model's name, as the opener gave it.
        agreement: The median cosine of a few stored texts embedded again against their
            stored vectors (``ragbrain.models.agreement``); None: not checked.
    """

    name: str
    space: str
    unit: bool
    count: int
    texts: bool
    keys: frozenset[str]
    type_key: str
    source_key: str
    dimension: int = 0
    agreement: float | None = None
    model: str = ""

    def notes(self, count: int | None = None) -> list[str]:
        """The trace's lines about the wrapped collection, with ``count`` records (None: as
        many as it held when inspected)."""
        count = self.count if count is None else count
        head = f"store: the collection {self.name!r} ({count} records, {self.space} space"
        if self.space == "cosine":
            lines = [f"{head}): cosine distances as Chroma gives them"]
        elif self.unit:
            how = "l2 / 2" if self.space == "l2" else "1 - inner product"
            lines = [f"{head}, unit vectors): each distance is the cosine distance ({how})"]
        else:
            lines = [
                f"{head}, vectors not unit length): searched {RERANK}x deeper and re-ranked by "
                "the true cosine distance of each stored vector"
            ]
        if self.count and not self.texts:
            lines.append(f"store: {NO_TEXTS}")
        lines += [f"store: {missing}" for missing, _ in self.missing_keys()]
        return lines

    def missing_keys(self) -> list[tuple[str, bool]]:
        """A line for each of the type and source keys that no sampled metadata holds, and
        whether the caller chose that key (rather than leaving the default)."""
        found = []
        for what, key, default in (
            ("note type", self.type_key, "type"),
            ("source", self.source_key, "source"),
        ):
            if self.count and key not in self.keys:
                line = (
                    f"no metadata holds the {what} key {key!r} (keys: "
                    f"{sorted(self.keys) or 'none'})"
                )
                found.append((line, key != default))
        return found


def sample_records(collection: Any, count: int) -> dict[str, list[Any]]:
    """About ``SAMPLE`` records of ``collection`` (embeddings, texts, metadata), read in
    ``SAMPLE_PAGES`` pages spread evenly over it."""
    size = max(1, SAMPLE // SAMPLE_PAGES)
    offsets = sorted(
        {i * max(count - size, 0) // max(SAMPLE_PAGES - 1, 1) for i in range(SAMPLE_PAGES)}
    )
    found: dict[str, list[Any]] = {"ids": [], "embeddings": [], "documents": [], "metadatas": []}
    seen: set[str] = set()
    for offset in offsets:
        page = collection.get(
            limit=size, offset=offset, include=["embeddings", "documents", "metadatas"]
        )
        vectors = page.get("embeddings")
        if page["ids"] and vectors is None:
            raise StoreMismatchError(
                f"The collection {collection.name!r} returned no stored vectors, so ragbrain "
                "can neither convert its distances nor recompute them as cosine distances."
            )
        documents = page.get("documents") or [None] * len(page["ids"])
        metadatas = page.get("metadatas") or [None] * len(page["ids"])
        for i, id_ in enumerate(page["ids"]):
            if id_ in seen:
                continue
            seen.add(id_)
            found["ids"].append(id_)
            found["embeddings"].append(np.asarray(vectors[i], dtype=np.float64))
            found["documents"].append(documents[i])
            found["metadatas"].append(metadatas[i])
    return found


def inspect_collection(
    collection: Collection,
    embeddings: Embeddings,
    *,
    model: str,
    type_key: str,
    source_key: str,
    stored_model: str | None = None,
    check_model: bool = True,
) -> Inspection:
    """Check that ragbrain can read ``collection`` with ``embeddings``, on a sample.

    Args:
        model: ``embeddings``' name (``ragbrain.settings.resolve_model``: the opener names
            the models; the store records and checks what it is given).
        stored_model: The model the collection was built with, when known (the vector
            store's own, when the caller passes other ``embeddings``), for messages.
        check_model: Embed a few stored texts again and compare them with their stored
            vectors (``ragbrain.models.agreement``).

    Raises:
        StoreMismatchError: An unknown distance space; an inner-product collection of vectors
            that are not unit length; no stored vectors; vectors of another dimension than
            ``embeddings`` makes.
        WrongModelError: ``check_model`` found that ``embeddings`` did not make the stored
            vectors.
    """
    name = str(collection.name)
    space = collection_space(collection)
    if space not in SPACES:
        raise StoreMismatchError(
            f"The collection {name!r} uses the {space!r} distance space; ragbrain reads "
            f"{', '.join(SPACES)}."
        )
    count = int(collection.count())
    sample = sample_records(collection, count) if count else None
    dimension = len(embeddings.embed_query("dimension probe"))
    unit, texts, keys, agreed = True, False, frozenset[str](), None
    if sample is not None and sample["ids"]:
        sizes = {len(v) for v in sample["embeddings"]}
        if sizes != {dimension}:
            raise StoreMismatchError(
                f"The collection {name!r} holds {'/'.join(map(str, sorted(sizes)))}-dimensional "
                f"vectors but {model!r} makes {dimension}-dimensional ones: pass the "
                "embeddings the collection was built with (the vector store's own)."
            )
        norms = np.array([np.linalg.norm(v) for v in sample["embeddings"]])
        unit = bool(np.all(np.abs(norms - 1.0) <= UNIT_TOLERANCE))
        texts = any(isinstance(t, str) and t.strip() for t in sample["documents"])
        keys = frozenset(k for meta in sample["metadatas"] for k in (meta or {}))
        if space == "ip" and not unit:
            raise StoreMismatchError(
                f"The collection {name!r} ranks by inner product over vectors that are not "
                f"unit length (lengths {norms.min():.3f}-{norms.max():.3f}): that order is "
                "neither cosine nor distance, and ragbrain cannot recover a cosine ranking "
                "from it. Rebuild it with normalized embeddings, or in the cosine space "
                "(collection_configuration={'hnsw': {'space': 'cosine'}})."
            )
        if check_model:
            agreed = agreement.check_model(
                embeddings,
                sample["documents"],
                sample["embeddings"],
                model=model,
                stored_model=stored_model,
                where=f"The collection {name!r}",
                override="check_model=False",
            )
    return Inspection(
        name, space, unit, count, texts, keys, type_key, source_key, dimension, agreed, model
    )


class WrappedStore(Store):
    """A ``Store`` over a caller's collection (through a ``CollectionView``), its sidecar
    files in ``sidecars``, its change token the caller's SQLite file when it has one."""

    def __init__(
        self,
        view: CollectionView,
        embeddings: Embeddings,
        *,
        location: str,
        client: ClientAPI,
        sidecars: Path,
        sqlite: Path | None = None,
        policy: StorePolicy | None = None,
    ) -> None:
        self._sidecars = sidecars  # before Store.__init__, which asks for sidecar paths
        self._sqlite = sqlite
        self.view = view
        # The view offers the part of Collection that the store's code calls.
        super().__init__(
            cast("Collection", view), embeddings, location=location, policy=policy, client=client
        )

    def sidecar(self, name: str, suffix: str = "") -> Path:
        """``<sidecars>/<name><suffix>``: never inside the caller's Chroma folder."""
        return self._sidecars / f"{name}{suffix}"

    def sqlite_file(self) -> Path | None:
        """The caller's ``chroma.sqlite3`` (a persistent client: followed like a store's own
        folder, see ``Store.follow``); else None."""
        return self._sqlite

    def _fresh_collection(self) -> tuple[Collection, ClientAPI]:
        """A fresh client with the caller's settings, and the view over its collection."""
        from ragbrain.store.processes import fresh_client

        assert self._sqlite is not None and self.client is not None
        settings = self.client.get_settings()
        client = fresh_client(self._sqlite.parent, settings)
        self.view.rebind(client.get_collection(self.view.name, embedding_function=None))
        return cast("Collection", self.view), client

    def version(self) -> tuple[int, int] | None:
        """The stat of the caller's ``chroma.sqlite3`` (a persistent client); else None."""
        if self._sqlite is None:
            return None
        try:
            stat = self._sqlite.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size


def _where_is(client: ClientAPI) -> tuple[str, Path | None]:
    """Where the client's data lives (for messages and the sidecars' name), and its SQLite
    file when it is a persistent client."""
    settings = client.get_settings()
    if settings.chroma_server_host:
        return f"http://{settings.chroma_server_host}:{settings.chroma_server_http_port}", None
    if settings.is_persistent:
        folder = Path(settings.persist_directory).expanduser().absolute()
        return str(folder), folder / "chroma.sqlite3"
    return "memory", None


def sidecar_key(location: str, inspection: Inspection) -> str:
    """The name of the folder that keeps ragbrain's files about a wrapped collection: a digest
    of every setting they depend on. The collection's identity (its client's location, name
    and id: a collection dropped and made again is another), the metadata keys read as the
    note type and the source (the lexical index's and the type index's types, the gate's
    sources) and the query model with its dimension (the calibrated gate and off-topic cut).
    Opening the same collection with another ``type_key`` or model thus never reads what
    another setting built; each setting's files stay for when it comes back."""
    parts = [
        location,
        f"type_key={inspection.type_key}",
        f"source_key={inspection.source_key}",
        f"model={inspection.model}",
        f"dimension={inspection.dimension}",
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ModelNames:
    """The names of the models ``wrap_chroma`` meets, as stores record them.

    Attributes:
        given: The name of the embeddings the caller passes (None: none passed).
        own: The name of the vector store's own embedding function (None: it has none).
    """

    given: str | None = None
    own: str | None = None


def wrap_chroma(
    vectorstore: object,
    embeddings: Embeddings | None = None,
    *,
    names: ModelNames,
    type_key: str = "type",
    source_key: str = "source",
    policy: StorePolicy | None = None,
    check_model: bool = True,
) -> tuple[WrappedStore, Inspection]:
    """A ``Store`` over a langchain-chroma ``Chroma``'s own client and collection.

    Args:
        vectorstore: A ``langchain_chroma.Chroma``.
        embeddings: The model that embeds queries; None: the vector store's own.
        names: The names of ``embeddings`` and of the vector store's own embedding function
            (``ragbrain.factory.open_vectorstore`` asks ``ragbrain.settings.resolve_model``).
        type_key: The metadata key that holds the note type (type filter, fallback).
        source_key: The metadata key that holds the source (path filters, calibration).
        policy: Deadline and retries of each store call.
        check_model: Check that ``embeddings`` made the stored vectors (a few stored texts
            embedded again; ``ragbrain.models.agreement``).

    Raises:
        WrongTypeError: Not a ``langchain_chroma.Chroma``, or keys that are not strings.
        InvalidInputError: No embeddings to embed queries with.
        StoreNotFoundError: The vector store's collection was deleted.
        StoreMismatchError: See ``inspect_collection``.
        WrongModelError: ``embeddings`` did not make the collection's vectors.
    """
    from langchain_chroma import Chroma

    if not isinstance(vectorstore, Chroma):
        raise WrongTypeError(
            f"ragbrain wraps a langchain_chroma.Chroma; got {describe(vectorstore)}. Other "
            "LangChain vector stores are not supported: copy their documents into a ragbrain "
            "store (Store.open(folder, embeddings, create=True).as_vectorstore()"
            ".add_documents(docs)) and open that with CorrectiveRetriever.from_store(folder)."
        )
    for name, key in (("type_key", type_key), ("source_key", source_key)):
        if not isinstance(key, str) or not key:
            raise WrongTypeError(f"{name} must be a metadata key (a string); got {describe(key)}.")
    own = vectorstore.embeddings
    stored_model = names.own if own is not None and embeddings is not None else None
    model = names.given if embeddings is not None else names.own
    embeddings = embeddings if embeddings is not None else own
    if embeddings is None:
        raise WrongTypeError(
            "The vector store has no embedding function, so ragbrain cannot embed queries: "
            "pass embeddings= (the model the collection was built with)."
        )
    try:
        collection = vectorstore._collection
    except ValueError as exc:
        raise StoreNotFoundError(f"The vector store has no collection: {exc}") from None
    client = vectorstore._client
    where, sqlite = _where_is(client)
    if sqlite is not None:  # the caller's client too: one call at a time (``serialize``)
        from ragbrain.store.processes import serialize

        serialize(getattr(client, "_server", None), sqlite.parent)
    location = f"{where}#{collection.name}@{collection.id}"
    inspection = inspect_collection(
        collection,
        embeddings,
        model=model or "",
        type_key=type_key,
        source_key=source_key,
        stored_model=stored_model,
        check_model=check_model,
    )
    if where == "memory":  # nothing of an in-memory collection outlives the process
        sidecars = Path(tempfile.mkdtemp(prefix="ragbrain-wrapped-"))
    else:
        sidecars = cache_root() / "wrapped" / sidecar_key(location, inspection)
    view = CollectionView(
        collection,
        space=inspection.space,
        unit=inspection.unit,
        type_key=type_key,
        source_key=source_key,
        overlay=sidecars / "collection-metadata.json",
    )
    store = WrappedStore(
        view,
        embeddings,
        location=location,
        client=client,
        sidecars=sidecars,
        sqlite=sqlite,
        policy=policy,
    )
    if where == "memory":
        weakref.finalize(store, shutil.rmtree, sidecars, True)
    if inspection.count and not inspection.texts:
        log.warning("%s: %s", location, NO_TEXTS)
    for line, chosen in inspection.missing_keys():
        # A key the caller chose that no chunk holds is a mistake to point out; the default
        # keys missing is a plain LangChain collection, which the trace mentions.
        log.log(logging.WARNING if chosen else logging.INFO, "%s: %s", location, line)
    return store, inspection


# --- the collection as ragbrain reads it ---


#: The distance spaces a wrapped collection may use.
SPACES = ("cosine", "l2", "ip")
#: How far from 1 a vector's length may be for it to count as unit length; Chroma's l2 and ip
#: distances of unit vectors convert to cosine distances to within twice this.
UNIT_TOLERANCE = 1e-4
#: How many more neighbours an l2 search fetches when it is re-ranked by true cosine (the
#: collection's vectors are not unit length, so l2 order is not cosine order).
RERANK = 4
#: Where a wrapped chunk's metadata rides as stored, when ragbrain's keys are mapped onto it
#: (``type_key``, ``source_key``); ``restore_metadata`` puts it back on returned documents.
STORED_METADATA = "ragbrain:stored_metadata"
TYPE, SOURCE = "type", "source"
OWN_PREFIX = "ragbrain:"
_FIELDS = ("ids", "embeddings", "documents", "uris", "data", "metadatas", "distances")


def rename_keys(where: Mapping[str, Any], keys: Mapping[str, str]) -> dict[str, Any]:
    """A Chroma ``where`` clause with ragbrain's metadata keys renamed to the collection's
    (``{"type": {"$in": [...]}}`` -> ``{"category": {"$in": [...]}}``), through ``$and``/``$or``."""
    renamed: dict[str, Any] = {}
    for key, value in where.items():
        if key in ("$and", "$or"):
            renamed[key] = [rename_keys(part, keys) for part in value]
        else:
            renamed[keys.get(key, key)] = value
    return renamed


def restore_metadata(metadata: Mapping[str, Any], keep: Sequence[str]) -> dict[str, Any]:
    """A returned chunk's metadata as the collection stores it (``STORED_METADATA``), with
    the ``keep`` keys ragbrain added (the retrieval trace) kept; unchanged without it."""
    stored = metadata.get(STORED_METADATA)
    if not isinstance(stored, Mapping):
        return dict(metadata)
    return {**stored, **{key: metadata[key] for key in keep if key in metadata}}


class CollectionView:
    """A user's Chroma collection seen with cosine distances and ragbrain's metadata keys.

    Args:
        collection: The caller's collection (its client is the caller's: none is opened here).
        space: Its distance space (``cosine``, ``l2`` or ``ip``).
        unit: Whether its vectors are unit length (l2 and ip distances then convert exactly;
            an l2 collection whose vectors are not is re-ranked by true cosine).
        type_key: The metadata key that holds a chunk's note type.
        source_key: The metadata key that holds a chunk's source.
        overlay: The JSON file that keeps ragbrain's own collection keys; None: in memory.
    """

    def __init__(
        self,
        collection: Collection,
        *,
        space: str,
        unit: bool,
        type_key: str = TYPE,
        source_key: str = SOURCE,
        overlay: Path | None = None,
    ) -> None:
        if space not in SPACES:
            raise InvalidInputError(f"Unknown distance space {space!r}; known: {SPACES}.")
        if space == "ip" and not unit:
            raise InvalidInputError(
                "An inner-product collection of vectors that are not unit length cannot be "
                "read as cosine distances."
            )
        self._collection = collection
        self.space = space
        self.unit = unit
        self.keys = {ours: theirs for ours, theirs in ((TYPE, type_key), (SOURCE, source_key))}
        self._renamed = {ours: theirs for ours, theirs in self.keys.items() if ours != theirs}
        self._overlay_file = overlay
        self._lock = threading.Lock()
        self._overlay = self._read_overlay()

    def rebind(self, collection: Collection) -> None:
        """Read ``collection`` from now on: the same collection through a fresh client
        (``WrappedStore`` follows other processes' writes so)."""
        self._collection = collection

    # --- what the collection is
    @property
    def name(self) -> str:
        """The collection's name."""
        return str(self._collection.name)

    @property
    def id(self) -> Any:
        """The collection's id."""
        return self._collection.id

    @property
    def configuration(self) -> dict[str, Any]:
        """The collection's configuration, its space read as cosine: every distance this view
        returns is a cosine distance."""
        config: dict[str, Any] = dict(self._collection.configuration or {})
        config["hnsw"] = {**dict(config.get("hnsw") or {}), "space": "cosine"}
        config.pop("spann", None)
        return config

    @property
    def metadata(self) -> dict[str, Any]:
        """The collection's metadata with ragbrain's own keys (kept beside it) over it."""
        return {**dict(self._collection.metadata or {}), **self._overlay}

    def count(self) -> int:
        """The number of records."""
        return int(self._collection.count())

    # --- reads
    def get(
        self,
        ids: str | Sequence[str] | None = None,
        where: Mapping[str, Any] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        where_document: Mapping[str, Any] | None = None,
        include: Sequence[str] = ("metadatas", "documents"),
    ) -> dict[str, Any]:
        """``Collection.get`` with ragbrain's keys in ``where`` and in the metadatas."""
        got = self._collection.get(
            ids=ids,  # type: ignore[arg-type]
            where=self._where(where),
            limit=limit,
            offset=offset,
            where_document=where_document,  # type: ignore[arg-type]
            include=list(include),  # type: ignore[arg-type]
        )
        result: dict[str, Any] = dict(got)
        if result.get("metadatas") is not None:
            result["metadatas"] = [self.ragbrain_metadata(m) for m in result["metadatas"]]
        return result

    def peek(self, limit: int = 10) -> dict[str, Any]:
        """The first ``limit`` records, as ``Collection.peek`` returns them."""
        return self.get(limit=limit, include=["embeddings", "documents", "metadatas"])

    def query(
        self,
        query_embeddings: Sequence[Sequence[float]],
        n_results: int = 10,
        where: Mapping[str, Any] | None = None,
        where_document: Mapping[str, Any] | None = None,
        ids: str | Sequence[str] | None = None,
        include: Sequence[str] = ("metadatas", "documents", "distances"),
    ) -> dict[str, Any]:
        """``Collection.query`` by vectors, every distance a cosine distance (0 = same
        direction) and the results in cosine order.

        The query vectors are normalized first. A cosine collection's distances pass as they
        are; an l2 or ip collection of unit vectors has them converted exactly (l2: d / 2;
        ip: d); an l2 collection of other vectors is searched ``RERANK`` times deeper and
        re-ranked by the cosine of each hit's stored vector.
        """
        queries = [_unit(q) for q in query_embeddings]
        wanted = list(include)
        rerank = self.space == "l2" and not self.unit
        fetch = sorted({*wanted, "distances", "embeddings"}) if rerank else wanted
        got = self._collection.query(
            query_embeddings=[q.tolist() for q in queries],
            n_results=n_results * RERANK if rerank else n_results,
            where=self._where(where),
            where_document=where_document,  # type: ignore[arg-type]
            ids=ids,  # type: ignore[arg-type]
            include=fetch,  # type: ignore[arg-type]
        )
        result: dict[str, Any] = dict(got)
        if rerank:
            result = _reranked(result, queries, n_results)
            if "embeddings" not in wanted:
                result["embeddings"] = None
        elif result.get("distances") is not None and self.space == "l2":
            result["distances"] = [[float(d) / 2.0 for d in row] for row in result["distances"]]
        if result.get("metadatas") is not None:
            result["metadatas"] = [
                [self.ragbrain_metadata(m) for m in row] for row in result["metadatas"]
            ]
        result["included"] = wanted
        return result

    def ragbrain_metadata(self, stored: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """A chunk's metadata with its note type and source under ``type`` and ``source``,
        and the metadata as stored under ``STORED_METADATA`` (see ``restore_metadata``)."""
        if not self._renamed:
            return None if stored is None else dict(stored)
        raw = dict(stored or {})
        mapped = dict(raw)
        for ours, theirs in self._renamed.items():
            if theirs in raw:
                mapped[ours] = raw[theirs]
            else:
                mapped.pop(ours, None)
        mapped[STORED_METADATA] = raw
        return mapped

    def _where(self, where: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if where is None:
            return None
        return rename_keys(where, self._renamed)

    # --- ragbrain's own keys
    def modify(
        self,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        configuration: Any = None,
    ) -> None:
        """Keep ragbrain's own keys (``ragbrain:...``) of ``metadata`` beside the collection,
        replacing those kept before, as Chroma replaces a collection's metadata whole; the
        collection's own keys must come back unchanged.

        Raises:
            InvalidInputError: A rename, a new configuration, or a change to the collection's
                own metadata: ragbrain does not change a collection it wraps.
        """
        theirs = dict(self._collection.metadata or {})
        changed = [
            key
            for key, value in (metadata or {}).items()
            if not key.startswith(OWN_PREFIX) and theirs.get(key) != value
        ]
        if name is not None or configuration is not None or changed:
            raise InvalidInputError(
                f"ragbrain does not change the collection {self.name!r} it wraps (asked to "
                f"change {'its name' if name else changed or 'its configuration'}); change it "
                "through your own Chroma client."
            )
        if metadata is None:
            return
        with self._lock:
            self._overlay = {
                k: v for k, v in metadata.items() if k.startswith(OWN_PREFIX) and v is not None
            }
            if self._overlay_file is not None:
                write_text(self._overlay_file, json.dumps(self._overlay, sort_keys=True))

    def _read_overlay(self) -> dict[str, Any]:
        if self._overlay_file is None or not self._overlay_file.is_file():
            return {}
        try:
            raw = json.loads(self._overlay_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("Ignoring ragbrain's unreadable keys at %s: %s", self._overlay_file, exc)
            return {}
        return {str(k): v for k, v in raw.items()} if isinstance(raw, dict) else {}

    # --- writes: the caller's
    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise InvalidInputError(
            f"The collection {self.name!r} is the caller's: ragbrain reads it and never writes "
            "to it. Add or delete documents through your own vector store "
            "(vectorstore.add_documents, vectorstore.delete); ragbrain follows the change."
        )

    add = upsert = update = delete = _read_only


def _unit(vector: Sequence[float]) -> npt.NDArray[np.float64]:
    array = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array


def _reranked(
    result: dict[str, Any], queries: Sequence[npt.NDArray[np.float64]], n_results: int
) -> dict[str, Any]:
    """``result`` (fetched with embeddings) re-ordered per query by true cosine distance, the
    best ``n_results`` kept, every distance replaced by the cosine one."""
    out: dict[str, Any] = {key: value for key, value in result.items() if key not in _FIELDS}
    rows: dict[str, list[Any]] = {key: [] for key in _FIELDS if result.get(key) is not None}
    for row, query in enumerate(queries):
        ids = list(result["ids"][row])
        vectors = np.asarray(result["embeddings"][row], dtype=np.float64).reshape(len(ids), -1)
        norms = np.linalg.norm(vectors, axis=1)
        cosines = (vectors @ query) / np.where(norms > 0, norms, 1.0)
        distances = 1.0 - cosines
        order = np.argsort(distances, kind="stable")[:n_results].tolist()
        for key, kept in rows.items():
            if key == "distances":
                kept.append([float(distances[i]) for i in order])
            else:
                values = list(result[key][row])
                kept.append([values[i] for i in order])
    out.update({key: rows.get(key) for key in _FIELDS})
    return out
