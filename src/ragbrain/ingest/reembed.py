"""re_embed(): rebuild a store folder with another embedding model, never losing the old one.

The new store is built in a folder beside the old one (``.<name>.re-embed``) by a full
``ingest`` of the store's notes folder; only when it is complete are the two folders swapped,
in one atomic ``renameat2(RENAME_EXCHANGE)`` where the system has it. The old store's writer
lock is held throughout, so no other ``ragbrain ingest`` writes into it meanwhile (its writes
would be lost in the swap). Anything that fails before the swap (the model, a file, a full
disk, Ctrl-C) removes the half-built folder and leaves the old store as it was.

A calibrated gate threshold is not carried over: it was measured on the old model's
distances (run ``ragbrain calibrate`` again).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.errors import InvalidInputError
from ragbrain.ingest.files import MAX_BYTES
from ragbrain.ingest.run import IngestReport, Progress, ingest

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain.store.connect import StorePolicy

log = logging.getLogger(__name__)

STAGING_SUFFIX = ".re-embed"
_RENAME_EXCHANGE = 2  # linux/fs.h


def staging_folder(store: Path) -> Path:
    """Where the new store is built before it replaces ``store``."""
    return store.parent / f".{store.name}{STAGING_SUFFIX}"


def re_embed(
    path: str | Path,
    store: str | Path | None,
    embeddings: Embeddings,
    *,
    type_: str | None = None,
    max_bytes: int = MAX_BYTES,
    progress: Progress | None = None,
    exclude: Sequence[str] = (),
    include: Sequence[str] = (),
    policy: StorePolicy | None = None,
) -> IngestReport:
    """Re-embed the store folder ``store`` with ``embeddings``, from its notes folder ``path``.

    Args:
        path: The folder the store was ingested from (every chunk's ``root``).
        store: The store folder; None means ``default_store_path()``.
        embeddings: The model of the new store (``embeddings_for`` of an ``--embedding`` choice).
        type_: As for ``ingest``.
        max_bytes: As for ``ingest``.
        progress: Called with (chunks embedded so far, chunks to embed).
        exclude: As for ``ingest``.
        include: As for ``ingest``.
        policy: Deadline and retries of every store call.

    Returns:
        The report of the ingest that built the new store.

    Raises:
        StoreNotFoundError: There is no store at ``store``.
        InvalidInputError: ``path`` is not a folder, or the store holds notes of another
            folder (they would be lost).
        StoreLockedError: Another process is writing to the store.
    """
    from ragbrain.store import Store
    from ragbrain.store.connect import StorePolicy, check_location
    from ragbrain.store.processes import writer_lock

    policy = policy or StorePolicy()
    folder = check_location(store, None, create=False)
    assert folder is not None
    folder = folder.absolute()
    notes = Path(path).expanduser().absolute()
    if not notes.is_dir():
        raise InvalidInputError(
            f"--re-embed rebuilds a store from the folder it was ingested from; {notes} is "
            "not a folder."
        )
    staging = staging_folder(folder)
    with writer_lock(folder):
        roots = stored_roots(folder, policy)
        others = sorted(roots - {str(notes)})
        if others:
            shown = ", ".join(others[:3]) + (
                f" and {len(others) - 3} more" if len(others) > 3 else ""
            )
            raise InvalidInputError(
                f"The store {folder} holds notes ingested from {shown}, not only from {notes}; "
                "re-embedding it from this folder would lose them. Pass the folder the store "
                "was built from, or ingest into a new store with --store NEW_STORE."
            )
        if staging.exists():  # left by a run that was killed
            shutil.rmtree(staging)
        try:
            built = Store.open(staging, embeddings, create=True, policy=policy)
            report = ingest(
                notes,
                built,
                type_=type_,
                max_bytes=max_bytes,
                progress=progress,
                exclude=exclude,
                include=include,
            )
            del built
            release_clients(staging)
            swap(staging, folder)
        except BaseException:
            release_clients(staging)
            shutil.rmtree(staging, ignore_errors=True)
            raise
        release_clients(folder)
    shutil.rmtree(staging, ignore_errors=True)  # the old store, after the swap
    return report


def stored_roots(folder: Path, policy: StorePolicy) -> set[str]:
    """The notes folders (chunk ``root``) a store folder holds, read without loading a model."""
    from ragbrain.store.reader import stored_metadata

    missing = "Drop --re-embed to create one."
    metadatas = stored_metadata(folder, None, policy, missing=missing)
    return {str(m.get("root", "")) for m in metadatas}


def swap(new: Path, old: Path) -> None:
    """Put the folder ``new`` in the place of ``old``, and ``old`` in the place of ``new``:
    atomically where the system can exchange two names (Linux 3.15+), else by two renames
    (a crash between them leaves ``old`` missing and both stores under ``new``'s name and
    ``old``'s name + ``.old``; the log says so)."""
    if _exchange(new, old):
        return
    aside = old.parent / f".{old.name}.old"
    shutil.rmtree(aside, ignore_errors=True)
    log.warning("This system cannot exchange two folders atomically; renaming %s twice.", old)
    os.rename(old, aside)
    os.rename(new, old)
    os.rename(aside, new)


def _exchange(a: Path, b: Path) -> bool:
    """``renameat2(a, b, RENAME_EXCHANGE)``; False where the system does not offer it."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd = -100
    result = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    if result == 0:
        return True
    errno = ctypes.get_errno()
    if errno in (38, 22, 95):  # ENOSYS, EINVAL (file system without exchange), EOPNOTSUPP
        return False
    raise OSError(errno, os.strerror(errno), str(a), None, str(b))


def release_clients(folder: Path) -> None:
    """Stop the process's cached Chroma client of ``folder``, so a later open reads the folder
    now at that path (chromadb keeps one client per path for the life of the process)."""
    from chromadb.api.shared_system_client import SharedSystemClient

    systems = SharedSystemClient._identifier_to_system
    for identifier in [i for i in systems if Path(i).absolute() == folder.absolute()]:
        system = systems.pop(identifier)
        SharedSystemClient._identifier_to_refcount.pop(identifier, None)
        system.stop()
