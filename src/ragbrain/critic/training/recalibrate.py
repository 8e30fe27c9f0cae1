"""`ragbrain critic recalibrate`: fit a trained critic's logistic layers and thresholds anew on
another data set's lists and write the critic with them to a new folder."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragbrain.critic.folder import MORE_DISTANCE, WITH_DISTANCE, read_calibration
from ragbrain.critic.model import TransformerCritic
from ragbrain.critic.training.data import NoTrainingDataError, QueryCandidates
from ragbrain.critic.training.layers import Progress, fit_layers
from ragbrain.critic.training.recipe import Recipe
from ragbrain.critic.training.save import write_calibration
from ragbrain.critic.training.sources import ScenarioLists
from ragbrain.errors import CriticLoadError, InvalidInputError


def check_destination(folder: Path, out: Path) -> None:
    """Refuse to recalibrate ``folder`` into itself or into a folder that holds anything.

    Raises:
        InvalidInputError: Naming ``out`` and why.
    """
    if out.resolve() == folder.resolve():
        raise InvalidInputError(f"{out}: write the recalibrated critic to another folder.")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InvalidInputError(f"{out}: exists and is not an empty folder.")


def recalibrate(
    folder: Path,
    lists: Sequence[QueryCandidates],
    out: Path,
    recipe: Recipe,
    *,
    sources: dict[str, Any],
    embedding_model: str | None,
    progress: Callable[[str], Progress | None] = lambda _label: None,
    scenario: Mapping[str, ScenarioLists] | None = None,
) -> dict[str, Any]:
    """Fit a trained critic's logistic layers and thresholds anew on ``lists`` (the
    retriever's candidates for labelled queries of another data set) and write the critic with
    them to ``out``. The weights, config and feature tables are copied unchanged; only
    ``calibration.json`` differs, and records what it was recalibrated on.

    With ``scenario`` (the same queries in the missing-answer scenario, ``scenario_lists``),
    the new distance layer also gets the abstention cuts ``RetrievalContext.abstain`` uses,
    fit on the new layer's scores by the shipped rule (``ragbrain.refusal.abstain.fit_thresholds``).

    Raises:
        CriticLoadError: ``folder`` is no valid critic, or one without a logistic layer.
        InvalidInputError: ``out`` is ``folder``, or a folder that is not empty.
        NoTrainingDataError: No list holds a relevant chunk.
    """
    check_destination(folder, out)
    critic = TransformerCritic(folder, backend="torch")  # fit_layers runs its torch model
    if critic.features is None:
        raise CriticLoadError(f"{folder}: has no logistic layer to recalibrate.")
    if not any(c.relevant for item in lists for c in item.candidates):
        raise NoTrainingDataError("No query has a relevant chunk among its candidates.")
    recipe = dataclasses.replace(recipe, score_length=critic.max_length)
    model, tokenizer, features = critic.model, critic.tokenizer, critic.features
    layers = fit_layers(model, tokenizer, features, [], lists, recipe, embedding_model, progress)
    calibration = {k: v for k, v in critic.calibration.items() if k != WITH_DISTANCE}
    calibration.update(layers)
    if MORE_DISTANCE in calibration:  # a refit layer replaces another of the same model
        calibration[MORE_DISTANCE] = [
            layer
            for layer in calibration[MORE_DISTANCE]
            if layer["embedding_model"] != embedding_model
        ]
    calibration["recalibrated"] = {
        "from": str(folder),
        **sources,
        "queries": len(lists),
        "target_recall": recipe.target_recall,
        "list_features": recipe.list_features,
    }
    # Written beside ``out`` and renamed into place: a failure leaves no half-written critic.
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".{out.name}-") as tmp:
        staged = Path(tmp) / out.name
        shutil.copytree(folder, staged, ignore=shutil.ignore_patterns("__pycache__"))
        write_calibration(staged, calibration)
        if scenario and embedding_model and WITH_DISTANCE in calibration:
            judge = TransformerCritic(staged, backend="torch").for_model(embedding_model)
            cuts = abstention_cuts(judge, scenario)
            calibration[WITH_DISTANCE]["abstain"] = cuts
            calibration["recalibrated"]["abstention"] = {
                k: v for k, v in cuts.items() if k != "fit"
            }
            write_calibration(staged, calibration)
        read_calibration(staged)  # checked before it is in place (the rest is a byte copy)
        if out.exists():
            out.rmdir()
        staged.rename(out)
    return calibration


def abstention_cuts(
    critic: TransformerCritic, scenario: Mapping[str, ScenarioLists]
) -> dict[str, Any]:
    """The abstention record of a distance layer, fit on ``scenario`` with ``critic``'s scores:
    the cuts, and how they were fit (each set's queries, the rule, what they reach there).

    Raises:
        InvalidInputError: The scenario holds no query.
    """
    from ragbrain.refusal.abstain import MAX_FALSE_REFUSAL, EvidenceRow, best_score, fit_thresholds

    per_set: dict[str, list[EvidenceRow]] = {}
    for name, items in scenario.items():
        rows: list[EvidenceRow] = []
        for answerable, item in items:
            texts = [c.text for c in item.candidates]
            distances = [c.distance for c in item.candidates]
            best = best_score(critic.score(item.query, texts, distances)) if texts else None
            rows.append(
                (
                    answerable,
                    -1.0 if best is None else best,
                    min(distances, default=2.0),
                    item.bm25_coverage or 0.0,
                )
            )
        per_set[name] = rows
    fitted = fit_thresholds(per_set)
    return {
        "critic_below": fitted["critic_below"],
        "distance_above": fitted["distance_above"],
        "coverage_below": fitted["coverage_below"],
        "fit": {
            "by": "ragbrain critic calibrate (its labelled queries, missing-answer scenario)",
            "rule": "the most answerless queries refused (mean over the sets) while every set "
            f"refuses <= {MAX_FALSE_REFUSAL:.0%} of its answerable ones",
            "refusal_recall": fitted["refusal_recall"],
            "false_refusal_worst": fitted["false_refusal_worst"],
            "queries": {name: len(items) for name, items in scenario.items()},
        },
    }
