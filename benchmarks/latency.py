"""Query latency, side by side: LangChain's plain Chroma retriever vs the ragbrain pipeline.

Stores of 10k and 100k synthetic chunks (random unit vectors; the search cost does not depend on
what the vectors mean); every query is a real question embedded by the real model on every side,
with the store's query-embedding cache emptied before each call. Sides are interleaved query by
query, rotating which goes first, so drift on a shared machine hits them alike.

    python -m benchmarks.latency [--sizes 10000 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable

from benchmarks.common import (
    QUERIES,
    forget_queries,
    save,
    say,
    stats,
    synthetic_store,
    timed,
    without_langgraph,
)
from ragbrain.context import RetrievalContext
from ragbrain.evaluation.evaluate import eval_critic
from ragbrain.evaluation.runner import dense_retriever
from ragbrain.graph import build_graph
from ragbrain.models.embeddings import default_embeddings
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.store import Store


def sides(store: Store) -> dict[str, Callable[[str], object]]:
    """The retrievers to compare, as ``query -> documents`` calls through LangChain ``invoke``."""
    dense = dense_retriever(store)
    plain = build_graph(store, None, critic_off_reason="off in this benchmark")
    calls: dict[str, Callable[[str], object]] = {
        "langchain-chroma": dense.invoke,
        "ragbrain k=10, critic off": CorrectiveRetriever(
            graph=plain, context=RetrievalContext(k=10)
        ).invoke,
        "ragbrain adaptive, critic off": CorrectiveRetriever(graph=plain).invoke,
    }
    critic = eval_critic(None)
    if critic is not None:
        checked = build_graph(store, critic)
        calls["ragbrain adaptive, critic on"] = CorrectiveRetriever(graph=checked).invoke
        # The same five steps called in plain Python: what LangGraph itself adds.
        calls["five nodes without LangGraph, critic on"] = without_langgraph(store, critic)
    return calls


def measure(store: Store, rounds: int) -> dict[str, dict[str, float]]:
    """Interleaved timings of every side over ``rounds`` passes of the queries."""
    calls = sides(store)
    names = list(calls)
    for query in QUERIES[:3]:  # warm-up: load the model, open the index
        for name in names:
            calls[name](query)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for index in range(rounds * len(QUERIES)):
        query = QUERIES[index % len(QUERIES)]
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            forget_queries(store)
            seconds[name].append(timed(functools.partial(calls[name], query)))
    return {name: stats(values) for name, values in seconds.items()}


def main() -> None:
    """Run the benchmark and write results/latency.json and .md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    embeddings = default_embeddings()
    results: dict[str, dict[str, dict[str, float]]] = {}
    for size in args.sizes:
        store = synthetic_store(size, embeddings)
        say(f"measuring {size} chunks")
        results[str(size)] = measure(store, args.rounds)
    lines = [
        "| chunks | retriever | p50 ms | p95 ms | p50 / langchain-chroma |",
        "|---|---|---|---|---|",
    ]
    for size, rows in results.items():
        base = rows["langchain-chroma"]["p50_ms"]
        for name, row in rows.items():
            ratio = row["p50_ms"] / base
            cells = f"{row['p50_ms']:.1f} | {row['p95_ms']:.1f} | {ratio:.2f}x"
            lines.append(f"| {int(size):,} | {name} | {cells} |")
    for size, rows in results.items():
        graph, plain = (
            rows.get("ragbrain adaptive, critic on"),
            rows.get("five nodes without LangGraph, critic on"),
        )
        if graph and plain:
            added = graph["p50_ms"] / plain["p50_ms"] - 1
            lines.append(
                f"\n{int(size):,} chunks: the graph adds {added:+.1%} to the p50 query "
                "(critic on, real query embedding) over the same nodes called plainly."
            )
    table = "\n".join(lines)
    print(table)
    save(
        "latency",
        {"rounds": args.rounds, "queries": len(QUERIES), "results": results},
        table + "\n",
    )


if __name__ == "__main__":
    main()
