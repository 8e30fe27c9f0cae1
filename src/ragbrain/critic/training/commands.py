"""What `ragbrain critic train|eval` run: wiring data, training, evaluation and reports."""

from __future__ import annotations

import dataclasses
import json
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console

from ragbrain._util import Report, progress_reporter
from ragbrain.errors import InvalidInputError

out = Console()
err = Console(stderr=True)


class Stages:
    """One progress bar per stage; opening the next stage closes the previous bar."""

    def __init__(self) -> None:
        self._stack = ExitStack()

    def __call__(self, label: str) -> Report:
        self._stack.close()
        self._stack = ExitStack()
        return self._stack.enter_context(progress_reporter(err, label))

    def __enter__(self) -> Stages:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


def run_train(
    out_dir: Path,
    data: list[Path],
    from_corpus: Path | None,
    exclude_test_docs: bool,
    epochs: int | None,
    max_queries: int | None,
    seed: int | None,
    *,
    score_length: int | None = None,
    list_features: bool = True,
    layers: int | None = None,
    base: str | None = None,
) -> None:
    """Mine pairs, train, calibrate and save; print where the critic went and its dev figures.

    Raises:
        InvalidInputError: Both or neither of ``data`` and ``from_corpus``, or an unknown
            ``base`` (``critic.folder.BASE_CHOICES``).
    """
    from ragbrain.critic.folder import BASE_CHOICES
    from ragbrain.critic.training.recipe import Recipe
    from ragbrain.critic.training.sources import from_beir
    from ragbrain.critic.training.sources import from_corpus as pseudo
    from ragbrain.critic.training.train import train_critic
    from ragbrain.models.embeddings import default_embeddings
    from ragbrain.models.profiles import default_profile

    if bool(data) == (from_corpus is not None):
        raise InvalidInputError("Pass one or more --data folders, or --from-corpus, not both.")
    if base is not None and base not in BASE_CHOICES:
        raise InvalidInputError(
            f"--base {base}: no such critic base; choose one of {', '.join(BASE_CHOICES)}."
        )
    recipe = Recipe()
    recipe = dataclasses.replace(
        recipe,
        epochs=recipe.epochs if epochs is None else epochs,
        max_queries=recipe.max_queries if max_queries is None else max_queries,
        seed=recipe.seed if seed is None else seed,
        score_length=recipe.score_length if score_length is None else score_length,
        list_features=list_features,
        layers=recipe.layers if layers is None else layers,
        base=recipe.base if base is None else BASE_CHOICES[base],
    )
    with Stages() as stage:
        embeddings = default_embeddings()
        if from_corpus is not None:
            found = pseudo(from_corpus, embeddings, recipe, stage=stage)
        else:
            found = from_beir(
                data, embeddings, recipe, exclude_test_docs=exclude_test_docs, stage=stage
            )
        err.print(
            f"{len(found.train)} training groups; {len(found.dev_seen)} dev queries "
            f"({len(found.dev)} with a relevant chunk among their mined candidates)",
            highlight=False,
        )
        calibration = train_critic(
            found.train,
            found.dev,
            found.corpus_texts,
            out_dir,
            recipe,
            sources=found.sources,
            progress=stage,
            dev_seen=found.dev_seen,
            embedding_model=default_profile().name,
        )
    _report(out_dir, calibration)


def _report(out_dir: Path, calibration: dict[str, Any]) -> None:
    """Where the critic went, its thresholds and each layer's dev figures."""
    from ragbrain.critic.folder import WITH_DISTANCE

    layer = calibration[WITH_DISTANCE]
    out.print(
        f"critic written to {out_dir} (threshold {calibration['threshold']:.3f}; with "
        f"{layer['embedding_model']} distances {layer['threshold']:.3f})",
        highlight=False,
    )
    out.print(
        json.dumps(
            {"without distance": calibration["dev"], "with distance": layer["dev"]}, indent=2
        ),
        highlight=False,
    )
    cuts = layer.get("abstain")
    if cuts is not None:
        fit = cuts["fit"]
        coverage = cuts["coverage_below"]
        out.print(
            f"abstention (--abstain): critic below {cuts['critic_below']:.3f}, distance above "
            f"{cuts['distance_above']:.3f}"
            + ("" if coverage is None else f", BM25 coverage below {coverage:.2f}")
            + f"; on these queries with their answers removed it refuses "
            f"{fit['refusal_recall']:.0%} of the answerless and at most "
            f"{fit['false_refusal_worst']:.0%} of the answerable ones",
            highlight=False,
        )


def run_calibrate(
    out_dir: Path,
    data: list[Path],
    critic_dir: Path | None,
    max_queries: int | None,
    seed: int | None,
) -> None:
    """Recalibrate a critic's layers on labelled queries of other data; save and report."""
    from ragbrain.critic.folder import default_critic_path
    from ragbrain.critic.training.recalibrate import check_destination, recalibrate
    from ragbrain.critic.training.recipe import Recipe
    from ragbrain.critic.training.sources import data_folder, retrieved_lists, scenario_lists
    from ragbrain.models.embeddings import default_embeddings
    from ragbrain.models.profiles import default_profile

    if not data:
        raise InvalidInputError("Pass one or more --data folders with labelled queries.")
    critic_dir = critic_dir or default_critic_path()
    for given in data:
        data_folder(given)  # bad arguments are refused before any model loads
    check_destination(critic_dir, out_dir)
    recipe = Recipe()
    recipe = dataclasses.replace(
        recipe,
        max_queries=recipe.max_queries if max_queries is None else max_queries,
        seed=recipe.seed if seed is None else seed,
    )
    with Stages() as stage:
        embeddings = default_embeddings()
        lists, sources = retrieved_lists(data, embeddings, recipe, stage=stage)
        missing = scenario_lists(data, embeddings, recipe, stage=stage)
        calibration = recalibrate(
            critic_dir,
            lists,
            out_dir,
            recipe,
            sources=sources,
            embedding_model=default_profile().name,
            progress=stage,
            scenario=missing,
        )
    _report(out_dir, calibration)


def run_eval(
    data: list[Path],
    split: str,
    critic_dir: Path | None,
    out_dir: Path,
    k: int,
    max_queries: int | None = None,
    *,
    candidates: str = "hybrid",
) -> None:
    """Evaluate on each folder; write critic-eval.md/.json/.png into ``out_dir``."""
    from ragbrain.critic.folder import default_critic_path
    from ragbrain.critic.training.critic_eval import evaluate, load_timed
    from ragbrain.critic.training.critic_report import markdown, plot, write_json
    from ragbrain.models.embeddings import default_embeddings

    embeddings = default_embeddings()
    critic, seconds, rss = load_timed(critic_dir or default_critic_path())
    reports = []
    with Stages() as stage:
        for folder in data:
            reports.append(
                evaluate(
                    folder,
                    split,
                    critic,
                    embeddings,
                    k=k,
                    candidates=candidates,
                    load_seconds=seconds,
                    rss_added_mb=rss,
                    max_queries=max_queries,
                    stage=stage,
                )
            )
    out_dir.mkdir(parents=True, exist_ok=True)
    table = markdown(reports)
    (out_dir / "critic-eval.md").write_text(table, encoding="utf-8")
    write_json(reports, out_dir / "critic-eval.json")
    plot(reports, out_dir / "critic-eval.png")
    out.print(table, highlight=False)
    out.print(f"written to {out_dir}/critic-eval.{{md,json,png}}", highlight=False)
