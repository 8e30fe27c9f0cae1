"""Writing to a store: chunks written, deleted or given new metadata, each under the
store's writer lock (``Writing.writing``), and crash repair."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any, Literal

from ragbrain.errors import InvalidInputError
from ragbrain.store.keys import BATCH, DIMENSION_KEY
from ragbrain.store.reading import Reading
from ragbrain.store.repair import restore_missing_vectors, writer_lock


class Writing(Reading):
    """The part of ``Store`` that writes chunks (it reads them too, to repair a crash)."""

    @contextlib.contextmanager
    def writing(self, wait: float | None = None) -> Iterator[None]:
        """Hold the store's writer lock (embedded stores only; a server orders writes itself).

        Another writer is waited for, ``wait`` seconds at most (None: ``repair.lock_wait``;
        0 tries once); once the lock is held, what
        other processes wrote is followed (``follow``) before anything is written, so this
        process never writes over a newer store with an older view of it. Re-entrant: every
        write method of the store takes it, inside a caller's ``writing`` too.

        Finding that the last writer was killed while writing makes this store's next
        ``restore_missing_vectors`` calls thorough, until one finds the index whole.

        Raises:
            StoreLockedError: Another process held the lock for the whole wait.
            StoreNotFoundError: The store's folder is gone.
            StoreMismatchError: Another process re-embedded the store with a model this
                store cannot switch to.
        """
        with self._writers:
            if self._write_depth:
                self._write_depth += 1
                try:
                    yield
                finally:
                    self._write_depth -= 1
                return
            with writer_lock(self.folder, wait) as interrupted:
                if interrupted:
                    self._writer_interrupted = True
                self._refuse_a_stale_model()
                self._write_depth = 1
                try:
                    yield
                finally:
                    self._write_depth = 0
                    if self._follower is not None:
                        self._follower.settle()  # this process's own writes: nothing to follow

    def restore_missing_vectors(self, thorough: bool | None = None) -> list[str]:
        """Write back the chunks Chroma's vector index lost in a crash (``repair``): those it
        lacks, and with ``thorough`` those it holds but no search reaches.

        Args:
            thorough: Also search every chunk by its own vector (``repair.unreachable_vectors``);
                None: when ``writing`` found that the last writer was killed.

        Returns:
            The ids written back.
        """
        automatic = thorough is None and self._writer_interrupted
        restored = restore_missing_vectors(self, unreachable=bool(thorough) or automatic)
        if automatic and not restored:
            self._writer_interrupted = False
        return restored

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
        self._types_seen = None
        self._type_index.forget(ids)  # their type may change: look it up again when seen
        # Upserting by id is idempotent, so a retried batch never duplicates.
        self._in_batches(
            "Writing chunks",
            "upsert",
            ids,
            documents=texts,
            metadatas=[dict(m) for m in metadatas],
            embeddings=vectors,
        )

    def _check_vectors(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        metadatas: Sequence[dict[str, Any]],
        vectors: Sequence[Sequence[float]],
    ) -> None:
        self._refuse_a_stale_model()
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
        self._in_batches("Deleting chunks", "delete", ids)

    def update_metadata(self, ids: Sequence[str], metadatas: Sequence[dict[str, Any]]) -> None:
        """Update the metadata of existing chunks (Chroma merges it key by key; a None value
        removes a key), keeping their texts and vectors: ingest records a file's new time this
        way (the time is not part of a chunk's id)."""
        if len(ids) != len(metadatas):
            raise InvalidInputError(
                f"update_metadata needs as many ids as metadatas; got {len(ids)} and "
                f"{len(metadatas)}."
            )
        self._types_seen = None
        self._type_index.forget(ids)
        self._in_batches(
            "Writing chunk metadata", "update", ids, metadatas=[dict(m) for m in metadatas]
        )

    def _in_batches(
        self,
        what: str,
        method: Literal["upsert", "update", "delete"],
        ids: Sequence[str],
        **columns: Sequence[Any],
    ) -> None:
        """Call the collection's ``method`` on each batch of ``ids`` with the same slice of
        every column, under the writer lock, then record the change so that every reader
        learns of it."""
        with self.writing(), self._lock:
            for start in range(0, len(ids), BATCH):
                end = start + BATCH
                batch = {name: list(values[start:end]) for name, values in columns.items()}
                write = getattr(self.collection, method)
                self.call(what, partial(write, ids=list(ids[start:end]), **batch))
            if ids:
                self.record()
