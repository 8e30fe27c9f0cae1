"""Searching beyond Chroma's nearest chunks: what a search hands back (``Hit``), what the
graph's nodes need of a store (``SearchableStore``), type-filtered search, path-, tag-
and date-scoped search, and a small store's rows held in memory for reads by id.

What the graph's nodes need of a store: the seam between ``nodes/`` (and the fusion they
call in ``lexical/``) and ``store/``.

``Store`` implements it, and so do the stores built on it: a server store (``Store.open``
with ``server``) and a caller's langchain-chroma collection (``store.wrapped.WrappedStore``).
A test may hand the nodes anything with these members.

Fast type-filtered search: over-fetch the nearest chunks, filter them by type in memory.

Chroma's ``where`` filter gathers every matching record before it searches: at 100k chunks a
filtered query is 16-42x slower than an unfiltered one. Instead, the search reads the nearest
``OVERFETCH * k`` chunks of any type (ids and distances only), keeps those whose type is wanted,
and fetches text and metadata for the ``k`` alone. The result is exact whenever ``k`` of the
nearest chunks have a wanted type.

Types come from an index of the whole store when there is one (``learn_from``: the lexical
index, which keeps every chunk's type), so even a fresh process filters without asking Chroma;
otherwise each id's type is fetched from Chroma the first time it is met.

When too few of the nearest chunks have a wanted type (a rare type), or the index says the
type set is under 1 / ``OVERFETCH`` of the store, that type's vectors are searched exactly in
memory (a matrix product: under a millisecond for thousands of chunks). They are read from
Chroma in a background thread while Chroma's filter answers the query, and kept on disk beside
the store (``ragbrain ingest`` writes them too, and so does ``learn_from`` when the rare
types' are missing), so the next process finds them at once
(checked against the type's current ids before use). A type set with more than
``MAX_CACHED`` chunks always uses Chroma's filter. The in-memory copy is dropped when this
store writes, and reloaded when the collection's count has changed (checked at most every
``RECHECK_SECONDS``, and only once the store's version has moved), so another writer's
changes show up too; every result is checked against Chroma before it is returned.

Path-, tag- and date-filtered search: a mask from an index of the whole store, then either
an over-fetch filtered in memory or Chroma's search restricted to the matching ids.

Chroma's ``where`` cannot say "source under bug/" or "tag db among 'db, ops'", and what it
can say (a time range) costs what the type filter's ``where`` does (16-42x an unfiltered
query at 100k chunks). The index of the whole store (the lexical index, which keeps every
chunk's source, tags and time: ``ragbrain.query.facets``) turns the filters into a mask at once;
then, as for the type filter (``TypeIndex`` above):

- a scope of at least 1 / ``OVERFETCH`` of the store: the ``OVERFETCH * k`` nearest chunks of
  any kind (ids and distances only), those in the mask kept;
- a smaller scope, or an over-fetch that fell short: an exact search of the scope's vectors
  in memory (``ScopeVectors``: a matrix product, under a millisecond for thousands of chunks),
  read from Chroma in a background thread the first time a scope is met; until they are
  there (and for a scope over ``SCOPE_ROWS`` chunks), Chroma's search over the matching ids
  only (``query(ids=...)``, an order of magnitude slower than an unfiltered search at 100k
  chunks: docs/decisions/measured-costs.md).

Every hit is checked against Chroma's own metadata before it is returned; when one no longer
passes (the index lagged behind a writer), the caller searches without the index.

Chunks read by id (``Store.hits_by_id``: those BM25 found that the dense search did not, each
with its text, metadata and cosine distance to the question), from a small store's rows held in
memory (``HeldRows``). Chroma's ``get`` by id costs about as much for one id as for ten
(docs/decisions/measured-costs.md), and a 10,000-character question of ``python -m
benchmarks.latency long`` needs it in most runs. A store of at most ``HELD_ROWS`` chunks is
read whole in a background thread the first time a chunk is read by id (Chroma answers until
then); later reads are served from memory, whichever chunks they ask for. The copy is used only
while the store's version (``Store.version``: the stat of its SQLite file, which every write by
any process changes) is the one read before it was loaded, and is dropped when this store
writes (``forget``). A store without a version (a server store, an in-memory client) is never
held.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, runtime_checkable

import numpy
import numpy as np
import numpy.typing as npt
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file
from typing_extensions import TypedDict

from ragbrain._util import replacing
from ragbrain.query.typematch import fold, stored_spellings

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection
    from chromadb.api.types import GetResult
    from langchain_core.embeddings import Embeddings

    from ragbrain.query.filters import Filters
    from ragbrain.store.ledger import Ledger


# --- what a search hands back ---


class Hit(TypedDict):
    """One chunk found by a search, before it becomes a returned ``Document``."""

    id: str
    text: str
    metadata: dict[str, Any]
    distance: float
    from_fallback: bool
    # A compound question's hit: its cosine distance to each part (``ragbrain.nodes.parts``).
    part_distances: NotRequired[list[float]]


# --- what the graph's nodes need of a store ---


class SearchableStore(Protocol):
    """A store as the nodes search it (``Store`` documents each member)."""

    @property
    def embeddings(self) -> Embeddings:
        """The model queries are embedded with (its name decides the fusion's settings)."""
        ...

    @property
    def embedding_model(self) -> str | None:
        """The model behind the store's distances; None when they mix two."""
        ...

    def search(
        self,
        query: str,
        k: int,
        types: Sequence[str] | None = None,
        filters: Filters | None = None,
    ) -> list[Hit]:
        """The ``k`` chunks nearest to ``query`` (of ``types``, passing ``filters``), best first."""
        ...

    def hits_by_id(self, query: str, ids: Sequence[str]) -> list[Hit]:
        """The given chunks as hits, each with its cosine distance to ``query``."""
        ...

    def known_types(self) -> list[str]:
        """Every note type in the store, as written."""
        ...

    def scope_index(self) -> KnownScope | None:
        """The index of the whole store that masks chunks by filters; None without one."""
        ...

    def ledger(self) -> Ledger:
        """The store's record: its generation (which every write changes), its roots, an
        unfinished ingest."""
        ...


# --- type-filtered search ---

logger = logging.getLogger(__name__)

OVERFETCH = 10
#: The most chunks of a type set whose vectors are kept in memory (15 MB at 384 dimensions).
MAX_CACHED = 10_000
#: How often, at most, a kept copy checks the collection's count for other writers' changes.
RECHECK_SECONDS = 2.0
#: Read a type set's vectors in a background thread (False: in the query that needs them).
LOAD_IN_BACKGROUND = True


CACHE_FORMAT = "ragbrain-type-vectors/1"


class KnownTypes(Protocol):
    """An index of every chunk's note type, as of the ``len()`` chunks it covers."""

    #: Changes whenever the set of chunk ids does.
    fingerprint: str

    def __len__(self) -> int: ...

    def type_of(self, id_: str) -> str | None:
        """The chunk's type; None for an id the index does not know."""
        ...

    def ids_of_types(self, types: Iterable[str]) -> list[str]:
        """Every chunk id of any of ``types``."""
        ...

    def type_counts(self) -> dict[str, int]:
        """Chunks per type."""
        ...


def too_rare_to_overfetch(share: float) -> bool:
    """Whether a type set with this share of the store's chunks is searched in memory at once:
    among the ``OVERFETCH * k`` nearest chunks it would rarely find ``k`` of its own."""
    return share * OVERFETCH < 1


def type_where(types: Sequence[str]) -> dict[str, Any]:
    """Chroma's ``where`` clause for chunks of any of ``types``."""
    if len(types) == 1:
        return {"type": types[0]}
    return {"type": {"$in": list(types)}}


@dataclass
class _TypeVectors:
    """The unit vectors of every chunk of one type set, as of ``count`` chunks in the store."""

    ids: list[str]
    matrix: numpy.ndarray[Any, Any]  # rows normalized, float32
    count: int
    checked: float
    version: object = None  # the store's version the count was checked at (None: unknown)


class TypeIndex:
    """Chunk id -> note type, and exact in-memory search of rare types' vectors.

    Without an index of the whole store, an id's type is fetched from Chroma when first met:
    reading every chunk's type up front costs seconds at 100k chunks, a price a one-shot CLI
    query would pay each time, while fetching the types of the ids a search returns costs a
    millisecond or two, and the map warms up as a long-lived process keeps searching.
    """

    def __init__(
        self,
        collection: Collection,
        limit: int = 1_000_000,
        *,
        keep_vectors: bool = True,
        cache_folder: Path | None = None,
        version: Callable[[], object] | None = None,
    ) -> None:
        """Args:
        collection: The Chroma collection searched.
        limit: The most id -> type entries kept (the map is emptied when it would grow past).
        keep_vectors: Read and keep rare types' vectors for exact in-memory search; False
            leaves rare types to Chroma's filter.
        cache_folder: Where rare types' vectors are kept between processes; None keeps
            them in memory only.
        version: A cheap token of the store's data (``Store.version``); while it is
            unchanged, kept vectors are not rechecked against the collection's count.
        """
        self._collection = collection
        self._keep_vectors = keep_vectors
        self._cache_folder = cache_folder
        self._version = version or (lambda: None)
        self._types: dict[str, str] = {}
        self._limit = limit
        self._lock = threading.Lock()
        # Type set -> its vectors, or None when it has too many chunks to keep.
        self._vectors: dict[frozenset[str], _TypeVectors | None] = {}
        self._loading: set[frozenset[str]] = set()
        self._generation = 0
        self._known: Callable[[], KnownTypes] | None = None
        # Ids this store has written since: their type is asked of Chroma, not of ``_known``
        # (an index of the whole store may predate the write).
        self._written: set[str] = set()

    def learn_from(self, known: Callable[[], KnownTypes]) -> None:
        """Take chunk types from an index of the whole store (``known()`` returns its current
        version, in step with the store) instead of asking Chroma for each id met.

        Also keeps the rare types' vectors when they are missing (a store written by other
        means than `ragbrain ingest`), so that even the first query of such a type is not
        Chroma's slow filter; checking them when they are there is cheap
        (docs/decisions/measured-costs.md).
        """
        with self._lock:
            self._known = known
            self._written.clear()
        self.keep_small_types(known(), only_rare=True)

    def whole_store(self) -> KnownTypes | None:
        """The index of the whole store registered with ``learn_from`` (its current version),
        or None."""
        return self._known_now()

    def _known_now(self) -> KnownTypes | None:
        with self._lock:
            source = self._known
        return source() if source is not None else None

    def types_of(self, ids: Sequence[str]) -> list[str]:
        """The type of each id ("" when it has none or is gone)."""
        known = self._known_now()
        with self._lock:
            found: dict[str, str] = {}
            for id_ in ids:
                type_ = self._types.get(id_)
                if type_ is None and known is not None and id_ not in self._written:
                    type_ = known.type_of(id_)
                if type_ is not None:
                    found[id_] = type_
            unknown = [i for i in ids if i not in found]
            if unknown:
                if len(self._types) + len(unknown) > self._limit:
                    self._types.clear()  # bounded memory on huge stores
                page = self._collection.get(ids=unknown, include=["metadatas"])
                for id_, meta in zip(page["ids"], page["metadatas"] or [], strict=True):
                    found[id_] = self._types[id_] = str((meta or {}).get("type", ""))
            return [found.get(i, "") for i in ids]

    def known_types(self) -> list[str] | None:
        """Every type of the store, as written, by the index of the whole store; None
        without one."""
        known = self._known_now()
        return None if known is None else list(known.type_counts())

    def spellings(self, types: Iterable[str]) -> frozenset[str]:
        """The stored spellings of ``types`` (matched case-insensitively) by the index of the
        whole store; ``types`` as given without one."""
        known = self.known_types()
        return frozenset(types if known is None else stored_spellings(types, known))

    def share_of(self, types: frozenset[str]) -> float | None:
        """The share of the store's chunks that have one of ``types``, by the index of the
        whole store; None without one."""
        known = self._known_now()
        if known is None or not len(known):
            return None
        counts = known.type_counts()
        return sum(counts.get(t, 0) for t in types) / len(known)

    def forget(self, ids: Sequence[str]) -> None:
        """Drop ids whose metadata may have changed (fetched again when seen), and every kept
        copy of a type's vectors."""
        with self._lock:
            for id_ in ids:
                self._types.pop(id_, None)
            self._written.update(ids)
            if len(self._written) > self._limit:
                self._known = None  # too many writes to track: ask Chroma from now on
                self._written.clear()
            self._vectors.clear()
            self._generation += 1  # a load under way may predate the write: not kept

    def nearest_of_types(
        self, vector: Sequence[float], k: int, types: frozenset[str]
    ) -> list[tuple[str, float]] | None:
        """The ``k`` chunks of ``types`` nearest to ``vector`` by exact cosine distance.

        Returns:
            ``(id, distance)`` pairs, best first; None while the type set's vectors are being
            read, or when it has more than ``MAX_CACHED`` chunks (the caller then asks
            Chroma's filter).
        """
        entry = self._type_vectors(types) if self._keep_vectors else None
        if entry is None:
            return None
        if not entry.ids:
            return []
        query = numpy.asarray(vector, dtype=numpy.float32)
        norm = float(numpy.linalg.norm(query))
        if not norm:
            return None
        distances = 1.0 - entry.matrix @ (query / norm)
        distances[~numpy.isfinite(distances)] = 2.0  # a damaged row is never near
        if len(distances) > k:
            nearest = numpy.argpartition(distances, k)[:k]
        else:
            nearest = numpy.arange(len(distances))
        ordered = nearest[numpy.argsort(distances[nearest], kind="stable")]
        return [(entry.ids[i], max(0.0, float(distances[i]))) for i in ordered]

    def _type_vectors(self, types: frozenset[str]) -> _TypeVectors | None:
        """The kept vectors of ``types`` if they are fresh; else those kept on disk if they
        match the type's current ids; else (re)load them from Chroma and return None until
        they are there (or, with ``LOAD_IN_BACKGROUND`` off, load them now)."""
        with self._lock:
            if types in self._vectors and self._still_fresh(types):
                return self._vectors[types]
            generation = self._generation
        known = self._in_step()
        if known is not None:
            size = sum(known.type_counts().get(t, 0) for t in types)
            stored = self._read_cached(types, known)[0] if size <= MAX_CACHED else None
            with self._lock:
                if generation == self._generation and (stored or size > MAX_CACHED):
                    self._vectors[types] = stored
                    return stored
        with self._lock:
            if types in self._loading:
                return None
            self._loading.add(types)
        if LOAD_IN_BACKGROUND:
            threading.Thread(
                target=self._load, args=(types, known), name="ragbrain-type-vectors", daemon=True
            ).start()
            return None
        self._load(types, known)
        with self._lock:
            return self._vectors.get(types)

    def _still_fresh(self, types: frozenset[str]) -> bool:
        """Whether the kept entry of ``types`` may be used (call with the lock held); a stale
        one is dropped. The collection's count is checked at most every ``RECHECK_SECONDS``."""
        entry = self._vectors[types]
        now = time.monotonic()
        if entry is None or now - entry.checked < RECHECK_SECONDS:
            return True
        version = self._version()
        if version is not None and version == entry.version:
            entry.checked = now
            return True
        if self._collection.count() == entry.count:
            entry.checked, entry.version = now, version
            return True
        del self._vectors[types]
        return False

    def _in_step(self) -> KnownTypes | None:
        """The index of the whole store, unless this store wrote since (the index may not have
        those writes yet). It keeps itself in step with other writers (the lexical searcher
        rechecks the count every few seconds), so no count is asked here: Chroma's grows with
        the store."""
        known = self._known_now()
        with self._lock:
            return None if self._written else known

    def keep_small_types(self, known: KnownTypes, *, only_rare: bool = False) -> list[str]:
        """Read and keep on disk the vectors of every type with at most ``MAX_CACHED`` chunks
        whose kept copy is missing or out of date, so that the next process searches them in
        memory from its first query (``ragbrain ingest`` calls this after writing).

        Args:
            known: An index of the whole store, in step with it.
            only_rare: Only the types under 1 / ``OVERFETCH`` of the store, which a query
                searches in memory at once (the others need their vectors only when an
                over-fetch falls short, and read them then).

        Returns:
            The types whose vectors were (re)read.
        """
        if self._cache_folder is None or not self._keep_vectors:
            return []
        refreshed = []
        for type_, size in sorted(known.type_counts().items()):
            types = frozenset({type_})
            if size > MAX_CACHED or not type_:  # "": chunks without a type, never filtered on
                continue
            if only_rare and not too_rare_to_overfetch(size / len(known)):
                continue
            stored, same_store = self._read_cached(types, known)
            if stored is not None and not same_store:  # other chunks changed: re-stamp it
                self._write_cached(types, stored, known.fingerprint)
            elif stored is None:
                with self._lock:
                    self._loading.add(types)
                self._load(types, known)
                refreshed.append(type_)
        return refreshed

    def _cache_file(self, types: frozenset[str]) -> Path | None:
        if self._cache_folder is None:
            return None
        digest = hashlib.sha256("\0".join(sorted(types)).encode("utf-8")).hexdigest()[:16]
        return self._cache_folder / f"{digest}.safetensors"

    def _read_cached(
        self, types: frozenset[str], known: KnownTypes
    ) -> tuple[_TypeVectors | None, bool]:
        """The vectors kept on disk for ``types`` if they are for exactly the type's current
        ids (by ``known``) in this collection, else None (missing, stale or unreadable: then
        read from Chroma); and whether they were stamped with ``known``'s fingerprint (then
        the ids need no comparing)."""
        path = self._cache_file(types)
        if path is None or not path.is_file():
            return None, False
        try:
            with safe_open(path, framework="np") as kept_file:
                header = kept_file.metadata() or {}
                kept = json.loads(header.get("ids", "null"))
                matrix = numpy.asarray(kept_file.get_tensor("vectors"), dtype=numpy.float32)
        except (OSError, ValueError, SafetensorError) as exc:
            logger.debug("Ignoring the kept vectors at %s: %s", path, exc)
            return None, False
        same_store = header.get("store") == known.fingerprint
        valid = (
            header.get("format") == CACHE_FORMAT
            and header.get("collection") == str(self._collection.id)
            and header.get("types") == json.dumps(sorted(types))
            and isinstance(kept, list)
            and matrix.ndim == 2
            and matrix.shape[0] == len(kept)
            and (same_store or set(kept) == set(known.ids_of_types(types)))
        )
        if not valid or not isinstance(kept, list):
            return None, False
        entry = _TypeVectors(ids=kept, matrix=matrix, count=len(known), checked=time.monotonic())
        return entry, same_store

    def _write_cached(self, types: frozenset[str], entry: _TypeVectors, store: str) -> None:
        """Keep ``entry`` on disk for the next process (safetensors, written to a temporary
        file and renamed; a failure only logs). ``store`` is the fingerprint of the store's
        ids that ``entry`` is known to match, or ""."""
        path = self._cache_file(types)
        if path is None:
            return
        header = {
            "format": CACHE_FORMAT,
            "collection": str(self._collection.id),
            "types": json.dumps(sorted(types)),
            "ids": json.dumps(entry.ids),
            "store": store,
        }
        try:
            with replacing(path) as temporary:
                save_file({"vectors": entry.matrix}, str(temporary), metadata=header)
        except OSError as exc:
            logger.debug(
                "Could not keep the vectors of types %s at %s: %s", sorted(types), path, exc
            )

    def _load(self, types: frozenset[str], known: KnownTypes | None = None) -> None:
        """Read the vectors of ``types`` from Chroma, keep them, and write them to disk
        (stamped with ``known``'s fingerprint when it agrees on the type's ids)."""
        with self._lock:
            generation = self._generation
        try:
            version = self._version()  # before the count: a write after it changes it
            count = self._collection.count()
            page = self._collection.get(
                where=type_where(sorted(types)), include=["embeddings"], limit=MAX_CACHED + 1
            )
            ids = list(page["ids"])
            entry: _TypeVectors | None = None
            if len(ids) <= MAX_CACHED:
                raw = page["embeddings"]
                dimension = 0 if raw is None or not len(raw) else len(raw[0])
                vectors = numpy.asarray(raw if ids else [], dtype=numpy.float32).reshape(
                    len(ids), dimension
                )
                norms = numpy.linalg.norm(vectors, axis=1, keepdims=True)
                unit = (vectors / numpy.where(norms == 0, 1.0, norms)).astype(numpy.float32)
                entry = _TypeVectors(ids, unit, count, time.monotonic(), version)
            with self._lock:
                current = generation == self._generation
                if current:
                    self._vectors[types] = entry
            if current and entry is not None:
                agrees = known is not None and set(ids) == set(known.ids_of_types(types))
                self._write_cached(types, entry, known.fingerprint if known and agrees else "")
        except Exception:  # a failed load only means that Chroma's filter keeps answering
            logger.debug("Reading the vectors of types %s failed", sorted(types), exc_info=True)
        finally:
            with self._lock:
                self._loading.discard(types)


def typed_nearest(
    collection: Collection, index: TypeIndex, vector: Sequence[float], k: int, types: set[str]
) -> list[Hit] | None:
    """The ``k`` nearest chunks of ``types``: among the ``OVERFETCH * k`` nearest of any type,
    or, when too few of those have a wanted type, by an exact search of that type's vectors.
    A type set known to be too rare for over-fetching (under 1 / ``OVERFETCH`` of the store)
    is searched exactly at once when its vectors are at hand.

    Returns:
        The hits, best first; None when neither way gives a trustworthy answer (the caller
        then asks Chroma's own filter).
    """
    # Types match case-insensitively: the wanted set is the types' stored spellings.
    wanted = index.spellings(types)
    folded = {fold(t) for t in wanted}
    share = index.share_of(wanted)
    exact = None
    if share is not None and too_rare_to_overfetch(share):
        exact = index.nearest_of_types(vector, k, wanted)
    if exact is not None:
        kept = exact
    else:
        query_embeddings: list[Sequence[float]] = [list(vector)]
        nearest = collection.query(
            query_embeddings=query_embeddings, n_results=k * OVERFETCH, include=["distances"]
        )
        ids = nearest["ids"][0]
        distances = (nearest["distances"] or [[]])[0]
        kept = [
            (id_, float(d))
            for id_, d, t in zip(ids, distances, index.types_of(ids), strict=True)
            if fold(t) in folded
        ][:k]
        if len(kept) < k and len(ids) == k * OVERFETCH:
            exact = index.nearest_of_types(vector, k, wanted)
            if exact is None:
                return None
            kept = exact
    if not kept:
        return []
    page = collection.get(ids=[i for i, _ in kept], include=["documents", "metadatas"])
    records: dict[str, tuple[str, dict[str, Any]]] = {
        id_: (text or "", dict(meta or {}))
        for id_, text, meta in zip(
            page["ids"], page["documents"] or [], page["metadatas"] or [], strict=True
        )
    }
    if any(
        i not in records or fold(str(records[i][1].get("type", ""))) not in folded for i, _ in kept
    ):
        index.forget([i for i, _ in kept])  # changed under us: let Chroma filter this time
        return None
    return [
        Hit(
            id=id_,
            text=records[id_][0],
            metadata=records[id_][1],
            distance=max(0.0, d),
            from_fallback=False,
        )
        for id_, d in kept
    ]


# --- path-, tag- and date-scoped search ---

#: The most chunks of a scope whose vectors are kept (30 MB at 384 dimensions) ...
SCOPE_ROWS = 20_000
#: ... and of all kept scopes together (the least recently used are dropped first).
KEPT_ROWS = 40_000

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

    from ragbrain.query.filters import Filters


@runtime_checkable
class KnownScope(Protocol):
    """An index of every chunk that can mask chunks by type and filters (``LexicalIndex``)."""

    def __len__(self) -> int: ...

    def position(self, id_: str) -> int | None:
        """The chunk's position in the masks; None for an id the index does not know."""
        ...

    def scope_mask(
        self, types: Sequence[str] | None, filters: Filters | None
    ) -> npt.NDArray[np.bool_]:
        """Which chunks (by position) are of ``types`` and pass ``filters``."""
        ...

    def ids_at(self, mask: npt.NDArray[np.bool_]) -> list[str]:
        """The ids a mask keeps."""
        ...

    def missing_times(self) -> int:
        """How many chunks have no recorded time."""
        ...

    def unmatched(self, filters: Filters) -> list[str]:
        """The path prefixes and tags that match no chunk, each with the closest ones."""
        ...


def scope_note(known: KnownScope | None, types: Sequence[str] | None, filters: Filters) -> str:
    """The trace line of a filtered search: what was filtered, and how many chunks it left."""
    note = f"filters ({filters.describe()})"
    if known is None:
        return note + ": checked chunk by chunk (no index of the whole store)"
    matching = int(known.scope_mask(None, filters).sum())
    note += f": {matching:,} of {len(known):,} chunks in scope"
    if types:
        typed = int(known.scope_mask(types, filters).sum())
        note += f", {typed:,} of them of the types asked"
    missing = known.missing_times() if filters.dated else 0
    if missing:
        note += (
            f"; {missing:,} chunks have no recorded time (ingested before times were "
            "recorded), so the date filter leaves them out: `ragbrain ingest` their folder "
            "again records it without embedding anything"
        )
    if not matching:
        note += "; no chunk passes them, so nothing can be returned: widen or drop one"
        note += "".join(f"; {phrase}" for phrase in known.unmatched(filters))
    return note


class ScopeVectors:
    """The unit vectors of the last few small scopes, for exact search in memory.

    A scope is keyed by its exact ids, so any change to which chunks it holds is a new scope;
    an id's vector never changes (ids are digests of the chunk's text and metadata).
    """

    def __init__(self, collection: Collection) -> None:
        self._collection = collection
        self._lock = threading.Lock()
        self._kept: OrderedDict[int, tuple[list[str], npt.NDArray[np.float32]]] = OrderedDict()
        self._loading: set[int] = set()

    def nearest(
        self, ids: Sequence[str], vector: Sequence[float], k: int, *, wait: bool = False
    ) -> list[tuple[str, float]] | None:
        """The ``k`` of ``ids`` nearest to ``vector``; None while their vectors are being read
        (started here, in a background thread, unless ``wait``) or if there are too many."""
        if not ids or len(ids) > SCOPE_ROWS:
            return None
        key = hash(tuple(ids))
        with self._lock:
            entry = self._kept.get(key)
            if entry is not None:
                self._kept.move_to_end(key)
            elif key in self._loading:
                return None
            else:
                self._loading.add(key)
        if entry is None:
            if not wait:
                threading.Thread(
                    target=self._load,
                    args=(key, list(ids)),
                    name="ragbrain-scope-vectors",
                    daemon=True,
                ).start()
                return None
            self._load(key, list(ids))
            with self._lock:
                entry = self._kept.get(key)
            if entry is None:
                return None
        kept_ids, matrix = entry
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        if not norm or len(kept_ids) != len(ids):
            return None
        # einsum, not `@`: OpenBLAS's threaded matrix-vector product waits for its threads
        # beside torch's and Chroma's (docs/decisions/measured-costs.md).
        distances = 1.0 - np.einsum("ij,j->i", matrix, query / norm)
        distances[~np.isfinite(distances)] = 2.0
        top = np.argpartition(distances, k)[:k] if len(distances) > k else np.arange(len(ids))
        ordered = top[np.argsort(distances[top], kind="stable")]
        return [(kept_ids[i], max(0.0, float(distances[i]))) for i in ordered]

    def _load(self, key: int, ids: list[str]) -> None:
        try:
            page = self._collection.get(ids=ids, include=["embeddings"])
            found = list(page["ids"])
            raw = page["embeddings"]
            dimension = 0 if raw is None or not len(raw) else len(raw[0])
            vectors = np.asarray(raw if found else [], dtype=np.float32).reshape(
                len(found), dimension
            )
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            unit = (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)
            with self._lock:
                self._kept[key] = (found, unit)
                while sum(len(e[0]) for e in self._kept.values()) > KEPT_ROWS:
                    self._kept.popitem(last=False)
        except Exception:  # a failed load only means that Chroma keeps answering
            logger.debug("Reading the vectors of a scope failed", exc_info=True)
        finally:
            with self._lock:
                self._loading.discard(key)


def passes(metadata: dict[str, Any], types: set[str] | None, filters: Filters) -> bool:
    """Whether a chunk's own metadata passes the type filter (folded ``types``) and ``filters``."""
    if types and fold(str(metadata.get("type", ""))) not in types:
        return False
    return filters.matches(metadata)


def _records(collection: Collection, ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
    page = collection.get(ids=list(ids), include=["documents", "metadatas"])
    return {
        id_: (text or "", dict(meta or {}))
        for id_, text, meta in zip(
            page["ids"], page["documents"] or [], page["metadatas"] or [], strict=True
        )
    }


def restricted_nearest(
    collection: Collection, vector: Sequence[float], k: int, ids: Sequence[str]
) -> list[tuple[str, float]]:
    """The ``k`` of ``ids`` nearest to ``vector`` by Chroma's search restricted to them."""
    if not ids:
        return []
    embeddings: list[Sequence[float]] = [list(vector)]
    found = collection.query(
        query_embeddings=embeddings,
        n_results=min(k, len(ids)),
        ids=list(ids),
        include=["distances"],
    )
    return list(zip(found["ids"][0], (found["distances"] or [[]])[0], strict=True))


def as_hits(
    collection: Collection,
    kept: Iterable[tuple[str, float]],
    types: set[str] | None,
    filters: Filters,
) -> list[Hit] | None:
    """The hits for ``(id, distance)`` pairs, read from Chroma; None if any no longer passes."""
    kept = list(kept)
    if not kept:
        return []
    records = _records(collection, [i for i, _ in kept])
    if any(i not in records or not passes(records[i][1], types, filters) for i, _ in kept):
        return None
    return [
        Hit(
            id=id_,
            text=records[id_][0],
            metadata=records[id_][1],
            distance=max(0.0, float(d)),
            from_fallback=False,
        )
        for id_, d in kept
    ]


def scoped_nearest(
    collection: Collection,
    known: KnownScope,
    kept: ScopeVectors | None,
    vector: Sequence[float],
    k: int,
    types: Sequence[str] | None,
    filters: Filters,
) -> list[Hit] | None:
    """The ``k`` nearest chunks of ``types`` that pass ``filters``, by the index's mask.

    Returns:
        The hits, best first; None when the index is out of step with Chroma (the caller
        then filters without it).
    """
    mask = known.scope_mask(types, filters)
    matching = int(mask.sum())
    folded = {fold(t) for t in types} if types else None
    if not matching:
        return []
    if matching * OVERFETCH >= len(known):
        embeddings: list[Sequence[float]] = [list(vector)]
        nearest = collection.query(
            query_embeddings=embeddings, n_results=k * OVERFETCH, include=["distances"]
        )
        ids = nearest["ids"][0]
        distances = (nearest["distances"] or [[]])[0]
        inside = []
        for id_, distance in zip(ids, distances, strict=True):
            position = known.position(id_)
            if position is not None and mask[position]:
                inside.append((id_, float(distance)))
        if len(inside) >= min(k, matching):
            return as_hits(collection, inside[:k], folded, filters)
    scope = known.ids_at(mask)
    exact = kept.nearest(scope, vector, k) if kept is not None else None
    if exact is None:
        exact = restricted_nearest(collection, vector, k, scope)
    return as_hits(collection, exact, folded, filters)


def scan_nearest(
    collection: Collection,
    pages: Iterable[tuple[list[str], list[Any]]],
    vector: Sequence[float],
    k: int,
    types: Sequence[str] | None,
    filters: Filters,
) -> list[Hit]:
    """The same without an index: every chunk's metadata (``pages`` of ids and metadatas,
    already narrowed by Chroma's ``where`` where it can) checked in memory, then Chroma's
    search restricted to those that pass. Slow on a large store (it reads every
    candidate's metadata), exact always."""
    folded = {fold(t) for t in types} if types else None
    ids = [
        id_
        for page_ids, metas in pages
        for id_, meta in zip(page_ids, metas, strict=True)
        if passes(dict(meta or {}), folded, filters)
    ]
    hits = as_hits(collection, restricted_nearest(collection, vector, k, ids), folded, filters)
    return hits or []


# --- chunks read by id: a small store's rows held in memory ---

#: The most chunks held: about 40 MB at 384 dimensions and 2,000 characters a chunk.
HELD_ROWS = 10_000


@dataclass(frozen=True)
class Rows:
    """Chunks read by id: their ids (in the order asked, each once, those the store holds),
    texts, metadatas and stored vectors (one row each, float64 as Chroma returns them)."""

    ids: list[str]
    texts: list[str]
    metadatas: list[dict[str, Any]]
    vectors: npt.NDArray[np.float64]


@dataclass(frozen=True)
class _Held:
    version: object  # the store's version read before the rows were
    ids: list[str]
    position: dict[str, int]
    texts: list[str]
    metadatas: list[dict[str, Any]]
    vectors: npt.NDArray[np.floating[Any]]  # float32 where that is exact (Chroma keeps float32)


class HeldRows:
    """The whole store's rows while it is small and unchanged (see the module docstring)."""

    def __init__(
        self,
        count: Callable[[], int],
        pages: Callable[[], Iterable[GetResult]],
        version: Callable[[], object],
    ) -> None:
        """Args:
        count: The store's chunk count.
        pages: Every record with its document, metadata and embedding, page by page.
        version: The store's change token (``Store.version``); None: the store is never held.
        """
        self._count = count
        self._pages = pages
        self._version = version
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # notified when a load ends
        self._held: _Held | None = None
        self._skip: object = None  # a version not read again (too many chunks, a failed read)
        self._loading = False
        self._generation = 0  # bumped by ``forget``: a load begun before it is not kept

    def rows(self, ids: Sequence[str], *, wait: bool = False) -> Rows | None:
        """The rows of ``ids`` from memory; None when the store's rows are not held at its
        current version (a load is started in a background thread, unless one runs or the
        store has too many chunks): the caller reads them from Chroma. With ``wait``, a load
        in flight is waited for, and one started runs in this thread."""
        version = self._version()
        if version is None:
            return None
        with self._lock:
            if wait:
                self._idle.wait_for(lambda: not self._loading)
            held = self._held
            start = None
            if held is None or held.version != version:
                self._held = held = None
                if not self._loading and self._skip != version:
                    self._loading, start = True, self._generation
        if start is not None and wait:
            self._load(start)
            with self._lock:
                held = self._held
            held = held if held is not None and held.version == version else None
        elif start is not None:
            threading.Thread(
                target=self._load, args=(start,), name="ragbrain-held-rows", daemon=True
            ).start()
        if held is None:
            return None
        found = [p for p in map(held.position.get, dict.fromkeys(ids)) if p is not None]
        return Rows(
            ids=[held.ids[p] for p in found],
            texts=[held.texts[p] for p in found],
            metadatas=[dict(held.metadatas[p]) for p in found],
            vectors=held.vectors[found].astype(np.float64),
        )

    def forget(self) -> None:
        """Drop the rows (this store wrote), and any load in flight."""
        with self._lock:
            self._held = None
            self._skip = None
            self._generation += 1

    def _load(self, generation: int) -> None:
        version: object = None
        held: _Held | None = None
        try:
            version = self._version()  # before the read: a write after it changes it
            if version is not None and self._count() <= HELD_ROWS:
                ids: list[str] = []
                texts: list[str] = []
                metadatas: list[dict[str, Any]] = []
                blocks: list[npt.NDArray[np.float64]] = []
                for page in self._pages():
                    found = list(page["ids"])
                    ids += found
                    texts += [t or "" for t in page["documents"] or [""] * len(found)]
                    metadatas += [dict(m or {}) for m in page["metadatas"] or [{}] * len(found)]
                    raw = page["embeddings"]
                    if raw is not None and found:
                        blocks.append(np.asarray(raw, dtype=np.float64).reshape(len(found), -1))
                    if len(ids) > HELD_ROWS:  # grown since the count
                        break
                if len(ids) <= HELD_ROWS:
                    vectors = np.concatenate(blocks) if blocks else np.zeros((0, 0))
                    if vectors.shape[0] != len(ids):
                        raise ValueError("a page came back without its embeddings")
                    single = vectors.astype(np.float32)
                    exact = np.array_equal(single.astype(np.float64), vectors)
                    position = {id_: i for i, id_ in enumerate(ids)}
                    held = _Held(
                        version, ids, position, texts, metadatas, single if exact else vectors
                    )
        except Exception:  # a failed read only means that Chroma keeps answering
            logger.debug("Reading the store's rows failed", exc_info=True)
        with self._lock:
            if generation == self._generation:
                self._held = held
                self._skip = version if held is None else None
            self._loading = False
            self._idle.notify_all()
