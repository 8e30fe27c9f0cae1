"""Small helpers used across the package: atomic writes, optional extras, safe text to show,
work in a thread of its own, progress on a terminal, and giving freed heap memory back to the
system."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import importlib
import importlib.util
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ragbrain.errors import MissingExtraError

if TYPE_CHECKING:
    from rich.console import Console

# --- Writing files whole or not at all: a temporary file beside the target, renamed into place.


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write; renamed over ``path`` when the block ends.

    If the block raises (or the process dies), the temporary file is removed (or left hidden
    as ``.<name>.*.tmp``) and ``path`` keeps its old content, or stays absent.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        yield Path(temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with replacing(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with replacing(path) as temporary:
        temporary.write_bytes(data)


# --- Optional features: import their packages on first use, or say which extra installs them.


def require(
    module: str, *, feature: str, extra: str | None = None, fix: str | None = None
) -> ModuleType:
    """Import ``module`` for ``feature``, or fail naming the install command.

    Args:
        module: The module to import, e.g. ``"matplotlib"``.
        feature: What needs it, for the message (``"Evaluation plots"``).
        extra: The ragbrain extra that installs it (``eval``, ``mcp``, ...).
        fix: What to do instead, for a core dependency (no extra installs it).

    Raises:
        MissingExtraError: ``module`` is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise _missing(module, feature, extra, fix) from exc


def installed(module: str, *, feature: str, extra: str) -> None:
    """Check that ``module`` can be imported for ``feature``, without importing it (a large
    package takes a second to import, which can then be spent elsewhere).

    Raises:
        MissingExtraError: ``module`` is not installed (the message names the extra).
    """
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise _missing(module, feature, extra, None)


def _missing(module: str, feature: str, extra: str | None, fix: str | None) -> MissingExtraError:
    package = module.partition(".")[0]
    way_out = fix or f"pip install 'ragbrain[{extra}]'"
    return MissingExtraError(f"{feature} needs {package}, which is not installed: {way_out}")


# --- Making stored text safe to show: control characters removed, length capped.

# C0/C1 control characters except tab and newline, and the bidirectional overrides and
# isolates that can make text read differently from what it holds.
UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


# Terminal escape sequences whole (a colour, a cursor move, a window title, a link), so none
# leaves its tail behind ("[31m") once its escape character is gone: CSI, OSC (ended by BEL
# or ST), and the other two-character escapes.
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")


def printable(text: str) -> str:
    """``text`` without terminal escape sequences and control characters (tab and newline
    stay): a note's text shown in a terminal cannot recolour it, move its cursor or retitle
    its window."""
    return UNSAFE.sub("", ANSI.sub("", text))


def clean_text(text: str, limit: int) -> tuple[str, bool]:
    """Strip escape sequences and control characters (tab and newline stay) and cap the
    length.

    Returns:
        The cleaned text and whether it was cut.
    """
    cleaned = printable(text)
    return cleaned[:limit], len(cleaned) > limit


# --- Work in a thread of its own, its result (or error) handed to whoever waits for it.

T = TypeVar("T")


class Background(Generic[T]):
    """``work()`` run in a thread of its own (named ``name``); ``result()`` waits for it,
    raising its error in the caller's thread."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._work = work
        self._value: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._work()
        except BaseException as exc:  # raised again, in the caller's thread, by result()
            self._error = exc

    def result(self) -> T:
        """The work's return value, once it is done."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


# --- Progress for long operations: a bar on a terminal, a few plain lines otherwise.

Report = Callable[[int, int], None]


@contextlib.contextmanager
def progress_reporter(console: Console, label: str) -> Iterator[Report]:
    """Yield a ``report(done, total)`` callback that draws on ``console``."""
    if console.is_terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        ) as bar:
            task = bar.add_task(label, total=None)

            def draw(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            yield draw
        return

    last = -1

    def lines(done: int, total: int) -> None:
        nonlocal last
        tenth = 10 * done // total if total else 10
        if total and tenth > last:
            console.print(f"{label}: {done}/{total}", highlight=False, markup=False)
            last = tenth

    yield lines


# --- Giving freed heap memory back to the system after a burst of embedding.
# Encoding a batch of long texts allocates hundreds of MB of activations; glibc keeps much of
# it in its heap after it is freed, so a long-lived process (``ragbrain mcp --watch``,
# ``ragbrain watch``) stays that much larger after every ingest. ``malloc_trim`` returns it;
# called once per ingest or update, not per batch (the next batch would fault the pages in
# again).


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None


def give_back_freed_memory() -> bool:
    """Return the heap's free pages to the system (glibc's ``malloc_trim``).

    Returns:
        Whether anything was returned; False where the C library has no ``malloc_trim``
        (macOS, musl).
    """
    libc = _libc()
    return bool(libc.malloc_trim(0)) if libc is not None else False
