"""Searching a store: the chunks nearest to a query (with type and scope filters), chunks
by id with their distance to a query, the query vectors' cache, the store's note types."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ragbrain.errors import InvalidInputError
from ragbrain.query.typematch import stored_spellings
from ragbrain.store.hits import Hit
from ragbrain.store.reading import Reading
from ragbrain.store.scoped import KnownScope, scan_nearest, scoped_nearest
from ragbrain.store.type_index import type_where, typed_nearest

if TYPE_CHECKING:
    from ragbrain.query.filters import Filters

#: How long a server store's list of types is reused when no index of the store has it.
TYPES_SECONDS = 5.0


class Searching(Reading):
    """The part of ``Store`` that searches (what the graph's nodes ask of a store)."""

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
        # over-fetch unfiltered and filter in memory (see type_index.py); a rare type falls
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
        carries the same kind of distance as one found by the vector search.
        """
        if not ids:
            return []
        found = self.call(
            "Reading chunks",
            lambda: self.collection.get(
                ids=list(ids), include=["documents", "metadatas", "embeddings"]
            ),
        )
        if not found["ids"]:
            return []
        query_vector = np.asarray(self._query_vector(query), dtype=np.float64)
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
