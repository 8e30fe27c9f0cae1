"""Listing a store's note types with their chunk and file counts, without loading a model."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragbrain.query.typematch import fold
from ragbrain.store.listing import stored_metadata
from ragbrain.store.resilience import StorePolicy


@dataclass(frozen=True)
class TypeRow:
    """One note type: its name as stored, its chunks and the files they come from."""

    type: str
    chunks: int
    files: int


def count_types(metadatas: Iterable[Mapping[str, Any]]) -> list[TypeRow]:
    """Chunks and files per type, most chunks first (then by name).

    Args:
        metadatas: The chunks' metadata (``type``, ``root`` and ``source`` keys).
    """
    chunks: Counter[str] = Counter()
    files: dict[str, set[tuple[str, str]]] = {}
    for meta in metadatas:
        type_ = str(meta.get("type", ""))
        chunks[type_] += 1
        files.setdefault(type_, set()).add((str(meta.get("root")), str(meta.get("source"))))
    order = sorted(chunks, key=lambda t: (-chunks[t], t))
    return [TypeRow(t, chunks[t], len(files[t])) for t in order]


def case_variants(rows: Iterable[TypeRow]) -> list[list[str]]:
    """Groups of stored types that differ only in case (a type filter matches them all)."""
    groups: dict[str, list[str]] = {}
    for row in rows:
        groups.setdefault(fold(row.type), []).append(row.type)
    return [sorted(group) for group in groups.values() if len(group) > 1]


def list_types(
    path: str | Path | None = None,
    *,
    server: str | None = None,
    policy: StorePolicy | None = None,
) -> list[TypeRow]:
    """Every note type of the store in ``path`` (or on ``server``) with its counts.

    Raises:
        StoreNotFoundError: No store there.
        StoreUnavailableError: The server could not be reached within the deadline.
    """
    metadatas = stored_metadata(
        path,
        server,
        policy or StorePolicy(),
        missing="Create one with `ragbrain ingest NOTES_DIR`.",
    )
    return count_types(metadatas)
