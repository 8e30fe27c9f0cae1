"""Commands that measure: eval (BEIR data sets) and calibrate (the gate threshold)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragbrain.cli.common import DEFAULT_MODEL, MODEL_CHOICES, StoreOption, app, err, fail, out
from ragbrain.errors import InvalidInputError, RagbrainError

if TYPE_CHECKING:
    pass


@app.command("eval")
def eval_(
    *,
    data: Annotated[
        Path,
        typer.Option(
            "--data",
            help="A BEIR-layout data set folder, or a notes folder: notes/ and questions.json "
            "(the notes ingested as `ragbrain ingest` does, cached; its questions asked).",
        ),
    ],
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
            help="Also run 'missing-answer' (a seeded half of the queries lose every relevant "
            "document; a store copy) or 'off-topic' (the other data sets' test queries beside "
            "--data and a bank of general questions); refusal and false refusal.",
        ),
    ] = None,
    offtopic_root: Annotated[
        Path | None,
        typer.Option(
            "--offtopic-root",
            help="The folder of data sets whose test queries the off-topic scenario asks "
            "[default: the folder holding --data].",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the scenarios' draws.")] = 0,
    lodo: Annotated[
        Path | None,
        typer.Option(
            "--lodo",
            help="A `python -m benchmarks.lodo` result (lodo.json): run with what its fold "
            "fit without this data set (critic threshold, fusion's dense share, abstention "
            "cuts; refused if the fold saw it).",
        ),
    ] = None,
    embedding: Annotated[
        str | None,
        typer.Option(
            "--embedding",
            help=f"The evaluation store's embedding model: {MODEL_CHOICES} "
            f"[default: {DEFAULT_MODEL.choice}].",
        ),
    ] = None,
) -> None:
    """Evaluate the retriever configurations on a BEIR split: quality, behaviour, latency; or
    the shipped retriever on a notes folder's questions."""
    from ragbrain.evaluation.notes import is_notes_domain

    if is_notes_domain(data):
        _eval_notes(data, embedding, out_dir)
        return
    from ragbrain.context import RetrievalContext
    from ragbrain.evaluation.evaluate import EvalOptions, eval_critic, evaluate, stage_reporter
    from ragbrain.evaluation.report import markdown_table
    from ragbrain.models.embeddings import EMBEDDING_CHOICES, embeddings_for
    from ragbrain.settings import resolve_model

    options = EvalOptions(
        split=split,
        configs=config or None,
        limit=limit,
        type_scenario=types > 0,
        n_types=max(types, 2),
        wrong_share=wrong_share,
        seed=seed,
        missing_answer="missing-answer" in (scenario or []),
        offtopic_root=(offtopic_root or data.parent) if "off-topic" in (scenario or []) else None,
        out=out_dir,
    )
    unknown = sorted(set(scenario or []) - {"missing-answer", "off-topic"})
    if unknown:
        raise fail(
            InvalidInputError(
                f"Unknown scenario(s) {unknown}; known: ['missing-answer', 'off-topic']."
            )
        )
    if embedding is not None and embedding not in EMBEDDING_CHOICES:
        raise fail(
            InvalidInputError(
                f"Unknown --embedding {embedding!r}; known: {'|'.join(EMBEDDING_CHOICES)}."
            )
        )
    try:
        with stage_reporter(err) as reporter:
            base = RetrievalContext() if gate is None else RetrievalContext(gate_threshold=gate)
            embeddings = embeddings_for(embedding)
            if lodo is not None:
                from ragbrain.evaluation.lodo import fold_context, fold_params

                fitted = fold_params(lodo, data.name, resolve_model(embeddings).name)
                base = fold_context(fitted, f"{lodo} (fold {data.name})", base)
            critic_ = eval_critic(critic)
            payload = evaluate(data, options, embeddings, critic_, reporter, base=base)
    except RagbrainError as exc:
        raise fail(exc) from exc
    out.print(markdown_table(payload["summary"]), highlight=False)
    stem = out_dir / f"{payload['dataset']}-{payload['split']}"
    out.print(f"wrote {stem}.json, {stem}.md, {stem}.png", highlight=False)


def _eval_notes(data: Path, embedding: str | None, out_dir: Path) -> None:
    """``ragbrain eval --data NOTES_FOLDER``: the notes domain's questions, per group and split."""
    from ragbrain.evaluation.evaluate import stage_reporter
    from ragbrain.evaluation.notes import broad_table, evaluate_notes, notes_table
    from ragbrain.evaluation.report import write_atomic, write_json
    from ragbrain.models.embeddings import EMBEDDING_CHOICES, embeddings_for

    if embedding is not None and embedding not in EMBEDDING_CHOICES:
        raise fail(
            InvalidInputError(
                f"Unknown --embedding {embedding!r}; known: {'|'.join(EMBEDDING_CHOICES)}."
            )
        )
    try:
        with stage_reporter(err) as reporter:
            payload = evaluate_notes(data, embeddings_for(embedding), reporter=reporter)
    except RagbrainError as exc:
        raise fail(exc) from exc
    text = "".join(
        f"\n{split} split ({payload['dataset']}, {payload['model']}, {payload['chunks']} "
        f"chunks):\n\n{notes_table(payload['summary'], split)}"
        + (f"\n{broad}" if (broad := broad_table(payload["summary"], split)) else "")
        for split in ("fit", "test")
    )
    out.print(text, highlight=False)
    stem = out_dir / f"{payload['dataset']}-notes"
    write_json(stem.with_suffix(".json"), payload)
    write_atomic(stem.with_suffix(".md"), text)
    out.print(f"wrote {stem}.json, {stem}.md", highlight=False)


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
    embedding: Annotated[
        str | None,
        typer.Option(
            "--embedding",
            help=f"Model to calibrate for: {MODEL_CHOICES} [default: the --store's own "
            f"model; {DEFAULT_MODEL.choice} for --data without a store]. A store refuses "
            "another model.",
        ),
    ] = None,
) -> None:
    """Choose the gate threshold: from labelled --data, else self-supervised from --store."""
    from ragbrain.evaluation.calibrate_run import run_calibration
    from ragbrain.evaluation.evaluate import stage_reporter
    from ragbrain.models.embeddings import embeddings_for

    try:
        with stage_reporter(err) as reporter:
            result = run_calibration(
                data or [],
                split,
                store,
                embeddings_for(embedding) if embedding else None,
                samples=samples,
                out=out_dir,
                reporter=reporter,
                write=write,
            )
    except RagbrainError as exc:
        raise fail(exc) from exc
    out.print(result.summary(), highlight=False)
