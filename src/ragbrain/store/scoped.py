"""Path-, tag- and date-filtered search: a mask from an index of the whole store, then either
an over-fetch filtered in memory or Chroma's search restricted to the matching ids.

Chroma's ``where`` cannot say "source under bug/" or "tag db among 'db, ops'", and what it
can say (a time range) costs what the type filter's ``where`` does (16-42x an unfiltered
query at 100k chunks). The index of the whole store (the lexical index, which keeps every
chunk's source, tags and time: ``ragbrain.query.facets``) turns the filters into a mask at once;
then, as for the type filter (``type_index``):

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
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from ragbrain.query.typematch import fold
from ragbrain.store.hits import Hit
from ragbrain.store.type_index import OVERFETCH

logger = logging.getLogger(__name__)
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
