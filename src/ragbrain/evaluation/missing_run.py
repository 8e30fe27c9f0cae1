"""Running the missing-answer scenario (``ragbrain eval --scenario missing-answer``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragbrain.evaluation.configs import DENSE_K
from ragbrain.evaluation.missing import (
    BASELINE_GATE,
    gate_refuses,
    pruned_store,
    refusal_stats,
    split_missing,
)
from ragbrain.evaluation.report import summarize
from ragbrain.evaluation.runner import build_retrievers, run_all

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from ragbrain.context import RetrievalContext
    from ragbrain.critic.base import Critic
    from ragbrain.evaluation.beir import Split
    from ragbrain.evaluation.configs import Config
    from ragbrain.evaluation.runner import Query
    from ragbrain.store import Store


def missing_answer_scenario(
    split: Split,
    store: Store,
    queries: Sequence[Query],
    configs: Sequence[Config],
    critic: Critic | None,
    base: RetrievalContext,
    *,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Every configuration over a copy of ``store`` from which a seeded half of ``queries``
    lost every relevant document, and the plain distance gate at ``BASELINE_GATE``.

    Returns:
        Per configuration the refusal figures (``refusal_stats``) and, on the answerable half,
        the retrieval summary; the same refusal figures for the baseline gate.
    """
    scenario = split_missing(split.qrels, [q.id for q in queries], seed=seed)
    pruned = pruned_store(store, scenario)
    retrievers = build_retrievers(configs, pruned, critic, base)
    runs = run_all(queries, configs, retrievers, pruned, progress)
    result: dict[str, Any] = {
        "seed": seed,
        "unanswerable": len(scenario.unanswerable),
        "answerable": len(scenario.answerable),
        "removed_documents": len(scenario.removed),
        "configs": {},
    }
    answerable_runs = [r for r in runs if r.query_id in scenario.answerable]
    summary = summarize(answerable_runs, split.qrels)
    for config in configs:
        returned = {r.query_id: r.returned for r in runs if r.config == config.name}
        result["configs"][config.name] = {
            **refusal_stats(returned, scenario).as_dict(),
            "answerable_ndcg@10": summary.get(config.name, {}).get("ndcg@10"),
        }
    baseline: dict[str, list[str]] = {}  # dense top 10, or nothing when the gate refuses
    for query in queries:
        hits = pruned.search(query.text, DENSE_K)
        best = hits[0]["distance"] if hits else None
        baseline[query.id] = [] if gate_refuses(best, BASELINE_GATE) else [h["id"] for h in hits]
    result["baseline_gate"] = {
        "threshold": BASELINE_GATE,
        **refusal_stats(baseline, scenario).as_dict(),
    }
    return result


def render_missing(scenario: dict[str, Any]) -> list[str]:
    """The scenario's Markdown lines: one row per configuration, then the baseline gate."""

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:.1%}"

    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    lines = [
        "",
        f"## Missing answer ({scenario['unanswerable']} answerless queries, "
        f"{scenario['answerable']} answerable, {scenario['removed_documents']} documents "
        f"removed, seed {scenario['seed']})",
        "",
        "| config | refusal recall | false refusal | chunks when answerless | chunks when "
        "answerable |",
        "|---|---|---|---|---|",
    ]
    gate = scenario["baseline_gate"]
    rows = {**scenario["configs"], f"dense top 10, gate {gate['threshold']} alone": gate}
    for name, row in rows.items():
        lines.append(
            f"| {name} | {pct(row['refusal_recall'])} | {pct(row['false_refusal'])} | "
            f"{num(row['chunks_when_unanswerable'])} | {num(row['chunks_when_answerable'])} |"
        )
    return lines
