"""What LangGraph itself costs a run of ragbrain's graph shape, apart from any node's work.

A graph of the pipeline's shape and schemas (``RetrievalState``, its input, output and
context schemas; five nodes, the gate's conditional edge, four supersteps on the path taken)
whose nodes all do the same small job, against the same node function called four times in
plain Python, interleaved. Two kinds of node: *busy* (a few milliseconds of numpy, as
embedding and the critic are) and *blocking* (the same plus a 3 ms sleep, as a search waits
on a Chroma server's socket). The difference of the medians is LangGraph's cost per run.

    python -m benchmarks.graph_cost [--runs 400]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from benchmarks.common import save
from ragbrain.context import RetrievalContext
from ragbrain.state import RetrievalInput, RetrievalOutput, RetrievalState

MATRIX = np.random.default_rng(0).random((300, 300), dtype=np.float32)
SLEEP = 0.003
STEPS = 4  # choose_depth, vector_search, assess_quality, critic_filter


def make_node(sleep: bool) -> Callable[..., dict[str, Any]]:
    """A node that multiplies a matrix three times (and sleeps first when ``sleep``)."""

    def node(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        if sleep:
            time.sleep(SLEEP)
        for _ in range(3):
            MATRIX @ MATRIX
        return {"notes": ["step"], "depth": 3}

    return node


def shaped_graph(node: Callable[..., dict[str, Any]]) -> Any:
    """The pipeline's shape and schemas with ``node`` in every place."""
    builder: StateGraph[Any, RetrievalContext, RetrievalInput, RetrievalOutput] = StateGraph(
        RetrievalState,
        context_schema=RetrievalContext,
        input_schema=RetrievalInput,
        output_schema=RetrievalOutput,
    )
    names = ("choose_depth", "vector_search", "assess_quality", "fallback_search", "critic")
    for name in names:
        builder.add_node(name, node)
    builder.add_edge(START, "choose_depth")
    builder.add_edge("choose_depth", "vector_search")
    builder.add_edge("vector_search", "assess_quality")
    builder.add_conditional_edges(
        "assess_quality", lambda _: "judge", {"widen": "fallback_search", "judge": "critic"}
    )
    builder.add_edge("fallback_search", "critic")
    builder.add_edge("critic", END)
    return builder.compile()


def measure(sleep: bool, runs: int) -> dict[str, float]:
    """Median ms of the graph and of the plain calls, and their difference."""
    node = make_node(sleep)
    graph, context = shaped_graph(node), RetrievalContext()
    runtime = Runtime(context=context)

    def plain() -> None:
        state: Any = {"query": "q", "type_filter": None, "notes": []}
        for _ in range(STEPS):
            update = node(state, runtime)
            state = {**state, **update, "notes": state["notes"] + update["notes"]}

    def compiled() -> None:
        graph.invoke({"query": "q", "type_filter": None}, context=context)

    times: dict[str, list[float]] = {"graph": [], "plain": []}
    sides = [("graph", compiled), ("plain", plain)]
    for i in range(runs + 50):
        for name, side in sides[i % 2 :] + sides[: i % 2]:
            started = time.perf_counter()
            side()
            if i >= 50:  # the first runs warm both up
                times[name].append(time.perf_counter() - started)
    graph_ms = 1000 * statistics.median(times["graph"])
    plain_ms = 1000 * statistics.median(times["plain"])
    return {
        "graph_ms": round(graph_ms, 3),
        "plain_ms": round(plain_ms, 3),
        "langgraph_ms": round(graph_ms - plain_ms, 3),
    }


def main() -> None:
    """Measure both kinds of node; write results/graph_cost.{json,md}."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    args = parser.parse_args()
    rows = {"busy": measure(False, args.runs), "blocking": measure(True, args.runs)}
    lines = [
        "| nodes | graph p50 ms | the same nodes called plainly p50 ms "
        "| LangGraph's cost per run |",
        "|---|---:|---:|---:|",
    ]
    for kind, row in rows.items():
        lines.append(
            f"| {kind} | {row['graph_ms']} | {row['plain_ms']} | {row['langgraph_ms']} ms |"
        )
    print("\n".join(lines))
    save("graph_cost", {"runs": args.runs, "rows": rows}, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
