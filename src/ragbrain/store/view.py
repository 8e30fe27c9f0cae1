"""A user's own Chroma collection as ragbrain reads it: cosine distances whatever its distance
space, the note type and source under ragbrain's metadata keys, and ragbrain's own collection
keys (a calibrated gate, ...) kept in a file beside it, never written into the collection.

``CollectionView`` offers the part of chromadb's ``Collection`` that ragbrain's store code
calls (``query``, ``get``, ``peek``, ``count``, ``metadata``, ``modify``); every search path
(plain, type-filtered, scoped, the lexical index's reads) goes through it unchanged. To
ragbrain the collection is read-only: writes belong to the caller's own vector store.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ragbrain._util import write_text
from ragbrain.errors import InvalidInputError

if TYPE_CHECKING:
    from chromadb.api.models.Collection import Collection

log = logging.getLogger(__name__)

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
