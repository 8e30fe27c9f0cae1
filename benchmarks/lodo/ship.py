"""Writing a LODO run's every-set fit into a critic folder (``benchmarks.lodo --ship-*``).

The fit on every shared set's train/dev queries is what ships: the critic's distance layer
for the stores' embedding model (``--ship-layer``), its threshold with the weights kept
(``--ship-threshold``), and the abstention cuts (``--ship-abstention``), each with a record of
how it was fit in the folder's ``calibration.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import say
from benchmarks.lodo.fit import labelled_scores, shipped_scorer
from ragbrain.refusal.abstain import MAX_FALSE_REFUSAL

if TYPE_CHECKING:
    from ragbrain import TransformerCritic


def ship_layer(folder: Path, fold: dict[str, Any], model: str, names: Sequence[str]) -> None:
    """Write the every-set fit's layer into ``folder`` as its distance layer for ``model``."""
    from ragbrain.critic.training.distance_layer import add_distance_layer

    layer = {
        "embedding_model": model,
        "threshold": fold["refit_threshold"],
        "combiner": fold["_layer"].combiner,
        "fit": {
            "by": "python -m benchmarks.lodo (every set's train/dev lists, rows balanced per set)",
            "sets": list(names),
            "layout": fold["layer_layout"],
            "dense_share": fold["dense_share"],
        },
    }
    add_distance_layer(folder, layer)
    say(f"wrote the {model} distance layer into {folder}")


def _layer_of(folder: Path, model: str) -> dict[str, Any]:
    """``folder``'s distance layer for ``model`` (a copy)."""
    from ragbrain.critic.folder import distance_layers, read_calibration

    layer = distance_layers(read_calibration(folder)).get(model)
    if layer is None:
        raise SystemExit(f"{folder} has no distance layer for {model}")
    return dict(layer)


def ship_threshold(
    folder: Path, fold: dict[str, Any], critic: TransformerCritic, model: str
) -> None:
    """Set the threshold of ``folder``'s distance layer for ``model`` (its weights kept) to
    the every-set fit's: each set's train/dev hybrid top 10 keeps >= 92% of its relevant
    candidates. The layer's ``dev`` figures (at the old threshold) move under ``fit``, and
    each set's figures at the new threshold go to ``threshold_fit``."""
    from ragbrain.critic.training.distance_layer import add_distance_layer
    from ragbrain.critic.training.keep_metrics import keep_stats

    old = _layer_of(folder, model)
    threshold = fold["shipped_layer_threshold"]
    per_set = {}
    for data in fold["_fit"]:
        scores, labels, _ = labelled_scores([data], fold["dense_share"], shipped_scorer(critic))
        stats = keep_stats(scores, labels, threshold)
        per_set[data.name] = {
            "queries": len(data.records),
            "relevant_kept": stats.relevant_kept,
            "irrelevant_dropped": stats.irrelevant_dropped,
        }
    layer = {k: v for k, v in old.items() if k != "dev"}
    if "dev" in old:  # the weights' own fit, and its figures at the threshold it had then
        layer["fit"] = {
            "weights": "fit on the critic's own dev lists (see the calibration's `recalibrated`)",
            "dev_threshold": old["threshold"],
            "dev": old["dev"],
        }
    layer |= {
        "threshold": threshold,
        "threshold_fit": {
            "by": "python -m benchmarks.lodo --ship-threshold (the layer's weights kept)",
            "rule": "every set's train/dev hybrid top 10 keeps >= 92% of its relevant candidates",
            "dense_share": fold["dense_share"],
            "sets": per_set,
        },
    }
    add_distance_layer(folder, layer)
    say(f"set the {model} distance layer's threshold in {folder} to {threshold:.4f}")


def ship_abstention(folder: Path, fold: dict[str, Any], model: str) -> None:
    """Write the every-set fit's abstention thresholds (the shipped layer's evidence on the
    missing-answer scenario of every set's train/dev queries) into ``folder``'s distance layer
    for ``model`` as its ``abstain`` record (``RetrievalContext.abstain`` reads it)."""
    from ragbrain.critic.training.distance_layer import add_distance_layer

    fitted = fold["abstention_shipped"]
    layer = _layer_of(folder, model)
    layer["abstain"] = {
        "critic_below": fitted["critic_below"],
        "distance_above": fitted["distance_above"],
        "coverage_below": fitted["coverage_below"],
        "fit": {
            "by": "python -m benchmarks.lodo --ship-abstention",
            "rule": "the most answerless queries refused (mean over the sets) while every set "
            f"refuses <= {MAX_FALSE_REFUSAL:.0%} of its answerable ones",
            "refusal_recall": fitted["refusal_recall"],
            "false_refusal_worst": fitted.get("false_refusal_worst"),
            "sets": [data.name for data in fold["_fit"]],
        },
    }
    add_distance_layer(folder, layer)
    say(f"wrote the {model} distance layer's abstention thresholds into {folder}")
