"""ingest(): bring the store in step with a folder of notes, writing new chunks before deleting."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.errors import RagbrainError
from ragbrain.ingest.chunks import Chunk, chunk_note, splitter_for
from ragbrain.ingest.files import MAX_BYTES, NoteFile, Skipped, scan_notes
from ragbrain.ingest.ignore import IgnoreRules, ignore_line
from ragbrain.ingest.linklists import link_stats
from ragbrain.ingest.roots import Merge, known_roots, only_under, place, real, settle
from ragbrain.lexical.tokens import check_tokenizers
from ragbrain.query.filters import MODIFIED_KEY
from ragbrain.store.ledger import UNFINISHED_KEY, Unfinished, unfinished_json

if TYPE_CHECKING:
    from ragbrain.lexical.index import LexicalIndex
    from ragbrain.store import Store

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
EMBED_BATCH = 64


@dataclass
class IngestReport:
    """What one ingestion did."""

    #: The root the notes are stored under (their sources are relative to it): the folder
    #: ingested, or the store's root that holds it (``ragbrain.ingest.roots``).
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
    #: Roots of the store merged into this one (overlapping, or held by a new root).
    merges: list[Merge] = field(default_factory=list)
    #: Sources of the files written this run that are mostly links (an index of the notes).
    link_lists: list[str] = field(default_factory=list)
    #: Stopped by Ctrl-C: ``added`` chunks were written, nothing was deleted.
    interrupted: bool = False

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
        line += f", {self.restored} restored to the vector index" if self.restored else ""
        return line + "".join(f"; {merge.line()}" for merge in self.merges)

    def link_list_warning(self) -> str | None:
        """One warning naming the link-list files written this run, with the ignore line that
        leaves each out; None when there are none."""
        if not self.link_lists:
            return None
        names = ", ".join(self.link_lists)
        lines = " and ".join(f"`{ignore_line(source)}`" for source in self.link_lists)
        return (
            f"{names}: mostly links to other notes, with little prose of their own; such an "
            "index matches almost any question a little and crowds the notes it links to out "
            f"of the results. To leave it out, add {lines} to "
            f"{self.root / '.ragbrainignore'} and ingest again (its chunks are pruned)."
        )


class IngestInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped an ingest; ``report`` says what was written (nothing was deleted)."""

    def __init__(self, report: IngestReport) -> None:
        super().__init__(f"ingest of {report.root} interrupted after {report.added} chunks")
        self.report = report


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

    A note's source is its path relative to the store's root that holds it, whichever path
    is given (``ragbrain.ingest.roots``): a folder or file inside a root is stored under
    that root, so ingesting it again never makes a second copy; a path outside every root
    makes a new root, which takes in (merges) the roots inside it. Overlapping roots an
    older version left are merged too, and their duplicate chunks dropped.

    Unchanged chunks are not embedded again; a changed file's new chunks are written first
    and its old ones deleted after, so an interrupted run leaves a superset, never a subset.
    Ctrl-C while writing raises ``IngestInterrupted`` (a ``KeyboardInterrupt``) carrying the
    report, once the lexical index is in step with what was written; the store records
    the unfinished ingest (queries say so) until an ingest of the path completes.

    Args:
        path: A Markdown, text, PDF, HTML or Word file, or a folder of them (PDF, HTML and
            Word need ``ragbrain[formats]``; without it such files are skipped, saying so).
        store: The opened store.
        type_: The note type for every file; else front matter ``type``, else folder name
            (``note`` for a file directly in the root).
        prune: When ``path`` is a folder, delete chunks of files under it that are no
            longer there.
        max_bytes: Larger files are skipped.
        progress: Called with (chunks embedded so far, chunks to embed).
        root: The folder to make the root (it must hold ``path``) when no root of the
            store holds ``path``; default ``path`` itself, or a file's folder.
        exclude: Gitignore patterns of files and folders to leave out, on top of the
            ``.gitignore`` and ``.ragbrainignore`` files (see ``ragbrain.ingest.ignore``),
            relative to ``path`` (a file's folder).
        include: Gitignore patterns; when given, only matching files are ingested.
            Chunks of files left out are pruned like those of deleted files.
        check_index: First search every chunk by its own vector and write back those no
            search reaches (``Store.restore_missing_vectors``); done anyway after a killed
            writer.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        InvalidInputError: A pattern (option or ignore file) is not valid gitignore syntax.
        IngestInterrupted: Ctrl-C stopped it.
        StoreLockedError: Another process is ingesting into the same store folder.
        StoreUnavailableError: The store's server stayed unreachable past the deadline.
    """
    given = Path(os.path.abspath(Path(path).expanduser()))
    if not given.exists():
        raise FileNotFoundError(f"{given}: no such file or folder")
    # One writer at a time: a second `ragbrain ingest` on the same folder fails at once
    # with StoreLockedError instead of interleaving its writes and deletes with ours.
    with store.writing():
        roots = known_roots(store)
        placement = place(given, roots, None if root is None else Path(root).expanduser())
        scan = scan_notes(
            placement.path,
            type_,
            max_bytes,
            root=placement.root.absolute(),
            exclude=exclude,
            include=include,
        )
        root, notes, skipped = scan.root, scan.notes, scan.skipped
        for item in skipped:  # the report lists them; said once, by whoever shows it
            log.info("Skipped %s: %s", item.path, item.reason)
        report = IngestReport(root=root, files=len(notes), skipped=skipped, excluded=scan.excluded)
        # A process killed after writing can leave chunks out of Chroma's vector index, or
        # in it but out of every search's reach.
        report.restored = len(store.restore_missing_vectors(thorough=check_index or None))
        if report.restored:  # the summary says so: logged, not warned, to say it once
            log.info(
                "%d chunks of %s were missing from its vector index or out of every search's "
                "reach (a writer was killed?) and are written again from their stored vectors.",
                report.restored,
                store.location,
            )
        report.merges = settle(store, roots, placement).merges
        # A folder is compared with everything ingested from under it; a file only with its
        # own chunks (reading every chunk of a 10k-chunk root costs ~2 s).
        folder = placement.path if placement.path.is_dir() else None
        anchor = folder or placement.path.parent
        rules = IgnoreRules(root, exclude=exclude, include=include, anchor=anchor)
        sources = None if folder else [n.source for n in notes]
        stored = only_under(store.metadata_by_source(str(root), sources), root, folder)
        plan = _plan(store, notes, stored, report)
        check_tokenizers(c.text for c in plan.to_write)  # a missing extra stops it here
        if prune and folder is not None:
            plan.stale += _gone(stored, plan.wanted, rules, report)
        index = _write(store, given, plan, report, progress)
        # Rare types' vectors are kept beside the store for fast type-filtered search.
        store.keep_small_types(index)
        if report.added or report.deleted or store.offtopic_record() is None:
            from ragbrain.refusal.offtopic import refresh_cut

            try:  # off-topic refusal's cut follows the notes
                refresh_cut(store)
            except RagbrainError as exc:  # the next graph over the store learns it instead
                log.warning("The off-topic cut was not learnt again: %s", exc)
    return report


@dataclass
class _Plan:
    """What an ingest writes: new chunks, chunks to retime, stale ids to delete; and the ids
    each read note has now."""

    wanted: dict[str, set[str]] = field(default_factory=dict)
    to_write: list[Chunk] = field(default_factory=list)
    to_retime: list[Chunk] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)


def _plan(
    store: Store,
    notes: Sequence[NoteFile],
    stored: dict[str, dict[str, dict[str, Any]]],
    report: IngestReport,
) -> _Plan:
    """Chunk each note and compare with its stored chunks (noting link lists written)."""
    plan = _Plan()
    text_splitter = splitter_for(store.embeddings)  # the budget in the model's own tokens
    for note in notes:
        chunks = chunk_note(note, text_splitter)
        ids = {c.id for c in chunks}
        plan.wanted[note.source] = ids
        have = set(stored.get(note.source, {}))
        new = [c for c in chunks if c.id not in have]
        if new and link_stats(note.body).is_link_list:
            report.link_lists.append(note.source)
        plan.to_write += new
        plan.stale += sorted(have - ids)
        plan.to_retime += stale_times(chunks, stored.get(note.source, {}))
        report.unchanged += len(ids & have)
    return plan


def _gone(
    stored: dict[str, dict[str, dict[str, Any]]],
    wanted: dict[str, set[str]],
    rules: IgnoreRules,
    report: IngestReport,
) -> list[str]:
    """The chunks of stored files that were not read (deleted, or now left out)."""
    gone: list[str] = []
    for source, chunks in stored.items():
        if source not in wanted:
            gone += sorted(chunks)
            if _left_out(rules, report.root, source):
                report.pruned_excluded += len(chunks)
    return gone


def _write(
    store: Store, given: Path, plan: _Plan, report: IngestReport, progress: Progress | None
) -> LexicalIndex:
    """Write the plan (new chunks first, deletes last) and bring the lexical index in step;
    while it writes, the store records the ingest as unfinished.

    Raises:
        IngestInterrupted: Ctrl-C; the lexical index follows what was written first.
    """
    from ragbrain.store.lexical import sync_lexical

    finished = _unfinished_after(store, given, None)
    entry = Unfinished(path=str(given), total=len(plan.to_write), started=time.time())
    writes = bool(plan.to_write or plan.stale or plan.to_retime)
    if writes:
        store.record({UNFINISHED_KEY: _unfinished_after(store, given, entry)})
    written = [0]

    def counted(done: int, total: int) -> None:
        written[0] = done
        if progress:
            progress(done, total)

    try:
        write_chunks(store, plan.to_write, counted)
        report.added = len(plan.to_write)
        retime(store, plan.to_retime)
        report.retimed = len(plan.to_retime)
        store.delete(plan.stale)
        report.deleted = len(plan.stale)
    except KeyboardInterrupt as exc:
        # What was written stays (new chunks come before deletes): the lexical index follows
        # it, and the store records the ingest as interrupted.
        report.added, report.interrupted = written[0], True
        stopped = replace(entry, written=written[0], interrupted=True)
        sync_lexical(store, record={UNFINISHED_KEY: _unfinished_after(store, given, stopped)})
        raise IngestInterrupted(report) from exc
    # The lexical index (hybrid search) follows: new chunks tokenized, stale ones dropped.
    wrote = writes or bool(report.merges)
    record = {UNFINISHED_KEY: finished} if wrote or finished != _unfinished_now(store) else None
    changed = {c.id: c.metadata for c in plan.to_retime}
    return sync_lexical(store, changed=changed, record=record)


def _unfinished_now(store: Store) -> str | None:
    """The store's unfinished ingests as recorded now."""
    return unfinished_json(store.ledger().unfinished)


def _unfinished_after(store: Store, given: Path, entry: Unfinished | None) -> str | None:
    """The store's unfinished ingests once this ingest of ``given`` is recorded (``entry``)
    or done (None): those ``given`` covers are dropped (the same path, or one under it)."""
    covered = real(given)
    kept = [
        e
        for e in store.ledger().unfinished
        if not (real(Path(e.path)) == covered or real(Path(e.path)).is_relative_to(covered))
    ]
    return unfinished_json([*kept, *([entry] if entry else [])])


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
