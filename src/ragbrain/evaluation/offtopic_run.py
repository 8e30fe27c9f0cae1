"""Running the off-topic scenario (``ragbrain eval --scenario off-topic``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ragbrain.evaluation.lodo import data_sets
from ragbrain.evaluation.offtopic import (
    judged_queries,
    offtopic_questions,
    offtopic_sources,
    offtopic_stats,
)
from ragbrain.evaluation.runner import build_retrievers
from ragbrain.retriever import CorrectiveRetriever

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from ragbrain.context import RetrievalContext
    from ragbrain.critic.base import Critic
    from ragbrain.evaluation.beir import Split
    from ragbrain.evaluation.configs import Config
    from ragbrain.evaluation.runner import Query
    from ragbrain.store import Store


def offtopic_scenario(
    split: Split,
    store: Store,
    queries: Sequence[Query],
    configs: Sequence[Config],
    critic: Critic | None,
    base: RetrievalContext,
    *,
    data_root: Path,
    per_set: int = 100,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Every ragbrain configuration asked the other data sets' test queries (``per_set`` a
    set, seeded; related sets left out) and the evaluation bank, beside ``queries``.

    Returns:
        Per configuration the share of off-topic questions refused (an empty answer), by
        origin too, and the share of ``queries`` refused.
    """
    found = data_sets(data_root)
    sources = offtopic_sources(split.name, sorted(found))
    questions = offtopic_questions(
        split.name, {n: judged_queries(found[n]) for n in sources}, per_set=per_set, seed=seed
    )
    chosen = [c for c in configs if c.kind == "ragbrain"]
    retrievers = build_retrievers(chosen, store, critic, base)
    total = len(chosen) * (len(questions) + len(queries))
    done = 0
    result: dict[str, Any] = {"sources": sources, "per_set": per_set, "configs": {}}
    for config in chosen:
        retriever = retrievers[config.name]
        assert isinstance(retriever, CorrectiveRetriever)

        def refused(text: str, retriever: CorrectiveRetriever = retriever) -> bool:
            nonlocal done
            output = retriever.run(text)
            done += 1
            if progress is not None:
                progress(done, total)
            return not output["documents"]

        off = {q: refused(q.text) for q in questions}
        own = {q.id: refused(q.text) for q in queries}
        stats = offtopic_stats(off, own)
        result["configs"][config.name] = {
            "refused": stats.refused,
            "refused_by_origin": stats.refused_by_origin,
            "false_refusal": stats.false_refusal,
            "offtopic": stats.offtopic,
            "answerable": stats.answerable,
        }
    return result


def render_offtopic(scenario: dict[str, Any]) -> list[str]:
    """The scenario's Markdown lines: one row per configuration."""
    lines = [
        "",
        f"## Off-topic questions (the test queries of {', '.join(scenario['sources'])}, "
        f"{scenario['per_set']} a set, and the evaluation bank)",
        "",
        "| config | off-topic refused | by origin | answerable refused |",
        "|---|---|---|---|",
    ]
    for name, row in scenario["configs"].items():
        origins = ", ".join(f"{o} {v:.0%}" for o, v in row["refused_by_origin"].items())
        lines.append(
            f"| {name} | {row['refused']:.1%} of {row['offtopic']} | {origins} | "
            f"{row['false_refusal']:.1%} of {row['answerable']} |"
        )
    return lines
