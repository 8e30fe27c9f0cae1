"""Following folders with watchdog: an initial ingest, then debounced batches of changes.

A burst of saves is one update: file events are gathered until the folders have been quiet
for ``debounce`` seconds (or ``longest`` seconds have passed since the first, so a steady
stream of changes is still applied). Each batch is applied by ``apply_changes``, which keeps
ingest's guarantees; a watcher that is killed is repaired by the initial ingest of the next
start, which is a full ``ingest``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.errors import InvalidInputError, StoreLockedError
from ragbrain.ingest.debounce import Debouncer
from ragbrain.ingest.files import MAX_BYTES, SUFFIXES
from ragbrain.ingest.ignore import IgnoreRules
from ragbrain.ingest.roots import place
from ragbrain.ingest.run import IngestReport, Progress, ingest
from ragbrain.ingest.update import Update, apply_changes

if TYPE_CHECKING:
    from ragbrain.store import Store

log = logging.getLogger(__name__)
#: Stores above this many chunks get a status line before the first pass's index check
#: (docs/decisions/measured-costs.md).
LONG_CHECK = 20_000

DEBOUNCE_SECONDS = 1.0
#: How often the watcher checks that each folder still exists (and has come back).
RECHECK_SECONDS = 2.0
#: How long to wait before trying again when another writer holds the store's lock.
LOCKED_RETRY_SECONDS = 1.0
INSTALL = "pip install 'ragbrain[watch]'"

Status = Callable[[str], None]


def _watchdog() -> Any:
    try:
        from watchdog import events, observers
    except ImportError:
        raise InvalidInputError(f"ragbrain watch needs watchdog: {INSTALL}") from None
    return events, observers


def wanted(root: Path, path: str, is_directory: bool) -> bool:
    """Whether an event on ``path`` can change what the walk finds: hidden entries (such as
    ``.obsidian/``, ``.trash/``, ``.git/``) and files of other suffixes are not."""
    try:
        parts = Path(path).relative_to(root).parts
    except ValueError:
        return False
    if any(part.startswith(".") for part in parts):
        return False
    return is_directory or Path(path).suffix.lower() in SUFFIXES


class Watcher:
    """Keeps the store in step with folders: ``initial()``, then ``run()`` until ``stop()``."""

    def __init__(
        self,
        roots: Sequence[str | Path],
        store: Store,
        *,
        type_: str | None = None,
        prune: bool = True,
        max_bytes: int = MAX_BYTES,
        debounce: float = DEBOUNCE_SECONDS,
        longest: float | None = None,
        status: Status | None = None,
        write_lock: threading.Lock | None = None,
        on_update: Callable[[], None] | None = None,
        exclude: Sequence[str] = (),
        include: Sequence[str] = (),
    ) -> None:
        """Check the folders; nothing is watched yet.

        Args:
            roots: Folders to follow.
            store: The opened store.
            type_, prune, max_bytes: As for ``ingest``.
            debounce: Seconds of quiet that end a burst of changes.
            longest: Apply a batch at the latest this long after its first change
                [default: 10 x debounce, at least 5 s].
            status: Called with one line per applied change or problem.
            write_lock: Held around every write (a process that also writes from other
                threads, like the MCP server, passes its own).
            on_update: Called after each applied batch.
            exclude, include: Gitignore patterns, as for ``ingest`` (relative to each
                watched folder, on top of its ignore files): a file they leave out is not
                ingested, and loses its chunks (with ``prune``).

        Raises:
            InvalidInputError: A folder does not exist, a pattern is not valid gitignore
                syntax, or watchdog is not installed.
        """
        _watchdog()
        self.exclude, self.include = tuple(exclude), tuple(include)
        # Bad patterns are refused here, not at the first change.
        IgnoreRules(Path.cwd(), exclude=self.exclude, include=self.include, read_files=False)
        self.roots = []
        for root in roots:
            path = Path(os.path.abspath(Path(root).expanduser()))
            if not path.is_dir():
                raise InvalidInputError(f"watch {root}: not an existing folder.")
            self.roots.append(path)
        self.roots = list(dict.fromkeys(self.roots))
        self.store = store
        self.type_, self.prune, self.max_bytes = type_, prune, max_bytes
        self.status = status or (lambda line: log.info("%s", line))
        self.write_lock = write_lock or threading.Lock()
        self.on_update = on_update
        self.debouncer = Debouncer(debounce, longest)
        self.updates = 0  # batches applied
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._observer: Any = None
        self._watches: dict[Path, Any] = {}
        #: The store's root each watched folder's notes are stored under (itself, or the
        #: root that holds it: ``ragbrain.ingest.roots``).
        self._stored_under: dict[Path, Path] = {}

    # --- events (watchdog's thread) ---
    def _event(self, event: Any) -> None:
        if event.event_type in ("opened", "closed_no_write") or (
            event.is_directory and event.event_type in ("modified", "closed")
        ):
            return
        paths = [os.fsdecode(event.src_path)]
        if getattr(event, "dest_path", ""):
            paths.append(os.fsdecode(event.dest_path))
        for root in self.roots:
            hits = [Path(p) for p in paths if wanted(root, p, event.is_directory)]
            if hits:
                self.notify(hits)

    def notify(self, paths: Iterable[Path]) -> None:
        """Queue changed paths (the watchdog handler calls this; tests may too)."""
        with self._changed:
            self.debouncer.add(paths, time.monotonic())
            self._changed.notify()

    # --- lifecycle ---
    def initial(self, progress: Progress | None = None) -> list[IngestReport]:
        """Ingest each folder in full, then check that the index reaches every chunk (this
        also repairs a store a killed watcher left).

        Raises:
            StoreLockedError: Another process is writing to the store.
        """
        reports = []
        for root in self.roots:
            with self.write_lock:
                report = ingest(
                    root,
                    self.store,
                    type_=self.type_,
                    prune=self.prune,
                    max_bytes=self.max_bytes,
                    progress=progress,
                    exclude=self.exclude,
                    include=self.include,
                )
            self._stored_under[root] = report.root
            reports.append(report)
        with self.write_lock:
            # Checked again after the first full pass, and thoroughly (every chunk searched by
            # its own vector, once per start). After a watcher was killed,
            # a chunk could be missing from Chroma's vector index once the ingest's own repair
            # (before its writes) had run (seen in the SIGKILL test, about one start in
            # three), or be in the index out of every search's reach (1 run in 35 of that
            # test, also when the kill had landed between two updates).
            count = self.store.count()
            if count > LONG_CHECK:
                self.status(f"checking that the index reaches each of the {count} chunks")
            restored = self.store.restore_missing_vectors(thorough=True)
            if restored:
                log.warning(
                    "restored %d chunks to the vector index after the first pass", len(restored)
                )
        return reports

    def start(self) -> None:
        """Start watching (in watchdog's own thread)."""
        events, observers = _watchdog()
        handler = events.FileSystemEventHandler()
        handler.on_any_event = self._event
        self._handler = handler
        self._observer = observers.Observer()
        for root in self.roots:
            self._schedule(root)
        self._observer.start()

    def _schedule(self, root: Path) -> None:
        try:
            self._watches[root] = self._observer.schedule(self._handler, str(root), recursive=True)
        except OSError as exc:
            self.status(f"cannot watch {root}: {exc}")

    def stop(self) -> None:
        """Ask ``run`` to return after the batch it is applying; stop watching."""
        self._stop.set()
        with self._changed:
            self._changed.notify()

    def run(self) -> None:
        """Apply batches of changes until ``stop()`` is called."""
        if self._observer is None:
            self.start()
        present = dict.fromkeys(self.roots, True)
        checked = time.monotonic()
        try:
            while not self._stop.is_set():
                with self._changed:
                    wait = self.debouncer.wait(time.monotonic())
                    if wait is None or wait > 0:
                        self._changed.wait(min(RECHECK_SECONDS, wait or RECHECK_SECONDS))
                    batch = self.debouncer.take(time.monotonic())
                if batch and not self._stop.is_set():
                    self.apply(batch)
                if time.monotonic() - checked >= RECHECK_SECONDS:
                    checked = time.monotonic()
                    self._recheck(present)
        finally:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None

    def _recheck(self, present: dict[Path, bool]) -> None:
        """Say when a folder disappears (its chunks stay) and ingest it when it is back."""
        for root, was in present.items():
            now = root.is_dir()
            if was and not now:
                self.status(f"{root} is gone; its notes stay in the store until it is back")
                watch = self._watches.pop(root, None)
                if watch is not None:
                    try:
                        self._observer.unschedule(watch)
                    except (KeyError, OSError):
                        log.debug("%s was already unwatched", root)
            elif now and not was:
                self.status(f"{root} is back; watching it again")
                self._schedule(root)
                self.notify([root])
            present[root] = now
        if not self._observer.is_alive():  # watchdog's thread died: start a new one
            self.status("the file watcher stopped; starting it again")
            self.start()
            self.notify(self.roots)

    def apply(self, paths: Sequence[Path]) -> list[Update]:
        """Apply one batch now: every folder's changes, one status line each."""
        updates = []
        for root in self.roots:
            mine = [p for p in paths if p == root or root in p.parents]
            if not mine or not root.is_dir():
                continue
            try:
                with self.write_lock:
                    update = apply_changes(
                        self.store,
                        self.stored_under(root),
                        mine,
                        type_=self.type_,
                        prune=self.prune,
                        max_bytes=self.max_bytes,
                        exclude=self.exclude,
                        include=self.include,
                        folder=root,
                    )
            except StoreLockedError as exc:
                self.status(f"{exc} Trying again in {LOCKED_RETRY_SECONDS:.0f} s.")
                self._later(mine, LOCKED_RETRY_SECONDS)
                continue
            updates.append(update)
            stamp = time.strftime("%H:%M:%S")
            for change in update.changes:
                self.status(f"{stamp} {change.line()}")
            for skipped in update.skipped:
                self.status(f"{stamp} skipped {skipped.path}: {skipped.reason}")
            if update.retry:
                self.status(f"{stamp} {len(update.retry)} file(s) changed while read; again soon")
                self.notify(update.retry)
        self.updates += 1
        if self.on_update is not None:
            self.on_update()
        return updates

    def stored_under(self, folder: Path) -> Path:
        """The store's root that the watched ``folder``'s notes are stored under."""
        if folder not in self._stored_under:
            roots = self.store.ledger().roots or ()
            self._stored_under[folder] = place(folder, roots).root
        return self._stored_under[folder]

    def _later(self, paths: list[Path], seconds: float) -> None:
        timer = threading.Timer(seconds, self.notify, args=(paths,))
        timer.daemon = True
        timer.start()
