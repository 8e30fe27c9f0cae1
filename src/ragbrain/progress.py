"""Progress for long operations: a bar on a terminal, a few plain lines otherwise."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

Report = Callable[[int, int], None]


@contextmanager
def progress_reporter(console: Console, label: str) -> Iterator[Report]:
    """Yield a ``report(done, total)`` callback that draws on ``console``."""
    if console.is_terminal:
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
            console.print(f"{label}: {done}/{total}", highlight=False)
            last = tenth

    yield lines
