"""Commands that search and check a store: query, demo, doctor, graph."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from ragbrain.cli.common import ServerOption, StoreOption, app, err, fail, out
from ragbrain.errors import RagbrainError, UnknownTypeWarning

if TYPE_CHECKING:
    pass


@app.command()
def query(
    text: Annotated[str, typer.Argument(help="What to search for.")],
    type_: Annotated[
        list[str] | None, typer.Option("--type", help="Only these note types (repeatable).")
    ] = None,
    k: Annotated[int | None, typer.Option("--k", help="Fixed depth (1-100).")] = None,
    path: Annotated[
        list[str] | None,
        typer.Option(
            "--path",
            help="Only notes under this folder or file, relative to the ingested folder as "
            "results show it (repeatable: any of them).",
        ),
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", help="Only notes with this tag, any case (repeatable: any of them)."),
    ] = None,
    all_tags: Annotated[
        bool, typer.Option("--all-tags", help="With several --tag: notes with all of them.")
    ] = False,
    after: Annotated[
        str | None,
        typer.Option(
            "--after",
            help="Only notes dated on or after DATE (ISO; front-matter date, else the file's "
            "time at ingest; no zone: UTC).",
        ),
    ] = None,
    before: Annotated[
        str | None, typer.Option("--before", help="Only notes dated before DATE (ISO).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    store: StoreOption = None,
    critic: Annotated[bool, typer.Option(help="Run the critic (when one is installed).")] = True,
    abstain: Annotated[
        str,
        typer.Option(
            "--abstain",
            help="Refusal: 'on' answers nothing, saying why, to a question the notes are not "
            "about; 'strict' also when the answer seems missing though its topic is there "
            "(more false refusals: docs/quality.md); 'off' never refuses.",
        ),
    ] = "on",
    server: ServerOption = None,
) -> None:
    """Retrieve chunks for TEXT and show every decision the pipeline made.

    Filters combine with AND; the fallback search widens only --type."""
    from ragbrain.query.filters import Filters
    from ragbrain.query.inputs import check_abstain, check_k, check_query, check_types
    from ragbrain.store.connect import check_location

    spec = {"path": path or None, "tags": tag or None, "all_tags": all_tags}
    try:  # bad input answers at once, before any model or store loads
        check_query(text)
        check_k(k)
        check_types(type_ or None)
        check_abstain(abstain)
        filters = Filters.parse({**spec, "after": after, "before": before})
        check_location(store, server, create=False)
    except RagbrainError as exc:
        raise fail(exc) from exc
    from ragbrain.cli.loading import loading

    try:
        with loading():
            from ragbrain.context import RetrievalContext
            from ragbrain.render import print_json, print_run
            from ragbrain.retriever import CorrectiveRetriever
            from ragbrain.store.connect import StorePolicy

            retriever = CorrectiveRetriever.from_store(
                store,
                critic="default" if critic else None,
                server=server,
                policy=StorePolicy.from_env(),
                context=RetrievalContext(abstain=check_abstain(abstain)),
            )
        with warnings.catch_warnings():  # said below, in the command's own words
            warnings.simplefilter("ignore", UnknownTypeWarning)
            output = retriever.run(text, k=k, type_filter=type_ or None, filters=filters)
        unknown = retriever.unknown_types(type_ or None)
    except RagbrainError as exc:
        raise fail(exc) from exc
    if unknown:
        from ragbrain.query.typematch import unknown_types_message

        err.print(f"warning: {unknown_types_message(unknown)}", style="yellow", highlight=False)
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
    from ragbrain.cli.demo import run_demo

    try:
        run_demo(out, err, store)
    except RagbrainError as exc:
        raise fail(exc) from exc


@app.command()
def doctor(
    store: StoreOption = None,
    server: ServerOption = None,
    sample: Annotated[int, typer.Option(help="Chunks to test for self-retrieval.")] = 20,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="First repair in place what can be: merge roots that lie inside others "
            "(dropping files stored twice), write back chunks no search reaches, bring the "
            "lexical index in step.",
        ),
    ] = False,
) -> None:
    """Check a store: space, dimension, model, counts, roots, self-retrieval, lexical index.

    Exits 1 when a check finds a problem, 0 when all pass or only give advice."""
    from ragbrain.doctor import diagnose
    from ragbrain.store.connect import StorePolicy

    try:
        policy = StorePolicy.from_env()
        if fix:
            from ragbrain.doctor.sources import repair
            from ragbrain.store import Store

            done = repair(Store.open(store, None, server=server, policy=policy))
            for line in done or ["nothing to repair"]:
                out.print(f"fixed: {line}", highlight=False, markup=False)
        findings = diagnose(store, server=server, store_model=True, policy=policy, sample=sample)
    except RagbrainError as exc:
        raise fail(exc) from exc
    for finding in findings:
        if finding.ok:
            mark = Text("ok     ", style="green")
        else:
            mark = (
                Text("advice ", style="yellow") if finding.advice else Text("problem", style="red")
            )
        out.print(mark, f" {finding.check}: {finding.message}", sep="", highlight=False)
        if finding.fix:
            out.print(f"        fix: {finding.fix}", highlight=False)
    problems = sum(f.fault for f in findings)
    advice = sum(not f.ok and f.advice for f in findings)
    said = f"{problems} problem(s)" if problems else "no problems found"
    out.print(said + (f", {advice} piece(s) of advice" if advice else ""), highlight=False)
    if problems:  # advice alone exits 0: doctor serves as a health check
        raise typer.Exit(1)


@app.command()
def graph() -> None:
    """Print the pipeline as a Mermaid diagram."""
    from ragbrain.cli.diagram import mermaid

    sys.stdout.write(mermaid() + "\n")
