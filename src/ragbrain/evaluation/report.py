"""Turning query runs into a summary: per-configuration metrics, a Markdown table, JSON, plots."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain._util import write_text
from ragbrain.evaluation.metrics import (
    mean,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    recall_at_k,
    set_precision,
    set_recall,
)

if TYPE_CHECKING:
    from ragbrain.evaluation.runner import QueryRun

Qrels = Mapping[str, Mapping[str, int]]


def summarize(runs: Sequence[QueryRun], qrels: Qrels) -> dict[str, dict[str, Any]]:
    """Per configuration (in first-seen order): ranked, set, behaviour and latency figures."""
    by_config: dict[str, list[QueryRun]] = {}
    for run in runs:
        by_config.setdefault(run.config, []).append(run)
    return {name: _summary(group, qrels) for name, group in by_config.items()}


def _summary(runs: Sequence[QueryRun], qrels: Qrels) -> dict[str, Any]:
    def avg(values: list[float]) -> float:
        return mean(values) or 0.0

    judged = [(r, qrels[r.query_id]) for r in runs]
    precisions = [p for r, q in judged if (p := set_precision(r.returned, q)) is not None]
    verdicts = [r.verdict for r in runs if r.verdict is not None]
    ms = [r.seconds * 1000 for r in runs]
    return {
        "queries": len(runs),
        "ndcg@10": avg([ndcg_at_k(r.returned, q) for r, q in judged]),
        "recall@10": avg([recall_at_k(r.returned, q) for r, q in judged]),
        "mrr@10": avg([mrr_at_k(r.returned, q) for r, q in judged]),
        "set_precision": mean(precisions),
        "set_recall": avg([set_recall(r.returned, q) for r, q in judged]),
        "mean_returned": avg([float(len(r.returned)) for r in runs]),
        "empty_share": avg([float(not r.returned) for r in runs]),
        "poor_share": mean([float(v == "poor") for v in verdicts]),
        "fallback_share": mean([float(bool(r.fallback)) for r in runs if r.fallback is not None]),
        "depths": {str(d): n for d, n in sorted(Counter(r.depth for r in runs).items())},
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
    }


def _cell(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("nDCG@10", "ndcg@10", 3),
    ("Recall@10", "recall@10", 3),
    ("MRR@10", "mrr@10", 3),
    ("set P", "set_precision", 3),
    ("set R", "set_recall", 3),
    ("mean #", "mean_returned", 1),
    ("empty", "empty_share", 3),
    ("poor", "poor_share", 3),
    ("fallback", "fallback_share", 3),
    ("p50 ms", "p50_ms", 1),
    ("p95 ms", "p95_ms", 1),
)


def percent(value: float | None) -> str:
    """``value`` (a share) as a percentage, one decimal where it is not whole ("97.5%",
    "100%"): one question of 40 is 2.5%, not "2%"; "-" for None."""
    if value is None:
        return "-"
    return f"{100 * value:.1f}".removesuffix(".0") + "%"


def markdown_table(summary: Mapping[str, Mapping[str, Any]]) -> str:
    """One row per configuration; depth distribution as ``depth:count`` pairs."""
    header = ["config", *(c[0] for c in COLUMNS), "depths"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, row in summary.items():
        cells = [_cell(row.get(key), digits) for _, key, digits in COLUMNS]
        depths = " ".join(f"{d}:{n}" for d, n in row["depths"].items())
        lines.append("| " + " | ".join([name, *cells, depths]) + " |")
    return "\n".join(lines)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` whole or not at all (``ragbrain._util.write_text``): an interrupted run
    leaves the old file (or none), never a half-written one."""
    write_text(path, text)


def write_json(path: Path, payload: Any) -> None:
    """Atomic, indented, UTF-8 JSON."""
    write_atomic(path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")


def machine() -> dict[str, Any]:
    """What the numbers ran on: CPU model, core count, Python and key library versions."""
    import platform
    from importlib.metadata import version

    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        **{pkg: version(pkg) for pkg in ("chromadb", "langchain-chroma", "langgraph", "torch")},
    }
