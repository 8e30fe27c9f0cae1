"""`ragbrain eval`: a data set split through every configuration, and the type-filter scenario."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.context import RetrievalContext
from ragbrain.evaluation import plots
from ragbrain.evaluation.beir import Split, corpus_store, load_split
from ragbrain.evaluation.configs import NO_GATE, Config, select
from ragbrain.evaluation.report import machine, markdown_table, summarize, write_atomic, write_json
from ragbrain.evaluation.runner import Query, build_retrievers, run_all
from ragbrain.evaluation.typefilter import filtered_queries, recovery, subset, typed_store
from ragbrain.settings import store_gate

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from rich.console import Console

    from ragbrain.critic.base import Critic
    from ragbrain.store import Store

Progress = Callable[[int, int], None]
Reporter = Callable[[str], Callable[[int, int], None]]


@dataclass(frozen=True)
class EvalOptions:
    """What to run: the split, the configurations, the scenario and where results go."""

    split: str = "test"
    configs: list[str] | None = None
    limit: int | None = None
    type_scenario: bool = True
    n_types: int = 8
    wrong_share: float = 0.5
    seed: int = 0
    missing_answer: bool = False
    #: The folder of data sets whose test queries are off-topic questions (None: no scenario).
    offtopic_root: Path | None = None
    out: Path = Path("eval-results")


def eval_critic(folder: Path | None) -> Critic | None:
    """The critic to evaluate: ``folder`` when given, else the shipped default when it exists
    (``ShippedCritic``: the graph picks the one the store's model gets).

    Raises:
        CriticLoadError: The folder is not a loadable critic.
    """
    from ragbrain.critic import TransformerCritic, default_critic_path
    from ragbrain.critic.choice import ShippedCritic

    if folder is not None:
        return TransformerCritic(folder)
    return ShippedCritic() if default_critic_path().is_dir() else None


@contextmanager
def stage_reporter(console: Console) -> Iterator[Reporter]:
    """Yield ``reporter(label)``: each call closes the previous stage's bar and opens one."""
    from ragbrain._util import progress_reporter

    current: list[AbstractContextManager[Progress]] = []

    def close() -> None:
        while current:
            current.pop().__exit__(None, None, None)

    def reporter(label: str) -> Progress:
        close()
        manager = progress_reporter(console, label)
        callback = manager.__enter__()
        current.append(manager)
        return callback

    try:
        yield reporter
    finally:
        close()


def _queries(split: Split, limit: int | None) -> list[Query]:
    items = list(split.queries.items())[:limit]
    return [Query(qid, text) for qid, text in items]


def evaluate(
    folder: Path,
    options: EvalOptions,
    embeddings: Embeddings,
    critic: Critic | None,
    reporter: Reporter,
    *,
    base: RetrievalContext | None = None,
) -> dict[str, Any]:
    """Run the evaluation and write ``<name>-<split>.json``, ``.md`` and ``.png`` to ``out``.

    Args:
        folder: A BEIR-layout data set folder.
        options: What to run.
        embeddings: The embedding model (the cached store is keyed by its name).
        critic: The trained critic, or None (critic configurations are then skipped).
        reporter: ``reporter(label)`` returns a ``progress(done, total)`` callback.
        base: The context the configurations start from.

    Returns:
        The JSON payload that was written.

    Raises:
        DataSetError: A bad data folder (names the file and line).
    """
    split = load_split(folder, options.split)
    base = base or RetrievalContext()
    configs = select(options.configs, critic_available=critic is not None)
    store = corpus_store(split, embeddings, progress=reporter(f"embedding {split.name} corpus"))
    queries = _queries(split, options.limit)
    retrievers = build_retrievers(configs, store, critic, base)
    started = time.time()
    runs = run_all(queries, configs, retrievers, store, reporter(f"{len(configs)} configurations"))
    summary = summarize(runs, split.qrels)
    payload: dict[str, Any] = {
        "dataset": split.name,
        "split": split.split,
        "queries": len(queries),
        "corpus": len(split.corpus),
        "store": store.location,
        "gate_threshold": base.gate_threshold
        if base.gate_threshold is not None
        else store_gate(store)[0],
        "configs": {c.name: c.description for c in configs},
        "summary": summary,
        "seconds": round(time.time() - started, 1),
        "machine": machine(),
    }
    if options.type_scenario:
        payload["type_filter"] = type_scenario(
            split, store, queries, options, base=base, reporter=reporter
        )
    if options.missing_answer:
        from ragbrain.evaluation.missing_run import missing_answer_scenario

        payload["missing_answer"] = missing_answer_scenario(
            split,
            store,
            queries,
            configs,
            critic,
            base,
            seed=options.seed,
            progress=reporter("missing answer"),
        )
    if options.offtopic_root is not None:
        from ragbrain.evaluation.offtopic_run import offtopic_scenario

        payload["off_topic"] = offtopic_scenario(
            split,
            store,
            queries,
            configs,
            critic,
            base,
            data_root=options.offtopic_root,
            seed=options.seed,
            progress=reporter("off-topic"),
        )
    stem = options.out / f"{split.name}-{split.split}"
    write_json(stem.with_suffix(".json"), payload)
    write_atomic(stem.with_suffix(".md"), render_markdown(payload))
    plots.plot_eval(summary, f"{split.name} {split.split}", stem.with_suffix(".png"))
    return payload


SCENARIO = (
    Config("unfiltered", "no type filter (the recall to win back)", context={"k": 10}),
    Config("no-fallback", "type filter, gate off", context={"k": 10, "gate_threshold": NO_GATE}),
    Config("fallback", "type filter, gate + type-free fallback", context={"k": 10}),
)


def type_scenario(
    split: Split,
    store: Store,
    queries: list[Query],
    options: EvalOptions,
    *,
    base: RetrievalContext,
    reporter: Reporter,
) -> dict[str, Any]:
    """Recall@10 with wrong/right type filters, with and without the fallback (fixed depth 10)."""
    typed, types = typed_store(store, options.n_types, options.seed)
    wanted = {q.id for q in queries}
    filtered, wrong = filtered_queries(split, types, options.wrong_share, options.seed)
    filtered = [q for q in filtered if q.id in wanted]
    retrievers = build_retrievers(SCENARIO, typed, None, base)
    unfiltered_runs = run_all(queries, SCENARIO[:1], retrievers, typed)
    filtered_runs = run_all(filtered, SCENARIO[1:], retrievers, typed, reporter("type filters"))
    result: dict[str, Any] = {"types": options.n_types, "wrong_share": options.wrong_share}
    for group, ids, keep in (("wrong filter", wrong, True), ("right filter", wrong, False)):
        members = {q.id for q in subset(filtered, ids, keep)}
        if not members:
            continue
        rows = summarize(
            [r for r in unfiltered_runs + filtered_runs if r.query_id in members], split.qrels
        )
        recall = {name: rows[name]["recall@10"] for name in rows}
        result[group] = {
            "queries": len(members),
            "recall@10": recall,
            "poor_share": rows["fallback"]["poor_share"],
            "p50_ms": {name: rows[name]["p50_ms"] for name in rows},
            # Only a wrong filter loses recall for the fallback to win back.
            "recovered": recovery(recall["unfiltered"], recall["no-fallback"], recall["fallback"])
            if keep
            else None,
        }
    return result


def render_markdown(payload: dict[str, Any]) -> str:
    """The report as Markdown: the table, what each configuration is, the scenario."""
    lines = [
        f"# {payload['dataset']} / {payload['split']}: {payload['queries']} queries, "
        f"{payload['corpus']} documents, gate {payload['gate_threshold']}",
        "",
        markdown_table(payload["summary"]),
        "",
        *(f"- `{name}`: {text}" for name, text in payload["configs"].items()),
    ]
    scenario = payload.get("type_filter")
    if scenario:
        lines += ["", f"## Type filter ({scenario['types']} k-means topic types)", ""]
        lines += [
            "| queries | n | unfiltered R@10 | filter, no fallback | filter + fallback "
            "| poor share | recovered |",
            "|---|---|---|---|---|---|---|",
        ]
        for group in ("wrong filter", "right filter"):
            if group in scenario:
                g = scenario[group]
                r = g["recall@10"]
                rec = "-" if g["recovered"] is None else f"{g['recovered']:.1%}"
                lines.append(
                    f"| {group} | {g['queries']} | {r['unfiltered']:.3f} | {r['no-fallback']:.3f} "
                    f"| {r['fallback']:.3f} | {g['poor_share']:.3f} | {rec} |"
                )
    if "missing_answer" in payload:
        from ragbrain.evaluation.missing_run import render_missing

        lines += render_missing(payload["missing_answer"])
    if "off_topic" in payload:
        from ragbrain.evaluation.offtopic_run import render_offtopic

        lines += render_offtopic(payload["off_topic"])
    machine_ = payload["machine"]
    lines += [
        "",
        f"Machine: {machine_['cpu']}, {machine_['cores']} cores, Python {machine_['python']}.",
    ]
    return "\n".join(lines) + "\n"
