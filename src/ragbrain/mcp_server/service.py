"""The MCP server's state: the store, models and retriever, loaded once, and the tools' work.

(Longer than the package's modules: ``RagbrainService`` is the one object the tools share,
holding the loaded models, the write lock and the search semaphore, and each of its methods is
one tool's work, turning the library's answer into that tool's schema; the schemas are in
``schemas`` and ``results``, the wiring to MCP in ``server`` and ``http``.)
"""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.context import RetrievalContext
from ragbrain.critic.base import threshold_label
from ragbrain.errors import InvalidInputError, RagbrainError, UnknownTypeWarning
from ragbrain.factory import BuildOptions, CriticChoice, open_store
from ragbrain.gates import run_gate
from ragbrain.ingest.inbox import Inbox
from ragbrain.mcp_server.results import (
    MAX_LABEL_CHARS,
    MAX_LINE,
    Chunk,
    GetResult,
    IngestResult,
    LineRange,
    RememberResult,
    SearchResult,
    SkippedFile,
    StatsResult,
    UnknownType,
    clean_text,
    finite_or_none,
)
from ragbrain.paths import default_store_path, resolved
from ragbrain.query.filters import MODIFIED_KEY, time_label
from ragbrain.query.inputs import AbstainLevel
from ragbrain.render import cite
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.state import RETRIEVAL_KEY
from ragbrain.store import Store

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain.ingest.watch import Watcher
    from ragbrain.query.filters import Filters
    from ragbrain.settings import Resolution, StoreSettings
    from ragbrain.store.lexical import LexicalSearcher

log = logging.getLogger(__name__)

MAX_PARALLEL = 8  # searches run at once, at most (and at most one per core)
_QUEUE_POLL_S = 0.05  # how often queued notes try the store's lock again
_RETRY_S = 2.0  # after a queued note failed for another reason than the lock


@dataclass(frozen=True)
class Loaded:
    """What the server loads once and keeps for its whole life."""

    store: Store
    retriever: CorrectiveRetriever
    settings: Resolution
    lexical: LexicalSearcher

    @property
    def critic(self) -> str:
        """The critic the graph judges with now (it follows the store's model)."""
        return critic_status(self.settings.current())


def critic_status(settings: StoreSettings) -> str:
    """What ``stats`` says of the store's critic: its class, where it loaded from, its cut."""
    critic = settings.critic
    if critic is None:
        return f"off: {settings.critic_off_reason}"
    where = getattr(critic, "folder", None) or getattr(critic, "path", None)
    status = f"{type(critic).__name__}{f' from {where}' if where else ''}, "
    return status + threshold_label(critic, critic.threshold)


def _label(value: object) -> str:
    return clean_text(str(value or ""), MAX_LABEL_CHARS)[0]


def _line(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_roots(roots: Sequence[str | Path]) -> tuple[Path, ...]:
    """The real paths of the folders ``ingest`` may read.

    Raises:
        InvalidInputError: One of them is not an existing folder.
    """
    checked = []
    for root in roots:
        real = Path(root).expanduser().resolve()
        if not real.is_dir():
            raise InvalidInputError(f"--allow {root}: not an existing folder.")
        checked.append(real)
    return tuple(dict.fromkeys(checked))


class RagbrainService:
    """The store, the embedding model, the critic and the retriever, loaded once per process.

    ``start_loading`` begins loading in a background thread so the MCP handshake answers at
    once; a tool call that arrives earlier waits for it. A failed load (no store yet) is
    retried by the next call.
    """

    def __init__(
        self,
        store_path: str | Path | None = None,
        *,
        allowed: Sequence[str | Path] = (),
        critic: CriticChoice = "default",
        embeddings: Embeddings | None = None,
        watch: bool = False,
        debounce: float = 1.0,
        inbox: str | Path | None = None,
        abstain: AbstainLevel = "on",
        server: str | None = None,
    ) -> None:
        """Check the settings; nothing is loaded yet.

        Args:
            store_path: The store folder; None is ``$RAGBRAIN_STORE`` or the default location.
            allowed: Folders ``ingest`` may read; none turns ``ingest`` off. With any, a
                missing store is created on first use.
            critic: As for ``CorrectiveRetriever.from_store``; a critic that fails to load is
                turned off (and the trace says why) rather than stopping the server.
            embeddings: Any LangChain ``Embeddings``; None is the model the store records
                (``ragbrain.models.embeddings.embeddings_for``; the default model for a new store).
            watch: Keep the allowed folders in step with the store from a background
                thread (``start_watching``), as ``ragbrain watch`` does.
            debounce: Seconds of quiet that end a burst of saves (with ``watch``).
            inbox: The folder ``remember`` writes notes to; it must lie inside an allowed
                folder (links followed). None turns ``remember`` off.
            abstain: ``RetrievalContext.abstain`` for every search: "on" answers nothing
                (``answerable`` false, with the reason) to an off-topic question, "strict"
                also when the answer seems missing, "off" never refuses.
            server: ``http://HOST:PORT`` of a Chroma server (a team's) instead of a store
                folder; its token, tenant and database come from the environment
                (``ServerAccess.from_env``), as for every command.

        Raises:
            InvalidInputError: An allowed folder does not exist, ``watch`` without any, or
                the inbox is not a folder inside one.
        """
        if watch and not allowed:
            raise InvalidInputError("--watch needs at least one --allow DIR to follow.")
        if server is not None and store_path is not None:
            raise InvalidInputError(
                f"Only one of a store folder or a server is allowed, but got both: path "
                f"{store_path!s} and server {server!r} (check --store, --server and "
                "$RAGBRAIN_SERVER)."
            )
        self.server = server
        self.store_path = (
            None if server else resolved(store_path) if store_path else default_store_path()
        )
        self.allowed = check_roots(allowed)
        self.inbox = None if inbox is None else Inbox.inside(inbox, self.allowed)
        self._critic_choice = critic
        self._context = RetrievalContext(abstain=abstain)
        self._embeddings = embeddings
        self._loaded: Loaded | None = None
        self._load_lock = threading.Lock()
        self._loading_started = False
        self._write_lock = threading.Lock()
        # remember's queue: inbox notes written while a writer held the store.
        self._queued: list[Path] = []
        self._queue_lock = threading.Lock()
        self._drainer: threading.Thread | None = None
        self._holder = "another process"
        self._watch, self._debounce = watch, debounce
        self._watcher: Watcher | None = None
        # Searches are CPU-bound: with many clients (HTTP), running more at once than there
        # are cores only adds threads that hold memory (and their malloc arenas) while they
        # wait for a core; the queue in front of the semaphore costs nothing.
        self._searching = threading.BoundedSemaphore(max(1, min(MAX_PARALLEL, os.cpu_count() or 1)))

    def start_loading(self) -> None:
        """Load in a background thread (once: later calls do nothing); errors are logged here
        and raised again on use."""
        if self._loading_started:
            return
        self._loading_started = True

        def load() -> None:
            try:
                self.load()
            except Exception as exc:  # the first tool call reports it to the client
                log.error("Could not load the store: %s", exc)
                return
            if self._watch:
                self.start_watching()

        threading.Thread(target=load, name="ragbrain-load", daemon=True).start()

    def load(self) -> Loaded:
        """The loaded store and retriever (loading them on the first call only).

        Raises:
            StoreNotFoundError, StoreMismatchError: The store cannot be opened.
        """
        with self._load_lock:
            if self._loaded is not None:
                return self._loaded
            started = time.perf_counter()
            # One store for the tools and the retriever's graph, built as open_graph builds
            # it (critic, lexical index): a note that remember or ingest writes is seen by the
            # next search (a second client on the same folder would not see it). A critic
            # that fails to load is turned off; the store's model is not checked again.
            options = BuildOptions(
                embeddings=self._embeddings,
                critic=self._critic_choice,
                on_critic_error="disable",
                check_model=False,
            )
            built = open_store(
                self.store_path, options, server=self.server, create=bool(self.allowed)
            )
            store, lexical = built.store, built.lexical
            assert lexical is not None  # a store folder always has its lexical index
            retriever = CorrectiveRetriever(
                graph=built.graph, known_types=store.known_types, context=self._context
            )
            self._loaded = Loaded(
                store=store, retriever=retriever, settings=built.settings, lexical=lexical
            )
            log.info(
                "Loaded the store %s and the models in %.1f s (critic: %s).",
                store.location,
                time.perf_counter() - started,
                self._loaded.critic,
            )
            return self._loaded

    def search(
        self,
        query: str,
        types: list[str] | None,
        k: int | None,
        filters: Filters | None = None,
    ) -> SearchResult:
        """Run the retrieval pipeline and return its decisions and chunks, cleaned and capped;
        ``filters`` (paths, tags, dates) limit every search, the fallback's too."""
        loaded = self.load()
        with self._searching, warnings.catch_warnings():  # the result's notes say it
            warnings.simplefilter("ignore", UnknownTypeWarning)
            output = loaded.retriever.run(query, k=k, type_filter=types, filters=filters)
        chunks = []
        for doc in output["documents"]:
            trace = doc.metadata[RETRIEVAL_KEY]
            text, truncated = clean_text(doc.page_content)
            source = _label(doc.metadata.get("source"))
            chunks.append(
                Chunk(
                    text=text,
                    truncated=truncated,
                    source=source,
                    type=_label(doc.metadata.get("type")),
                    chunk=int(doc.metadata.get("chunk", 0)),
                    start_line=_line(doc.metadata.get("start_line")),
                    end_line=_line(doc.metadata.get("end_line")),
                    cite=_label(
                        cite(
                            source,
                            doc.metadata.get("start_line"),
                            doc.metadata.get("end_line"),
                            doc.metadata.get("page"),
                        )
                    ),
                    title=_label(doc.metadata.get("title")),
                    modified=time_label(doc.metadata.get(MODIFIED_KEY)),
                    distance=float(trace["distance"]),
                    critic_score=finite_or_none(trace["critic_score"]),
                    from_fallback=bool(trace["from_fallback"]),
                )
            )
        return SearchResult(
            query=query,
            depth=output["depth"],
            candidates=output["candidates"],
            complexity=output["complexity"],
            verdict=output["verdict"],
            best_distance=finite_or_none(output["best_distance"]),
            gate=output["gate"],
            fallback=output.get("fallback", False),
            critic=output["critic"],
            answerable=output["answerable"],
            abstain_reason=output["abstain_reason"],
            notes=output["notes"],
            unknown_types=[
                UnknownType(type=_label(type_), closest=[_label(c) for c in closest])
                for type_, closest in loaded.retriever.unknown_types(types)
            ],
            chunks=chunks,
        )

    def allowed_path(self, raw: str) -> Path:
        """The real path of ``raw`` if it lies under an allowed folder.

        Links are followed before the check, so a link that leads outside is refused; and
        nothing is said about whether a path outside exists.

        Raises:
            InvalidInputError: Ingestion is off, or the path is outside every allowed folder.
            FileNotFoundError: The path is inside but does not exist.
        """
        if not self.allowed:
            raise InvalidInputError(
                "ingest is off: start the server with --allow DIR to let it read a folder."
            )
        real = Path(raw).expanduser().resolve()
        if not any(real.is_relative_to(root) for root in self.allowed):
            roots = ", ".join(str(r) for r in self.allowed)
            raise InvalidInputError(
                f"path {raw!r} is outside the allowed folders ({roots}); "
                "links are followed before this check."
            )
        if not real.exists():
            raise FileNotFoundError(f"path {raw!r} does not exist.")
        return real

    def ingest(self, raw_path: str, type_: str | None) -> IngestResult:
        """Ingest a file or folder under an allowed root (one ingestion at a time)."""
        from ragbrain.ingest import ingest

        path = self.allowed_path(raw_path)
        loaded = self.load()
        with self._write_lock:
            report = ingest(path, loaded.store, type_=type_)
            loaded.lexical.refresh()  # the next search sees the new chunks at once
        return IngestResult(
            root=str(report.root),
            files=report.files,
            added=report.added,
            unchanged=report.unchanged,
            deleted=report.deleted,
            skipped=[
                SkippedFile(path=_label(item.path), reason=_label(item.reason))
                for item in report.skipped
            ],
            merged=[merge.line() for merge in report.merges],
            warnings=[w for w in (report.link_list_warning(),) if w],
        )

    # --- watch (issue #22) ---
    def start_watching(self) -> None:
        """Follow the allowed folders in this thread until ``stop_watching``: an initial
        ingest of each, then debounced updates. Writes take the ingest tool's lock;
        searches take no lock, so they never wait for an update. Problems are logged."""
        from ragbrain.ingest.watch import Watcher

        loaded = self.load()
        watcher = Watcher(
            self.allowed,
            loaded.store,
            debounce=self._debounce,
            status=lambda line: log.info("watch: %s", line),
            write_lock=self._write_lock,
        )
        self._watcher = watcher
        try:
            watcher.start()
            for report in watcher.initial():
                log.info("watch: %s: %s", report.root, report.summary())
            watcher.run()
        except RagbrainError as exc:
            log.error("watch stopped: %s", exc)

    def stop_watching(self) -> None:
        """Ask the watcher (if any) to stop after the update it is applying."""
        if self._watcher is not None:
            self._watcher.stop()

    # --- end watch ---
    def get(
        self,
        source: str,
        start_line: int | None = None,
        end_line: int | None = None,
        chunk: int | None = None,
        neighbours: int = 0,
    ) -> GetResult:
        """Read a note back from the store: whole, a line range, or a chunk and neighbours."""
        from ragbrain.store.reader import read_source

        lines = None
        if start_line is not None or end_line is not None:
            lines = (start_line or 1, end_line or MAX_LINE)
        excerpt = read_source(
            self.load().store, source, lines=lines, chunk=chunk, neighbours=neighbours
        )
        span = None
        if excerpt.first_line is not None and excerpt.last_line is not None:
            span = LineRange(start_line=excerpt.first_line, end_line=excerpt.last_line)
        return GetResult(
            source=_label(excerpt.source),
            title=_label(excerpt.title),
            type=_label(excerpt.type),
            text=excerpt.text,
            start_line=excerpt.start_line,
            end_line=excerpt.end_line,
            cite=_label(cite(excerpt.source, excerpt.start_line, excerpt.end_line)),
            note_lines=span,
            chunks=list(excerpt.chunks),
            truncated=excerpt.truncated,
            next=None
            if excerpt.next_lines is None
            else LineRange(start_line=excerpt.next_lines[0], end_line=excerpt.next_lines[1]),
        )

    def remember(
        self, title: str, text: str, type_: str, tags: list[str] | None = None
    ) -> RememberResult:
        """Write a new note into the inbox and ingest it at once, as one step: if the ingest
        fails, the note is taken back. A retry of the same note (same title and text) finds
        the one already written. While another writer holds the store, the note is queued
        (the inbox holds it) and indexed as soon as the lock frees; the answer says so at
        once.

        Raises:
            InvalidInputError: ``remember`` is off (no inbox), or the note is refused (see
                ``ragbrain.ingest.inbox.check_note``).
            StoreNotFoundError: The store is gone (nothing is written).
        """
        from ragbrain.ingest.inbox import check_note

        if self.inbox is None:
            raise InvalidInputError(
                "remember is off: start the server with --inbox DIR (inside an --allow "
                "folder) to let it write notes."
            )
        check_note(title, text, type_, tags or ())
        loaded = self.load()
        loaded.store.follow()  # a store that is gone says so before anything is written
        path, new = self.inbox.put(title, text, type_, tags or ())
        source = path.relative_to(self.inbox.root).as_posix()
        try:
            indexed = self._index_now(loaded, path)
        except BaseException:
            if new:  # the note and its indexing are one step: neither happened
                path.unlink(missing_ok=True)
            raise
        if indexed is None:
            holder = self._queue(path)
            log.info("remember queued %s (the store is being written by %s).", path, holder)
            return RememberResult(
                source=_label(source),
                chunks=0,
                cite=_label(source),
                queued=True,
                already=not new,
                status=_label(
                    f"saved in the inbox and queued: {holder} is writing to the store; the "
                    "note is indexed as soon as it finishes (no need to call again)"
                ),
            )
        spans = [
            (m.get("start_line"), m.get("end_line")) for _, m in loaded.store.chunks_of(source)
        ]
        starts = [s for s, _ in spans if isinstance(s, int)]
        ends = [e for _, e in spans if isinstance(e, int)]
        where = cite(source, min(starts), max(ends)) if starts and ends else source
        log.info("remember %s %s (%d chunks).", "wrote" if new else "found", path, indexed)
        return RememberResult(
            source=_label(source),
            chunks=indexed,
            cite=_label(where),
            already=not new,
            status="written and indexed" if new else "already in the inbox; indexed",
        )

    def _index_now(self, loaded: Loaded, path: Path) -> int | None:
        """Ingest the inbox note (or the inbox folder) ``path`` if no writer holds the store
        (this process's or another's); the chunks written, or None when it has to wait."""
        from ragbrain.errors import StoreLockedError
        from ragbrain.ingest import ingest

        assert self.inbox is not None
        if not self._write_lock.acquire(blocking=False):
            self._holder = "this server (an ingest or a watch update)"
            return None
        try:
            try:
                with loaded.store.writing(wait=0):
                    report = ingest(path, loaded.store, root=self.inbox.root)
            except StoreLockedError as exc:
                self._holder = exc.holder or "another process"
                return None
            loaded.lexical.refresh()
            return report.added
        finally:
            self._write_lock.release()

    def _queue(self, path: Path) -> str:
        """Add an inbox note to the queue that waits for the store's lock (starting the
        thread that empties it); who holds the lock, for the answer."""
        with self._queue_lock:
            if path not in self._queued:
                self._queued.append(path)
            if self._drainer is None:
                self._drainer = threading.Thread(
                    target=self._drain, name="ragbrain-remember-queue", daemon=True
                )
                self._drainer.start()
        return self._holder

    def queued(self) -> list[Path]:
        """The inbox notes written but not yet indexed (waiting for the store's lock)."""
        with self._queue_lock:
            return list(self._queued)

    def _drain(self) -> None:
        """Index the queued notes once no writer holds the store (one ingest of the inbox
        folder for all of them); until the queue is empty."""
        loaded = self.load()
        while True:
            with self._queue_lock:
                pending = [p for p in self._queued if p.exists()]
                self._queued = pending
                if not pending:
                    self._drainer = None
                    return
            assert self.inbox is not None
            try:  # one ingest of the inbox folder indexes every queued note at once
                if self._index_now(loaded, self.inbox.folder) is not None:
                    with self._queue_lock:
                        self._queued = [p for p in self._queued if p not in pending]
                    log.info("remember indexed %d queued note(s).", len(pending))
            except Exception as exc:  # the store gone, a server down: try again later
                log.warning("remember could not index the queued notes yet: %s", exc)
                time.sleep(_RETRY_S)
                continue
            time.sleep(_QUEUE_POLL_S)

    def stats(self) -> StatsResult:
        """Chunk counts per type, where the store is, and which models answer."""
        loaded = self.load()
        store, settings = loaded.store, loaded.settings.current()
        return StatsResult(
            store=store.location,
            chunks=store.count(),
            types=dict(sorted(store.types().items())),
            embedding_model=settings.model.name,
            critic=critic_status(settings),
            gate_threshold=run_gate(settings, loaded.retriever.context.gate_threshold)[0],
            abstain=loaded.retriever.context.abstain,
            allowed_roots=[str(root) for root in self.allowed],
            inbox=None if self.inbox is None else str(self.inbox.folder),
        )
