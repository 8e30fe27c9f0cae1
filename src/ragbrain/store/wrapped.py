"""A caller's langchain-chroma ``Chroma`` as a ragbrain ``Store``: the caller's client and
collection reused (never a second client), the collection checked once (distance space,
vector lengths, dimension, stored texts, metadata keys), and ragbrain's files about it kept
in the cache folder, or in a temporary folder for an in-memory client."""

from __future__ import annotations

import hashlib
import logging
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ragbrain.checks import describe
from ragbrain.errors import StoreMismatchError, StoreNotFoundError, WrongTypeError
from ragbrain.models import agreement
from ragbrain.models.embeddings import model_name_of
from ragbrain.paths import cache_root
from ragbrain.store.collection import space as collection_space
from ragbrain.store.resilience import StorePolicy
from ragbrain.store.store import Store
from ragbrain.store.view import RERANK, SPACES, UNIT_TOLERANCE, CollectionView

if TYPE_CHECKING:
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from langchain_core.embeddings import Embeddings

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
    type_key: str,
    source_key: str,
    stored_model: str | None = None,
    check_model: bool = True,
) -> Inspection:
    """Check that ragbrain can read ``collection`` with ``embeddings``, on a sample.

    Args:
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
    model = model_name_of(embeddings)
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
        name, space, unit, count, texts, keys, type_key, source_key, dimension, agreed
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
        from ragbrain.store.follow import fresh_client

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


def sidecar_key(location: str, embeddings: Embeddings, inspection: Inspection) -> str:
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
        f"model={model_name_of(embeddings)}",
        f"dimension={inspection.dimension}",
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def wrap_chroma(
    vectorstore: object,
    embeddings: Embeddings | None = None,
    *,
    type_key: str = "type",
    source_key: str = "source",
    policy: StorePolicy | None = None,
    check_model: bool = True,
) -> tuple[WrappedStore, Inspection]:
    """A ``Store`` over a langchain-chroma ``Chroma``'s own client and collection.

    Args:
        vectorstore: A ``langchain_chroma.Chroma``.
        embeddings: The model that embeds queries; None: the vector store's own.
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
    stored_model = model_name_of(own) if own is not None and embeddings is not None else None
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
    if sqlite is not None:  # the caller's client too: one Chroma call at a time (``serial``)
        from ragbrain.store.serial import serialize

        serialize(getattr(client, "_server", None), sqlite.parent)
    location = f"{where}#{collection.name}@{collection.id}"
    inspection = inspect_collection(
        collection,
        embeddings,
        type_key=type_key,
        source_key=source_key,
        stored_model=stored_model,
        check_model=check_model,
    )
    if where == "memory":  # nothing of an in-memory collection outlives the process
        sidecars = Path(tempfile.mkdtemp(prefix="ragbrain-wrapped-"))
    else:
        sidecars = cache_root() / "wrapped" / sidecar_key(location, embeddings, inspection)
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
