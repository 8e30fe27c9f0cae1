"""The command line: parse, call the library, print. `ragbrain --help` lists the commands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ragbrain.errors import InvalidInputError, RagbrainError

app = typer.Typer(help="ragbrain: a corrective retriever for your notes.", no_args_is_help=True)
out = Console()
err = Console(stderr=True)

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="Store folder [default: $RAGBRAIN_STORE or ~/.local/share/ragbrain/store].",
        show_default=False,
    ),
]


def _fail(exc: Exception) -> typer.Exit:
    err.print(f"[red]error:[/] {exc}", highlight=False)
    return typer.Exit(2 if isinstance(exc, InvalidInputError | FileNotFoundError) else 1)


@app.command()
def ingest(
    path: Annotated[Path, typer.Argument(help="A Markdown/text file or a folder of them.")],
    type_: Annotated[
        str | None, typer.Option("--type", help="Note type [default: front matter, else folder].")
    ] = None,
    store: StoreOption = None,
    prune: Annotated[
        bool, typer.Option(help="Delete chunks of files no longer in the folder.")
    ] = True,
    convert_space: Annotated[
        bool, typer.Option(help="Copy a non-cosine collection into a cosine one.")
    ] = False,
) -> None:
    """Add, update and (with --prune, the default) remove notes in the store."""
    from ragbrain.embeddings import default_embeddings
    from ragbrain.ingest import ingest as run_ingest
    from ragbrain.progress import progress_reporter
    from ragbrain.store import Store

    try:
        opened = Store.open(store, default_embeddings(), create=True, convert_space=convert_space)
        with progress_reporter(err, "embedding chunks") as progress:
            report = run_ingest(path, opened, type_=type_, prune=prune, progress=progress)
    except (RagbrainError, FileNotFoundError) as exc:
        raise _fail(exc) from exc
    for skipped in report.skipped:
        err.print(f"skipped {skipped.path}: {skipped.reason}", style="yellow", highlight=False)
    out.print(f"{report.summary()} -> {opened.location}", highlight=False)


@app.command()
def query(
    text: Annotated[str, typer.Argument(help="What to search for.")],
    type_: Annotated[
        list[str] | None, typer.Option("--type", help="Only these note types (repeatable).")
    ] = None,
    k: Annotated[int | None, typer.Option("--k", help="Fixed depth (1-100).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    store: StoreOption = None,
    critic: Annotated[
        bool, typer.Option(help="Run the critic (when one is installed).")
    ] = True,
) -> None:
    """Retrieve chunks for TEXT and show every decision the pipeline made."""
    from ragbrain.render import print_json, print_run
    from ragbrain.retriever import CorrectiveRetriever

    try:
        retriever = CorrectiveRetriever.from_store(store, critic="default" if critic else None)
        output = retriever.run(text, k=k, type_filter=type_ or None)
    except RagbrainError as exc:
        raise _fail(exc) from exc
    if as_json:
        print_json(text, output, out)
    else:
        print_run(text, output, out)


@app.command()
def demo(
    store: Annotated[
        Path | None,
        typer.Option(help="Keep the demo store here [default: a temporary folder]."),
    ] = None,
) -> None:
    """Build a store from the bundled sample notes and run queries that show each path."""
    from ragbrain.demo import run_demo

    try:
        run_demo(out, err, store)
    except RagbrainError as exc:
        raise _fail(exc) from exc


@app.command()
def graph() -> None:
    """Print the pipeline as a Mermaid diagram."""
    from ragbrain.diagram import mermaid

    sys.stdout.write(mermaid() + "\n")
