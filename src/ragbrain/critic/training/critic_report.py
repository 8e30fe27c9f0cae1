"""Writing a critic evaluation: a Markdown table, a JSON file and a PNG of the score picture."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragbrain.critic.training.keep_metrics import precision_recall_curve


def _pct(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:.1f}%"


def _auc(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def markdown(reports: Sequence[dict[str, Any]]) -> str:
    """One table for all data sets: each scorer's keep/drop figures on the same candidates."""
    lines = [
        "| data set | scorer | relevant kept | irrelevant dropped | precision | F1 | ROC AUC |"
        " critic p50 / p95 ms (CPU p50) | load s | RSS MB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for report in reports:
        search = report.get("candidate_search", "dense")
        candidates = f", {search} top {report['k']}" if "k" in report else ""
        name = f"{report['data_set']} ({report['split']}, {report['queries']} q{candidates})"
        for row in report["rows"]:
            is_critic = row["scorer"] == "Tiny-Critic"
            lat = report["latency_ms"]
            lines.append(
                f"| {name} | {row['scorer']} | {_pct(row['relevant_kept'])} | "
                f"{_pct(row['irrelevant_dropped'])} | {_pct(row['precision'])} | "
                f"{row['f1']:.3f} | {_auc(row['auc'])} | "
                + (
                    f"{lat['p50']:.0f} / {lat['p95']:.0f} "
                    f"(CPU {lat.get('cpu_p50', math.nan):.0f}) | "
                    f"{report['load_seconds']:.2f} | "
                    f"{report['rss_added_mb']:.0f} |"
                    if is_critic
                    else "| | |"
                )
            )
    return "\n".join(lines) + "\n"


def write_json(reports: Sequence[dict[str, Any]], path: Path) -> None:
    """Everything but the raw scores, which only the plot needs."""
    slim = [{k: v for k, v in r.items() if k != "scores"} for r in reports]
    path.write_text(json.dumps(slim, indent=2) + "\n", encoding="utf-8")


def plot(reports: Sequence[dict[str, Any]], path: Path) -> None:
    """Per data set: critic score histograms (relevant vs irrelevant, threshold marked) and the
    precision/recall-of-keep curves of the critic (with and without its distance layer, when
    it has one) and the cosine distance."""
    from ragbrain._util import require

    require("matplotlib", extra="eval", feature="Critic report plots").use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(reports), 2, figsize=(11, 3.6 * len(reports)), squeeze=False)
    for (hist, curve), report in zip(axes, reports, strict=True):
        scores = report["scores"]
        labels = scores["labels"]
        critic = [s for s in scores["critic"]]
        threshold = next(r["threshold"] for r in report["rows"] if r["scorer"] == "Tiny-Critic")
        bins = [i / 40 for i in range(41)]
        hist.hist(
            [s for s, y in zip(critic, labels, strict=True) if y],
            bins=bins,
            alpha=0.6,
            density=True,
            label="relevant",
        )
        hist.hist(
            [s for s, y in zip(critic, labels, strict=True) if not y],
            bins=bins,
            alpha=0.6,
            density=True,
            label="irrelevant",
        )
        hist.axvline(threshold, color="black", linestyle="--", label=f"threshold {threshold:.3f}")
        hist.set_title(f"{report['data_set']} {report['split']}: critic scores")
        hist.set_xlabel("critic probability")
        hist.legend()
        curves = [("Tiny-Critic", critic), ("cosine distance", scores["neg_distance"])]
        if scores.get("plain"):
            curves.insert(1, ("Tiny-Critic without distance", scores["plain"]))
        for name, values in curves:
            points = precision_recall_curve(values, labels)
            curve.plot([p[1] for p in points], [p[2] for p in points], label=name)
        curve.axvline(report["target_recall"], color="grey", linestyle=":")
        curve.set_xlabel("relevant kept (recall)")
        curve.set_ylabel("precision of kept set")
        curve.set_title(f"{report['data_set']}: precision / recall of keep")
        curve.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
