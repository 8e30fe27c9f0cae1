"""Commands that change or read the notes in a store: ingest, watch, show, types."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragbrain.cli.common import (
    ENGLISH_MODEL,
    MULTILINGUAL_MODEL,
    ConvertSpaceOption,
    PruneOption,
    ServerOption,
    StoreOption,
    TypeOption,
    app,
    err,
    fail,
    out,
)
from ragbrain.cli.opening import _open_for_writing
from ragbrain.cli.reembed import _re_embed
from ragbrain.errors import RagbrainError

if TYPE_CHECKING:
    from ragbrain.ingest import IngestReport

ExcludeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        help="Leave out files/folders matching this gitignore pattern (repeatable), on top "
        "of .gitignore and .ragbrainignore files.",
    ),
]
IncludeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--include", help="Only ingest files matching this gitignore pattern (repeatable)."
    ),
]


@app.command()
def ingest(
    path: Annotated[
        Path,
        typer.Argument(help="A note (Markdown, text, PDF, HTML, .docx) or a folder of them."),
    ],
    type_: TypeOption = None,
    store: StoreOption = None,
    prune: PruneOption = True,
    convert_space: ConvertSpaceOption = False,
    server: ServerOption = None,
    exclude: ExcludeOption = None,
    include: IncludeOption = None,
    embedding: Annotated[
        str | None,
        typer.Option(
            "--embedding",
            help=f"Embedding model of a new store: {ENGLISH_MODEL.choice} (English) or "
            f"{MULTILINGUAL_MODEL.choice} (multilingual) [default: the store's own; for a new "
            f"store, {MULTILINGUAL_MODEL.choice} when at least 5% of the notes are mainly not "
            f"English, else {ENGLISH_MODEL.choice}]. An existing store keeps its model.",
        ),
    ] = None,
    re_embed: Annotated[
        bool,
        typer.Option(
            "--re-embed",
            help="Rebuild an existing store folder with the --embedding model, from the notes "
            "folder it was ingested from (built beside it, swapped in when complete).",
        ),
    ] = False,
    check_index: Annotated[
        bool,
        typer.Option(
            "--check-index",
            help="Search every chunk by its own vector first and write back those no search "
            "reaches (done anyway after a killed writer; `ragbrain doctor` tells).",
        ),
    ] = False,
) -> None:
    """Add, update and (with --prune, the default) remove notes in the store.

    A folder or file inside a folder already ingested is stored under that folder (one
    source per file). Ctrl-C stops after saying what was written; the same command resumes.
    """
    from ragbrain._util import progress_reporter
    from ragbrain.ingest import IngestInterrupted
    from ragbrain.ingest import ingest as run_ingest
    from ragbrain.ingest.ignore import IgnoreRules
    from ragbrain.store.connect import check_location

    try:  # bad input answers at once, before the model loads or a store is created
        if not path.expanduser().exists():
            raise FileNotFoundError(f"{path.expanduser().absolute()}: no such file or folder")
        IgnoreRules(Path.cwd(), exclude=exclude or (), include=include or ())
        folder = check_location(store, server, create=True)
    except (RagbrainError, FileNotFoundError) as exc:
        raise fail(exc) from exc
    if re_embed:
        _re_embed(path, folder, server, embedding, type_, exclude or (), include or ())
        return
    created = folder is not None and not folder.exists()
    try:
        opened = _open_for_writing(path, store, server, convert_space, embedding)
        with progress_reporter(err, "embedding chunks") as progress:
            report = run_ingest(
                path,
                opened,
                type_=type_,
                prune=prune,
                progress=progress,
                exclude=exclude or (),
                include=include or (),
                check_index=check_index,
            )
    except (RagbrainError, FileNotFoundError) as exc:
        _drop_new_store(folder if created else None)
        raise fail(exc) from exc
    except (IngestInterrupted, KeyboardInterrupt) as stop:
        written = stop.report if isinstance(stop, IngestInterrupted) else None
        if written is not None:
            _say_report(written)
        again = ["ingest", str(path), *_options(store, server, type_, prune, exclude, include)]
        raise interrupted(written, again) from None
    except Exception:
        _drop_new_store(folder if created else None)
        raise
    _say_report(report)
    out.print(f"{report.summary()} -> {opened.location}", highlight=False)


def _drop_new_store(folder: Path | None) -> None:
    """A failed first ingest leaves no store behind (not even a half-made
    ``chroma.sqlite3``): the folder it created is removed."""
    if folder is not None:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def _say_report(report: IngestReport) -> None:
    """The skipped files and the link-list warning, once each, on stderr."""
    for skipped in report.skipped:
        err.print(f"skipped {skipped.path}: {skipped.reason}", style="yellow", highlight=False)
    warning = report.link_list_warning()
    if warning:
        err.print(f"warning: {warning}", style="yellow", highlight=False)


def _options(
    store: Path | None,
    server: str | None,
    type_: str | None,
    prune: bool,
    exclude: list[str] | None,
    include: list[str] | None,
) -> list[str]:
    """The options of an ingest or watch, as the command line takes them again."""
    options = [] if store is None else ["--store", str(store)]
    options += [] if server is None else ["--server", server]
    options += [] if type_ is None else ["--type", type_]
    options += [] if prune else ["--no-prune"]
    for pattern in exclude or ():
        options += ["--exclude", pattern]
    for pattern in include or ():
        options += ["--include", pattern]
    return options


def interrupted(report: IngestReport | None, again: list[str]) -> typer.Exit:
    """Say what an ingest stopped by Ctrl-C wrote and how to finish it (run ``again``, the
    same command); exit 130."""
    import shlex

    command = shlex.join(["ragbrain", *again])
    if report is None:
        done = "interrupted; anything written stays in the store"
    else:
        done = (
            f"interrupted: {report.added} new chunks written, nothing deleted (the store keeps "
            "what it had; its BM25 index matches what was written, and queries note the "
            "unfinished ingest until it is finished)"
        )
    err.print(
        f"{done}. Run the same command again to finish (unchanged chunks are not embedded "
        f"again): {command}",
        style="yellow",
        highlight=False,
    )
    return typer.Exit(130)


@app.command()
def watch(
    paths: Annotated[list[Path], typer.Argument(help="Folders of notes to follow.")],
    type_: TypeOption = None,
    store: StoreOption = None,
    prune: PruneOption = True,
    convert_space: ConvertSpaceOption = False,
    server: ServerOption = None,
    debounce: Annotated[
        float, typer.Option(min=0.0, help="Seconds of quiet that end a burst of saves.")
    ] = 1.0,
    exclude: ExcludeOption = None,
    include: IncludeOption = None,
) -> None:
    """Ingest folders, then keep the store in step with them as files change (Ctrl-C stops).

    --exclude and --include act as for ingest, relative to each watched folder: a file they
    leave out is not ingested, and (with --prune) loses its chunks.
    """
    import signal

    from ragbrain._util import progress_reporter
    from ragbrain.ingest import IngestInterrupted
    from ragbrain.ingest.ignore import IgnoreRules
    from ragbrain.ingest.watch import Watcher

    def say(line: str) -> None:
        err.print(line, highlight=False, markup=False)

    try:  # bad patterns answer at once, before the model loads
        IgnoreRules(Path.cwd(), exclude=exclude or (), include=include or ())
    except RagbrainError as exc:
        raise fail(exc) from exc
    try:
        opened = _open_for_writing(paths[0] if paths else None, store, server, convert_space)
        watcher = Watcher(
            paths,
            opened,
            type_=type_,
            prune=prune,
            debounce=debounce,
            status=say,
            exclude=exclude or (),
            include=include or (),
        )
        watcher.start()  # before the first ingest, so a change made meanwhile is not missed
        with progress_reporter(err, "embedding chunks") as progress:
            reports = watcher.initial(progress)
    except (RagbrainError, FileNotFoundError) as exc:
        raise fail(exc) from exc
    except (IngestInterrupted, KeyboardInterrupt) as halted:
        stopped = halted.report if isinstance(halted, IngestInterrupted) else None
        if stopped is not None:
            _say_report(stopped)
        again = [
            "watch",
            *map(str, paths),
            *_options(store, server, type_, prune, exclude, include),
        ]
        raise interrupted(stopped, again) from None
    for report in reports:
        _say_report(report)
        out.print(f"{report.root}: {report.summary()} -> {opened.location}", highlight=False)

    def stop(signum: int, frame: object) -> None:
        say("stopping after the current update (Ctrl-C again to quit at once)")
        signal.signal(signal.SIGINT, signal.default_int_handler)
        watcher.stop()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    out.print(f"watching {len(watcher.roots)} folder(s); Ctrl-C stops", highlight=False)
    try:
        watcher.run()
    except RagbrainError as exc:
        raise fail(exc) from exc
    out.print(f"stopped after {watcher.updates} update(s)", highlight=False)


@app.command()
def show(
    target: Annotated[
        str,
        typer.Argument(
            help="SOURCE as query prints it, optionally with :LINES (12-30, 12, or 12-).",
            metavar="SOURCE[:LINES]",
        ),
    ],
    chunk: Annotated[
        int | None, typer.Option("--chunk", help="Show this chunk instead of lines.")
    ] = None,
    neighbours: Annotated[
        int, typer.Option("--neighbours", help="With --chunk: chunks before and after (0-10).")
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    store: StoreOption = None,
    server: ServerOption = None,
) -> None:
    """Print a note (or some of its lines, or a chunk) from the store's own text."""
    import dataclasses
    import json

    from ragbrain.store import Store
    from ragbrain.store.connect import StorePolicy
    from ragbrain.store.reader import parse_target, read_source

    try:
        source, lines = parse_target(target)
        opened = Store.open(store, None, server=server, policy=StorePolicy.from_env())
        excerpt = read_source(opened, source, lines=lines, chunk=chunk, neighbours=neighbours)
    except RagbrainError as exc:
        raise fail(exc) from exc
    if as_json:
        out.print_json(json.dumps(dataclasses.asdict(excerpt), ensure_ascii=False))
        return
    sys.stdout.write(excerpt.text + "\n")
    if excerpt.truncated:
        rest = excerpt.next_lines
        more = f"; read on with `ragbrain show {source}:{rest[0]}-{rest[1]}`" if rest else ""
        err.print(f"(cut at {len(excerpt.text):,} characters{more})", highlight=False)


@app.command()
def types(
    store: StoreOption = None,
    server: ServerOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List every note type in the store with its chunk and file counts (no model loads)."""
    import json

    from ragbrain.store.connect import StorePolicy
    from ragbrain.store.reader import list_types

    try:
        rows = list_types(store, server=server, policy=StorePolicy.from_env())
    except RagbrainError as exc:
        raise fail(exc) from exc
    if as_json:
        payload = [{"type": r.type, "chunks": r.chunks, "files": r.files} for r in rows]
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        return
    width = max([len(r.type or "(none)") for r in rows] + [4])
    out.print(f"{'type':<{width}}  chunks  files", highlight=False)
    for row in rows:
        out.print(
            f"{row.type or '(none)':<{width}}  {row.chunks:>6}  {row.files:>5}", highlight=False
        )
    out.print(f"{len(rows)} types, {sum(r.chunks for r in rows)} chunks", highlight=False)
