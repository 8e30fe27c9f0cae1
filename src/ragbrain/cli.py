"""The command line: parse, call the library, print. `ragbrain --help` lists the commands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from ragbrain.errors import InvalidInputError, RagbrainError

if TYPE_CHECKING:
    from ragbrain.store.resilience import StorePolicy

app = typer.Typer(help="ragbrain: a corrective retriever for your notes.", no_args_is_help=True)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="Store folder [default: $RAGBRAIN_STORE or ~/.local/share/ragbrain/store].",
        show_default=False,
    ),
]


# --- server mode (issue #6) ---
ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        envvar="RAGBRAIN_SERVER",
        help="A Chroma server, http://HOST:PORT, instead of --store [env: RAGBRAIN_SERVER].",
        show_default=False,
    ),
]
# --- end server mode ---


def _fail(exc: Exception) -> typer.Exit:
    err.print(f"[red]error:[/] {exc}", highlight=False)
    return typer.Exit(2 if isinstance(exc, InvalidInputError | FileNotFoundError) else 1)


@app.command()
def ingest(
    path: Annotated[
        Path,
        typer.Argument(help="A note (Markdown, text, PDF, HTML, .docx) or a folder of them."),
    ],
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
    server: ServerOption = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            help="Leave out files/folders matching this gitignore pattern (repeatable), on top "
            "of .gitignore and .ragbrainignore files.",
        ),
    ] = None,
    include: Annotated[
        list[str] | None,
        typer.Option(
            "--include", help="Only ingest files matching this gitignore pattern (repeatable)."
        ),
    ] = None,
    embedding: Annotated[
        str | None,
        typer.Option(
            "--embedding",
            help="Embedding model of a new store: minilm (English) or e5-small (multilingual) "
            "[default: the store's own; for a new store, e5-small when at least 5% of the "
            "notes are mainly not English, else minilm]. An existing store keeps its model.",
        ),
    ] = None,
) -> None:
    """Add, update and (with --prune, the default) remove notes in the store."""
    from ragbrain.embeddings import embeddings_for
    from ragbrain.ingest import ingest as run_ingest
    from ragbrain.ingest.ignore import IgnoreRules
    from ragbrain.progress import progress_reporter
    from ragbrain.store import Store
    from ragbrain.store.connect import check_location
    from ragbrain.store.resilience import StorePolicy

    try:  # bad input answers at once, before the model loads or a store is created
        if not path.expanduser().exists():
            raise FileNotFoundError(f"{path.expanduser().absolute()}: no such file or folder")
        IgnoreRules(Path.cwd(), exclude=exclude or (), include=include or ())
        folder = check_location(store, server, create=True)
    except (RagbrainError, FileNotFoundError) as exc:
        raise _fail(exc) from exc
    created = folder is not None and not folder.exists()
    try:
        policy = StorePolicy.from_env()
        if not embedding:
            embedding = _new_store_model(path, store, server, policy)
        opened = Store.open(
            store,
            embeddings_for(embedding) if embedding else None,
            create=True,
            convert_space=convert_space,
            server=server,
            policy=policy,
        )
        with progress_reporter(err, "embedding chunks") as progress:
            report = run_ingest(
                path,
                opened,
                type_=type_,
                prune=prune,
                progress=progress,
                exclude=exclude or (),
                include=include or (),
            )
    except (RagbrainError, FileNotFoundError) as exc:
        if created and folder is not None:  # a failed first ingest leaves no store behind
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
        raise _fail(exc) from exc
    for skipped in report.skipped:
        err.print(f"skipped {skipped.path}: {skipped.reason}", style="yellow", highlight=False)
    out.print(f"{report.summary()} -> {opened.location}", highlight=False)


def _new_store_model(
    path: Path, store: Path | None, server: str | None, policy: StorePolicy
) -> str | None:
    """None for an existing store (it keeps its model); for a new one, the model its notes'
    languages call for, said on stderr."""
    from ragbrain.errors import StoreNotFoundError
    from ragbrain.ingest.model_choice import model_for_notes
    from ragbrain.store import COLLECTION, connect
    from ragbrain.store.resilience import call

    try:
        client, where, _ = connect(store, server, policy, create=False)
        call(
            policy,
            f"Opening the collection at {where}",
            lambda: client.get_collection(COLLECTION, embedding_function=None),
        )
        return None
    except StoreNotFoundError:
        pass
    model, why = model_for_notes(path)
    err.print(f"new store: {why}", highlight=False)
    return model


# --- watch (issue #22) ---
@app.command()
def watch(
    paths: Annotated[list[Path], typer.Argument(help="Folders of notes to follow.")],
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
    server: ServerOption = None,
    debounce: Annotated[
        float, typer.Option(min=0.0, help="Seconds of quiet that end a burst of saves.")
    ] = 1.0,
) -> None:
    """Ingest folders, then keep the store in step with them as files change (Ctrl-C stops)."""
    import signal

    from ragbrain.embeddings import embeddings_for
    from ragbrain.ingest.watch import Watcher
    from ragbrain.progress import progress_reporter
    from ragbrain.store import Store
    from ragbrain.store.resilience import StorePolicy

    def say(line: str) -> None:
        err.print(line, highlight=False, markup=False)

    try:
        policy = StorePolicy.from_env()
        embedding = _new_store_model(paths[0], store, server, policy) if paths else None
        opened = Store.open(
            store,
            embeddings_for(embedding) if embedding else None,
            create=True,
            convert_space=convert_space,
            server=server,
            policy=policy,
        )
        watcher = Watcher(paths, opened, type_=type_, prune=prune, debounce=debounce, status=say)
        watcher.start()  # before the first ingest, so a change made meanwhile is not missed
        with progress_reporter(err, "embedding chunks") as progress:
            reports = watcher.initial(progress)
    except (RagbrainError, FileNotFoundError) as exc:
        raise _fail(exc) from exc
    for report in reports:
        for skipped in report.skipped:
            err.print(f"skipped {skipped.path}: {skipped.reason}", style="yellow", highlight=False)
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
        raise _fail(exc) from exc
    out.print(f"stopped after {watcher.updates} update(s)", highlight=False)


# --- end watch ---


@app.command()
def query(
    text: Annotated[str, typer.Argument(help="What to search for.")],
    type_: Annotated[
        list[str] | None, typer.Option("--type", help="Only these note types (repeatable).")
    ] = None,
    k: Annotated[int | None, typer.Option("--k", help="Fixed depth (1-100).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    store: StoreOption = None,
    critic: Annotated[bool, typer.Option(help="Run the critic (when one is installed).")] = True,
    server: ServerOption = None,
) -> None:
    """Retrieve chunks for TEXT and show every decision the pipeline made."""
    from ragbrain.inputs import check_k, check_query, check_types
    from ragbrain.store.connect import check_location

    try:  # bad input answers at once, before any model or store loads
        check_query(text)
        check_k(k)
        check_types(type_ or None)
        check_location(store, server, create=False)
    except RagbrainError as exc:
        raise _fail(exc) from exc
    from ragbrain.render import print_json, print_run
    from ragbrain.retriever import CorrectiveRetriever
    from ragbrain.store.resilience import StorePolicy

    try:
        retriever = CorrectiveRetriever.from_store(
            store,
            critic="default" if critic else None,
            server=server,
            policy=StorePolicy.from_env(),
        )
        output = retriever.run(text, k=k, type_filter=type_ or None)
        unknown = retriever.unknown_types(type_ or None)
    except RagbrainError as exc:
        raise _fail(exc) from exc
    if unknown:
        from ragbrain.typematch import unknown_types_message

        err.print(f"warning: {unknown_types_message(unknown)}", style="yellow", highlight=False)
    if as_json:
        print_json(text, output, out)
    else:
        print_run(text, output, out)


# --- show: read a note back from the store (issue #21) ---
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

    from ragbrain.reader import parse_target, read_source
    from ragbrain.store import Store
    from ragbrain.store.resilience import StorePolicy

    try:
        source, lines = parse_target(target)
        opened = Store.open(store, None, server=server, policy=StorePolicy.from_env())
        excerpt = read_source(opened, source, lines=lines, chunk=chunk, neighbours=neighbours)
    except RagbrainError as exc:
        raise _fail(exc) from exc
    if as_json:
        out.print_json(json.dumps(dataclasses.asdict(excerpt), ensure_ascii=False))
        return
    sys.stdout.write(excerpt.text + "\n")
    if excerpt.truncated:
        rest = excerpt.next_lines
        more = f"; read on with `ragbrain show {source}:{rest[0]}-{rest[1]}`" if rest else ""
        err.print(f"(cut at {len(excerpt.text):,} characters{more})", highlight=False)


# --- end show ---


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


# --- doctor (issue #6) ---
@app.command()
def doctor(
    store: StoreOption = None,
    server: ServerOption = None,
    sample: Annotated[int, typer.Option(help="Chunks to test for self-retrieval.")] = 20,
) -> None:
    """Check a store: space, dimension, model, counts, self-retrieval, lexical index."""
    from ragbrain.doctor import diagnose
    from ragbrain.store.resilience import StorePolicy

    try:
        policy = StorePolicy.from_env()
        findings = diagnose(store, server=server, store_model=True, policy=policy, sample=sample)
    except RagbrainError as exc:
        raise _fail(exc) from exc
    for finding in findings:
        mark = "[green]ok[/]     " if finding.ok else "[red]problem[/]"
        out.print(f"{mark} {finding.check}: {finding.message}", highlight=False)
        if finding.fix:
            out.print(f"        fix: {finding.fix}", highlight=False)
    problems = sum(not f.ok for f in findings)
    out.print(f"{problems} problem(s)" if problems else "no problems found", highlight=False)
    if problems:
        raise typer.Exit(1)


# --- end doctor ---


@app.command()
def types(
    store: StoreOption = None,
    server: ServerOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List every note type in the store with its chunk and file counts (no model loads)."""
    import json

    from ragbrain.store.resilience import StorePolicy
    from ragbrain.typelist import list_types

    try:
        rows = list_types(store, server=server, policy=StorePolicy.from_env())
    except RagbrainError as exc:
        raise _fail(exc) from exc
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


@app.command()
def graph() -> None:
    """Print the pipeline as a Mermaid diagram."""
    from ragbrain.diagram import mermaid

    sys.stdout.write(mermaid() + "\n")


# --- evaluation and calibration (issue #4) ---


@app.command("eval")
def eval_(
    *,
    data: Annotated[Path, typer.Option("--data", help="A BEIR-layout data set folder.")],
    split: Annotated[str, typer.Option(help="The qrels split to evaluate.")] = "test",
    config: Annotated[
        list[str] | None, typer.Option("--config", help="Only these configurations (repeatable).")
    ] = None,
    critic: Annotated[
        Path | None, typer.Option("--critic", help="Critic folder [default: the shipped one].")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N queries.")] = None,
    types: Annotated[
        int, typer.Option("--types", help="Topic types of the type-filter scenario (0: skip it).")
    ] = 8,
    wrong_share: Annotated[float, typer.Option(help="Share of queries given a wrong type.")] = 0.5,
    out_dir: Annotated[Path, typer.Option("--out", help="Results folder.")] = Path("eval-results"),
    gate: Annotated[
        float | None, typer.Option(help="Gate threshold [default: the package default].")
    ] = None,
    scenario: Annotated[
        list[str] | None,
        typer.Option(
            "--scenario",
            help="Also run 'missing-answer': a seeded half of the queries lose every relevant "
            "document (a store copy); refusal recall and false refusal.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the scenarios' draws.")] = 0,
    lodo: Annotated[
        Path | None,
        typer.Option(
            "--lodo",
            help="A `python -m benchmarks.lodo` result (lodo.json): run with the critic "
            "threshold its fold fit without this data set (refused if the fold saw it).",
        ),
    ] = None,
) -> None:
    """Evaluate the retriever configurations on a BEIR split: quality, behaviour, latency."""
    from ragbrain.context import RetrievalContext
    from ragbrain.embeddings import default_embeddings
    from ragbrain.evaluation.evaluate import EvalOptions, eval_critic, evaluate, stage_reporter
    from ragbrain.evaluation.report import markdown_table

    options = EvalOptions(
        split=split,
        configs=config or None,
        limit=limit,
        type_scenario=types > 0,
        n_types=max(types, 2),
        wrong_share=wrong_share,
        seed=seed,
        missing_answer="missing-answer" in (scenario or []),
        out=out_dir,
    )
    unknown = sorted(set(scenario or []) - {"missing-answer"})
    if unknown:
        raise _fail(InvalidInputError(f"Unknown scenario(s) {unknown}; known: ['missing-answer']."))
    try:
        with stage_reporter(err) as reporter:
            base = RetrievalContext() if gate is None else RetrievalContext(gate_threshold=gate)
            if lodo is not None:
                from dataclasses import replace

                from ragbrain.evaluation.lodo import fold_params

                fitted = fold_params(lodo, data.name)
                threshold = fitted.get("shipped_layer_threshold")
                if isinstance(threshold, float):
                    base = replace(base, critic_threshold=threshold)
            critic_ = eval_critic(critic)
            payload = evaluate(data, options, default_embeddings(), critic_, reporter, base=base)
    except RagbrainError as exc:
        raise _fail(exc) from exc
    out.print(markdown_table(payload["summary"]), highlight=False)
    stem = out_dir / f"{payload['dataset']}-{payload['split']}"
    out.print(f"wrote {stem}.json, {stem}.md, {stem}.png", highlight=False)


@app.command()
def calibrate(
    *,
    data: Annotated[
        list[Path] | None,
        typer.Option(
            "--data",
            help="A labelled BEIR-layout folder, DIR or DIR@SPLIT; repeat to pool several.",
        ),
    ] = None,
    split: Annotated[
        str, typer.Option(help="Labelled split (dev or train) of each --data without @SPLIT.")
    ] = "train",
    store: StoreOption = None,
    samples: Annotated[
        int, typer.Option(help="Queries (labelled) or chunks (self-supervised) to use.")
    ] = 300,
    write: Annotated[bool, typer.Option(help="Write the threshold into --store.")] = True,
    out_dir: Annotated[Path, typer.Option("--out", help="Results folder.")] = Path("eval-results"),
) -> None:
    """Choose the gate threshold: from labelled --data, else self-supervised from --store."""
    from ragbrain.embeddings import default_embeddings
    from ragbrain.evaluation.calibrate_run import run_calibration
    from ragbrain.evaluation.evaluate import stage_reporter

    try:
        with stage_reporter(err) as reporter:
            result = run_calibration(
                data or [],
                split,
                store,
                default_embeddings(),
                samples=samples,
                out=out_dir,
                reporter=reporter,
                write=write,
            )
    except RagbrainError as exc:
        raise _fail(exc) from exc
    out.print(result.summary(), highlight=False)


# --- end evaluation and calibration ---


# --- critic: `ragbrain critic train|eval` (Tiny-Critic, issue #3) --------------------------------
critic_app = typer.Typer(help="Train and evaluate the relevance critic.", no_args_is_help=True)
app.add_typer(critic_app, name="critic")


@critic_app.command("train")
def critic_train(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write the critic to.")],
    data: Annotated[
        list[Path] | None,
        typer.Option(
            "--data", help="A BEIR folder's train split; DIR@SPLIT another non-test split."
        ),
    ] = None,
    from_corpus: Annotated[
        Path | None,
        typer.Option("--from-corpus", help="A folder of notes: train on pseudo-queries."),
    ] = None,
    exclude_test_docs: Annotated[
        bool, typer.Option(help="Drop documents that are relevant in each folder's test split.")
    ] = False,
    epochs: Annotated[int | None, typer.Option(help="Training epochs [default: recipe].")] = None,
    max_queries: Annotated[
        int | None,
        typer.Option(
            help="Queries (or --from-corpus pseudo-queries) sampled per data set [default: recipe]."
        ),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed [default: recipe].")] = None,
    score_length: Annotated[
        int | None,
        typer.Option(
            min=8,
            max=512,
            help="Tokens per (query, chunk) pair when judging [default: recipe, 64]; more "
            "filters better and runs slower. A rerun that changes only this recalibrates.",
        ),
    ] = None,
    list_features: Annotated[
        bool,
        typer.Option(
            help="Judge each chunk against its query's other candidates (rank, gaps to the "
            "best, spread); --no-list-features judges each pair alone. Only recalibrates.",
        ),
    ] = True,
    layers: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=6,
            help="MiniLM layers the critic keeps [default: recipe, 2]; more rank better and "
            "judge slower (6: ~100-120 ms for 10 chunks on 2 cores), ~3.6 MB each on disk.",
        ),
    ] = None,
) -> None:
    """Fine-tune a small cross-encoder critic on (query, chunk, label) pairs and calibrate it."""
    from ragbrain.critic.training.commands import run_train

    try:
        run_train(
            out_dir,
            data or [],
            from_corpus,
            exclude_test_docs,
            epochs,
            max_queries,
            seed,
            score_length=score_length,
            list_features=list_features,
            layers=layers,
        )
    except RagbrainError as exc:
        raise _fail(exc) from exc


@critic_app.command("calibrate")
def critic_calibrate(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder to write the critic to.")],
    data: Annotated[
        list[Path],
        typer.Option(
            "--data",
            help="A BEIR folder with labelled queries: its train split; DIR@SPLIT another "
            "non-test split (repeatable).",
        ),
    ],
    critic_dir: Annotated[
        Path | None, typer.Option("--critic", help="Critic folder [default: the shipped one].")
    ] = None,
    max_queries: Annotated[
        int | None, typer.Option(help="Queries sampled per data set [default: recipe, 1000].")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Random seed [default: recipe].")] = None,
) -> None:
    """Fit a critic's layers and thresholds to your own labelled queries; weights unchanged."""
    from ragbrain.critic.training.commands import run_calibrate

    try:
        run_calibrate(out_dir, data, critic_dir, max_queries, seed)
    except RagbrainError as exc:
        raise _fail(exc) from exc


@critic_app.command("eval")
def critic_eval(
    data: Annotated[list[Path], typer.Option("--data", help="A BEIR folder (repeatable).")],
    split: Annotated[str, typer.Option(help="The split to judge.")] = "test",
    critic_dir: Annotated[
        Path | None, typer.Option("--critic", help="Critic folder [default: the shipped one].")
    ] = None,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Where the table, JSON and PNG go.")
    ] = Path("critic-eval"),
    k: Annotated[int, typer.Option("--k", help="Candidates per query.")] = 10,
    candidates: Annotated[
        str,
        typer.Option(help="The search that picks them: hybrid (the retriever's default) or dense."),
    ] = "hybrid",
    max_queries: Annotated[
        int | None, typer.Option(help="Judge a seeded sample of this many queries.")
    ] = None,
) -> None:
    """Judge the retriever's top-k candidates with the critic and three simple filters."""
    from ragbrain.critic.training.commands import run_eval

    try:
        if candidates not in ("hybrid", "dense"):
            raise InvalidInputError(f"--candidates must be hybrid or dense, got {candidates!r}.")
        run_eval(data, split, critic_dir, out_dir, k, max_queries, candidates=candidates)
    except RagbrainError as exc:
        raise _fail(exc) from exc


# --- end critic -------------------------------------------------------------------------------


# --- MCP server: `ragbrain mcp` (issue #7) -----------------------------------------------------


@app.command()
def mcp(
    store: StoreOption = None,
    allow: Annotated[
        list[Path] | None,
        typer.Option("--allow", help="A folder the ingest tool may read (repeatable)."),
    ] = None,
    critic: Annotated[bool, typer.Option(help="Run the critic (when one is installed).")] = True,
    watch: Annotated[
        bool, typer.Option("--watch", help="Keep the --allow folders in step, as `watch` does.")
    ] = False,
    inbox: Annotated[
        Path | None,
        typer.Option("--inbox", help="A folder inside an --allow one that remember writes to."),
    ] = None,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            help="Serve streamable HTTP at HOST:PORT (one process, many clients) instead of stdio.",
            metavar="HOST:PORT",
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file", help="With --http: the bearer token [default: $RAGBRAIN_MCP_TOKEN]."
        ),
    ] = None,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="With --http on 127.0.0.1 only: no token.")
    ] = False,
    embedding: Annotated[
        str | None,
        typer.Option(
            "--embedding",
            help="Model of the store if the ingest tool creates it: minilm or e5-small "
            "[default: the store's own; minilm for a new store].",
        ),
    ] = None,
) -> None:
    """Serve search, get, remember, ingest and stats to AI coding agents over MCP (stdio).

    stdout carries only protocol messages; logs go to stderr. The models load once, in the
    background as the server starts; a call that arrives earlier waits for them.
    """
    import logging

    try:
        from ragbrain.mcp_server import RagbrainService, serve
        from ragbrain.mcp_server.http import check_bind, serve_http
    except RagbrainError as exc:  # the [mcp] extra is not installed
        raise _fail(exc) from exc

    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s: %(message)s"
    )
    try:
        if http is None and (token_file is not None or no_auth):
            raise InvalidInputError("--token-file and --no-auth need --http HOST:PORT.")
        bind = None if http is None else check_bind(http, token_file, no_auth)
        from ragbrain.embeddings import embeddings_for

        service = RagbrainService(
            store,
            allowed=allow or [],
            critic="default" if critic else None,
            inbox=inbox,
            watch=watch,
            embeddings=embeddings_for(embedding) if embedding else None,
        )
    except RagbrainError as exc:
        raise _fail(exc) from exc
    if bind is None:
        serve(service)
    else:
        serve_http(service, bind)


# --- end MCP server ----------------------------------------------------------------------------
