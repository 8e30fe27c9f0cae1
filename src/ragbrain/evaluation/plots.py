"""PNG plots of an evaluation and a calibration (matplotlib, Agg backend, no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from matplotlib.figure import Figure


def _figure(width: float, height: float) -> Figure:
    from ragbrain._util import require

    require("matplotlib", extra="eval", feature="Evaluation plots").use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=110)


def _save(figure: Figure, path: Path) -> None:
    """Save through a temporary file and a rename, so no half-written PNG is left behind."""
    from ragbrain._util import replacing

    with replacing(path) as temporary:
        figure.tight_layout()
        figure.savefig(temporary, format="png")


def plot_eval(summary: Mapping[str, Mapping[str, Any]], title: str, path: Path) -> None:
    """Quality (nDCG@10, Recall@10, set precision) and latency (p50, p95) per configuration."""
    names = list(summary)
    figure = _figure(11, 4)
    quality, latency = figure.subplots(1, 2)
    metrics = (("ndcg@10", "nDCG@10"), ("recall@10", "Recall@10"), ("set_precision", "set P"))
    width = 0.8 / len(metrics)
    for offset, (key, label) in enumerate(metrics):
        xs = [i + offset * width for i in range(len(names))]
        quality.bar(xs, [summary[n].get(key) or 0.0 for n in names], width, label=label)
    quality.set_xticks([i + width for i in range(len(names))], names, rotation=20, ha="right")
    quality.set_ylim(0, 1)
    quality.set_title(f"{title}: quality")
    quality.legend(fontsize=8)
    for offset, key in enumerate(("p50_ms", "p95_ms")):
        xs = [i + offset * 0.4 for i in range(len(names))]
        latency.bar(xs, [summary[n][key] for n in names], 0.4, label=key.replace("_ms", ""))
    latency.set_xticks([i + 0.2 for i in range(len(names))], names, rotation=20, ha="right")
    latency.set_ylabel("ms per query")
    latency.set_title(f"{title}: latency")
    latency.legend(fontsize=8)
    _save(figure, path)


def plot_distances(
    positives: Sequence[float],
    negatives: Sequence[float],
    threshold: float,
    title: str,
    path: Path,
    *,
    labels: tuple[str, str] = ("a relevant chunk in the results", "no relevant chunk"),
) -> None:
    """Histograms of the best cosine distance for the two groups, with the chosen gate."""
    figure = _figure(7, 4)
    axes = figure.subplots()
    values = [*positives, *negatives]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    bins = [low + (high - low) * i / 40 for i in range(41)] if high > low else 10
    axes.hist(positives, bins=bins, alpha=0.6, label=f"{labels[0]} (n={len(positives)})")
    axes.hist(negatives, bins=bins, alpha=0.6, label=f"{labels[1]} (n={len(negatives)})")
    axes.axvline(threshold, color="black", linestyle="--", label=f"gate {threshold:.3f}")
    axes.set_xlabel("best cosine distance of the search")
    axes.set_ylabel("queries")
    axes.set_title(title)
    axes.legend(fontsize=8)
    _save(figure, path)
