"""ingest(): bring the store in step with a folder of notes, writing new chunks before deleting."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.ingest.chunks import Chunk, chunk_note, splitter_for
from ragbrain.ingest.files import MAX_BYTES, Skipped, scan_notes
from ragbrain.ingest.ignore import IgnoreRules
from ragbrain.query.filters import MODIFIED_KEY

if TYPE_CHECKING:
    from ragbrain.store import Store

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
EMBED_BATCH = 64


@dataclass
class IngestReport:
    """What one ingestion did."""

    root: Path
    files: int = 0
    added: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    restored: int = 0  # chunks written back into the vector index (after a killed writer)
    #: Note files and folders left out by ignore files, --exclude or --include.
    excluded: list[Path] = field(default_factory=list)
    #: Of ``deleted``, the chunks of files that are still there but now left out.
    pruned_excluded: int = 0
    #: Of ``unchanged``, the chunks whose time was rewritten in place (not embedded again):
    #: their file was touched or edited elsewhere, or they were ingested before times were.
    retimed: int = 0

    def summary(self) -> str:
        """One line for people."""
        line = (
            f"{self.files} files: {self.added} chunks added, {self.unchanged} unchanged, "
            f"{self.deleted} deleted, {len(self.skipped)} files skipped"
        )
        if self.excluded or self.pruned_excluded:
            folders = sum(p.is_dir() for p in self.excluded)
            line += f", {len(self.excluded)} excluded"
            line += f" ({folders} of them folders)" if folders else ""
            if self.pruned_excluded:
                line += f", {self.pruned_excluded} chunks of excluded files pruned"
        line += f", {self.retimed} chunks' times rewritten in place" if self.retimed else ""
        return line + (f", {self.restored} restored to the vector index" if self.restored else "")


def ingest(
    path: str | Path,
    store: Store,
    *,
    type_: str | None = None,
    prune: bool = True,
    max_bytes: int = MAX_BYTES,
    progress: Progress | None = None,
    root: str | Path | None = None,
    exclude: Sequence[str] = (),
    include: Sequence[str] = (),
    check_index: bool = False,
) -> IngestReport:
    """Ingest a file or a folder (recursively) into ``store``.

    Unchanged chunks are not embedded again; a changed file's new chunks are written first
    and its old ones deleted after, so an interrupted run leaves a superset, never a subset.

    Args:
        path: A Markdown, text, PDF, HTML or Word file, or a folder of them (PDF, HTML and
            Word need ``ragbrain[formats]``; without it such files are skipped, saying so).
        store: The opened store.
        type_: The note type for every file; else front matter ``type``, else folder name.
        prune: When ``path`` is a folder, delete chunks of files that are no longer there.
        max_bytes: Larger files are skipped.
        progress: Called with (chunks embedded so far, chunks to embed).
        root: The folder sources are relative to (it must hold ``path``); default ``path``
            itself, or a file's folder. Only a folder ``path`` equal to it is pruned.
        exclude: Gitignore patterns of files and folders to leave out, on top of the
            ``.gitignore`` and ``.ragbrainignore`` files (see ``ragbrain.ingest.ignore``).
        include: Gitignore patterns; when given, only matching files are ingested.
            Chunks of files left out are pruned like those of deleted files.
        check_index: First search every chunk by its own vector and write back those no
            search reaches (``Store.restore_missing_vectors``); done anyway after a killed
            writer.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        InvalidInputError: A pattern (option or ignore file) is not valid gitignore syntax.
        StoreLockedError: Another process is ingesting into the same store folder.
        StoreUnavailableError: The store's server stayed unreachable past the deadline.
    """
    given = None if root is None else Path(root)
    scan = scan_notes(Path(path), type_, max_bytes, root=given, exclude=exclude, include=include)
    root, notes, skipped = scan.root, scan.notes, scan.skipped
    for item in skipped:
        log.warning("Skipped %s: %s", item.path, item.reason)
    report = IngestReport(root=root, files=len(notes), skipped=skipped, excluded=scan.excluded)
    rules = IgnoreRules(root, exclude=exclude, include=include)
    # One writer at a time: a second `ragbrain ingest` on the same folder fails at once
    # with StoreLockedError instead of interleaving its writes and deletes with ours.
    with store.writing():
        # A process killed after writing can leave chunks out of Chroma's vector index, or
        # in it but out of every search's reach.
        report.restored = len(store.restore_missing_vectors(thorough=check_index or None))
        if report.restored:
            log.warning(
                "%d chunks of %s were missing from its vector index or out of every search's "
                "reach (a writer was killed?) and are written again from their stored vectors.",
                report.restored,
                store.location,
            )
        # A folder is compared with everything ingested from its root; a file only with its
        # own chunks (reading every chunk of a 10k-chunk root costs ~2 s).
        whole = Path(path).expanduser().absolute().is_dir()
        stored = store.metadata_by_source(str(root), None if whole else [n.source for n in notes])
        existing = {source: set(chunks) for source, chunks in stored.items()}

        wanted: dict[str, set[str]] = {}
        to_write: list[Chunk] = []
        to_retime: list[Chunk] = []
        text_splitter = splitter_for(store.embeddings)  # the budget in the model's own tokens
        for note in notes:
            chunks = chunk_note(note, text_splitter)
            ids = {c.id for c in chunks}
            wanted[note.source] = ids
            have = existing.get(note.source, set())
            to_write += [c for c in chunks if c.id not in have]
            to_retime += stale_times(chunks, stored.get(note.source, {}))
            report.unchanged += len(ids & have)

        write_chunks(store, to_write, progress)
        report.added = len(to_write)
        retime(store, to_retime)
        report.retimed = len(to_retime)

        stale: list[str] = []
        for source, ids in existing.items():
            if source in wanted:
                stale += sorted(ids - wanted[source])
            elif prune and Path(path).expanduser().absolute() == root:
                stale += sorted(ids)
                if _left_out(rules, root, source):
                    report.pruned_excluded += len(ids)
        store.delete(stale)
        report.deleted = len(stale)
        # The lexical index (hybrid search) follows: new chunks tokenized, stale ones dropped.
        from ragbrain.lexical.sync import sync_lexical

        index = sync_lexical(store, changed={c.id: c.metadata for c in to_retime})
        # Rare types' vectors are kept beside the store for fast type-filtered search.
        store.keep_small_types(index)
    return report


def stale_times(chunks: list[Chunk], stored: dict[str, dict[str, object]]) -> list[Chunk]:
    """The chunks already stored (same id) whose stored time differs from the note's now."""
    return [
        c
        for c in chunks
        if c.id in stored and stored[c.id].get(MODIFIED_KEY) != c.metadata.get(MODIFIED_KEY)
    ]


def retime(store: Store, chunks: list[Chunk]) -> None:
    """Rewrite the metadata (the time) of stored chunks in place, without embedding them."""
    if chunks:
        store.update_metadata([c.id for c in chunks], [c.metadata for c in chunks])


def _left_out(rules: IgnoreRules, root: Path, source: str) -> bool:
    """Whether a stored source is gone because the rules leave it out (it is still there)."""
    path = root / source
    return path.is_file() and rules.skips(path)


def write_chunks(store: Store, chunks: list[Chunk], progress: Progress | None = None) -> None:
    """Embed and upsert ``chunks``, ``EMBED_BATCH`` at a time, reporting progress."""
    total = len(chunks)
    if progress:
        progress(0, total)
    for start in range(0, total, EMBED_BATCH):
        batch = chunks[start : start + EMBED_BATCH]
        vectors = store.embeddings.embed_documents([c.text for c in batch])
        store.upsert(
            [c.id for c in batch], [c.text for c in batch], [c.metadata for c in batch], vectors
        )
        if progress:
            progress(min(start + EMBED_BATCH, total), total)
    if total:
        from ragbrain._util import give_back_freed_memory

        give_back_freed_memory()  # the batches' activations, kept by the C heap
