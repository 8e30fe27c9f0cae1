"""`ragbrain critic recalibrate`: fit a trained critic's logistic layers and thresholds anew on
another data set's lists and write the critic with them to a new folder."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ragbrain.critic.folder import MORE_DISTANCE, WITH_DISTANCE, read_calibration
from ragbrain.critic.model import TransformerCritic
from ragbrain.critic.training.data import NoTrainingDataError, QueryCandidates
from ragbrain.critic.training.layers import Progress, fit_layers
from ragbrain.critic.training.recipe import Recipe
from ragbrain.critic.training.save import write_calibration
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
) -> dict[str, Any]:
    """Fit a trained critic's logistic layers and thresholds anew on ``lists`` (the
    retriever's candidates for labelled queries of another data set) and write the critic with
    them to ``out``. The weights, config and feature tables are copied unchanged; only
    ``calibration.json`` differs, and records what it was recalibrated on.

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
        read_calibration(staged)  # checked before it is in place (the rest is a byte copy)
        if out.exists():
            out.rmdir()
        staged.rename(out)
    return calibration
