"""Reading a store's chunks as Chroma holds them: listings page by page, chunks by id or by
source, counts per type (no model: nothing here embeds)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from ragbrain.store.base import StoreBase
from ragbrain.store.keys import BATCH, PAGE

if TYPE_CHECKING:
    from chromadb.api.types import GetResult, Include


class Reading(StoreBase):
    """The part of ``Store`` that reads chunks back (every read under the store's deadline)."""

    def count(self) -> int:
        """Number of chunks in the store."""
        return int(self.call("Counting chunks", self.collection.count))

    def pages(self, include: Include, where: dict[str, Any] | None = None) -> Iterator[GetResult]:
        """Every record (or those matching ``where``), ``PAGE`` at a time, as Chroma's
        ``get`` returns them; a store of any size, in the collection's own order."""
        offset = 0
        while True:
            page = self.call(
                "Listing chunks",
                partial(
                    self.collection.get, where=where, include=include, limit=PAGE, offset=offset
                ),
            )
            if not page["ids"]:
                return
            yield page
            offset += len(page["ids"])

    def ids_by_source(self, root: str, sources: Sequence[str] | None = None) -> dict[str, set[str]]:
        """Chunk ids of every file ingested from ``root`` (or only of ``sources``), by source
        path."""
        return {
            source: set(chunks) for source, chunks in self.metadata_by_source(root, sources).items()
        }

    def metadata_by_source(
        self, root: str, sources: Sequence[str] | None = None
    ) -> dict[str, dict[str, dict[str, Any]]]:
        """The metadata of every chunk ingested from ``root`` (or only of ``sources``), by
        source path, then by chunk id."""
        by_source: dict[str, dict[str, dict[str, Any]]] = {}
        where: dict[str, Any] = {"root": root}
        if sources is not None:
            where = {"$and": [where, {"source": {"$in": list(sources) or [""]}}]}
        for page in self.pages(["metadatas"], where=where):
            for id_, meta in zip(page["ids"], page["metadatas"] or [], strict=True):
                source = str((meta or {}).get("source", ""))
                by_source.setdefault(source, {})[id_] = dict(meta or {})
        return by_source

    def all_ids(self) -> list[str]:
        """Every chunk id in the store (what the lexical index's fingerprint is checked against)."""
        found = self.call("Listing chunk ids", lambda: self.collection.get(include=[]))
        return list(found["ids"])

    def texts_and_types(self, ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """``(id, text, type)`` of the given chunks (missing ids are left out)."""
        return [(id_, text, str(meta.get("type", ""))) for id_, text, meta in self.rows(ids)]

    def rows(self, ids: Sequence[str]) -> list[tuple[str, str, dict[str, Any]]]:
        """``(id, text, metadata)`` of the given chunks (missing ids are left out)."""
        rows: list[tuple[str, str, dict[str, Any]]] = []
        for start in range(0, len(ids), BATCH):
            batch = list(ids[start : start + BATCH])
            found = self.call(
                "Reading chunks",
                lambda batch=batch: self.collection.get(  # type: ignore[misc]
                    ids=batch, include=["documents", "metadatas"]
                ),
            )
            texts = found["documents"] or [""] * len(found["ids"])
            metas = found["metadatas"] or [{}] * len(found["ids"])
            rows += [
                (id_, text or "", dict(meta or {}))
                for id_, text, meta in zip(found["ids"], texts, metas, strict=True)
            ]
        return rows

    def chunks_of(self, source: str) -> list[tuple[str, dict[str, Any]]]:
        """``(text, metadata)`` of every chunk whose ``source`` is exactly ``source``."""
        found: list[tuple[str, dict[str, Any]]] = []
        for page in self.pages(["documents", "metadatas"], where={"source": source}):
            texts = page["documents"] or [""] * len(page["ids"])
            metas = page["metadatas"] or [{}] * len(page["ids"])
            found += [(t or "", dict(m or {})) for t, m in zip(texts, metas, strict=True)]
        return found

    def types(self) -> dict[str, int]:
        """Chunk counts per note type."""
        counts: dict[str, int] = {}
        for page in self.pages(["metadatas"]):
            for meta in page["metadatas"] or []:
                type_ = str((meta or {}).get("type", ""))
                counts[type_] = counts.get(type_, 0) + 1
        return counts
