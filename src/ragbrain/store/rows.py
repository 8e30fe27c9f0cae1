"""Every chunk of a small store held in memory, for reading chunks by id without Chroma.

Hybrid search hands over chunks that BM25 found and the dense search did not; each needs its
text, metadata and cosine distance to the question (``Store.hits_by_id``). Chroma's ``get``
by id costs close to a millisecond a call, however few the ids: on the bundled sample notes a
10,000-character question needs it in most runs, a 100-character one in about a third, and it
was most of what the long question cost beyond the short one
(``python -m benchmarks.latency long``).

A store of at most ``HELD_ROWS`` chunks is read once, whole, in a background thread (the
first time a chunk is read by id; Chroma answers until the copy is there) and every later
read by id is served from memory, whichever chunks are asked: its cost does not depend on
questions asking for the same chunks again. The copy is used only while the store's version
(``Store.version``: the stat of its SQLite file, which every write by any process changes) is
the one read before it was loaded, and dropped when this store writes (``forget``), as the
type index's kept vectors are. A store without a version (a server store, an in-memory
client) is never held: Chroma answers every read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from chromadb.api.types import GetResult

logger = logging.getLogger(__name__)

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
        self._too_many: object = None  # the version at which the store had too many chunks
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
                if not self._loading and self._too_many != version:
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
            self._too_many = None
            self._generation += 1

    def _load(self, generation: int) -> None:
        try:
            version = self._version()  # before the read: a write after it changes it
            held: _Held | None = None
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
            with self._lock:
                if generation == self._generation:
                    self._held = held
                    self._too_many = version if held is None else None
        except Exception:  # a failed load only means that Chroma keeps answering
            logger.debug("Reading the store's rows failed", exc_info=True)
        finally:
            with self._lock:
                self._loading = False
                self._idle.notify_all()
