"""Server mode at scale: query p50/p95 and memory against store size, Chroma alone vs the pipeline.

python -m benchmarks.scale_server [SIZE ...]     (default: 100000 1000000; not in `make test`)
python -m benchmarks.scale_server --end-to-end [--rounds N] [SIZE ...]   (default: 5; 10000 100000)

At each size, builds (once, cached) an embedded store of synthetic 384-dimensional unit
vectors (MiniLM's size; search timing does not depend on what the vectors mean): the same
stores `benchmarks.latency` uses, filled in a separate process without HTTP, which is many
times faster than filling through a server. Then starts `chroma run` on a free loopback port
over that folder and times Chroma's own `collection.query` through HttpClient and the whole
ragbrain pipeline (critic off) on the same query vectors, interleaved. Query embedding is
excluded from both: the benchmark's query "model" looks the vector up, so the difference is
the pipeline's overhead. A third side, interleaved with them, calls the graph's own node
functions (the five steps, ``benchmarks.common.without_langgraph``) in plain Python: the same
work without LangGraph, which splits that overhead into ragbrain's code and LangGraph's
invocation.

``--end-to-end`` measures what a user feels instead: real questions embedded by the real model
on every call (the query cache emptied first) and the shipped critic on, the graph against the
same five nodes called plainly, so the ratio is what LangGraph adds to a whole query; the
retriever a user calls is timed beside them, its wrapper reported apart.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy
from langchain_core.embeddings import Embeddings

from benchmarks.common import (
    DIMENSION,
    forget_queries,
    say,
    stats,
    without_langgraph,
)
from benchmarks.common import (
    QUERIES as QUESTIONS,
)
from ragbrain import CorrectiveRetriever, RetrievalContext, Store, StorePolicy, build_graph
from ragbrain.evaluation import machine, write_atomic, write_json
from ragbrain.paths import cache_root
from tests.support.chroma_server import ChromaServer

RESULTS = Path(__file__).parent / "results"
QUERIES = 200
K = 10


class LookupEmbeddings(Embeddings):
    """Query "q17" -> the 17th precomputed vector; documents are never embedded here."""

    model_name = "synthetic-384"

    def __init__(self, vectors: numpy.ndarray[Any, Any]) -> None:
        self.vectors = vectors

    def embed_query(self, text: str) -> list[float]:
        index = int(text[1:]) if text.startswith("q") else 0
        return [float(x) for x in self.vectors[index % len(self.vectors)]]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]


def unit_vectors(rng: numpy.random.Generator, n: int) -> numpy.ndarray[Any, Any]:
    block = rng.standard_normal((n, DIMENSION)).astype(numpy.float32)
    normed: numpy.ndarray[Any, Any] = block / numpy.linalg.norm(block, axis=1, keepdims=True)
    return normed


def rss_mib(pid: int) -> float:
    """Resident memory of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def prefill(size: int) -> tuple[Path, float]:
    """The cached synthetic store of ``size`` chunks (built in a child process if missing), and
    the seconds building it took now (0 when it was already there)."""
    folder = cache_root() / "bench" / f"synthetic-{size}-seed0"
    if (folder / "complete.json").is_file():
        return folder, 0.0
    began = time.perf_counter()
    code = (
        "from benchmarks.common import synthetic_store\n"
        "from ragbrain.models.embeddings import default_embeddings\n"
        f"synthetic_store({size}, default_embeddings())\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    return folder, time.perf_counter() - began


def measure(store: Store, retriever: CorrectiveRetriever, queries: numpy.ndarray[Any, Any]) -> Any:
    """Chroma's query, the nodes without LangGraph and the pipeline on each query vector,
    rotating which goes first."""
    times: dict[str, list[float]] = {"chroma": [], "nodes": [], "pipeline": []}
    nodes, context = without_langgraph(store), RetrievalContext(k=K)
    for i, vector in enumerate(queries):

        def chroma(vector: Any = vector) -> None:
            store.collection.query(query_embeddings=[vector.tolist()], n_results=K)

        def plain(i: int = i) -> None:
            assert len(nodes(f"q{i}", context)) == K

        def pipeline(i: int = i) -> None:
            assert len(retriever.invoke(f"q{i}", k=K)) == K

        sides = [("chroma", chroma), ("nodes", plain), ("pipeline", pipeline)]
        for name, side in sides[i % 3 :] + sides[: i % 3]:
            started = time.perf_counter()
            side()
            times[name].append(time.perf_counter() - started)
    return {name: stats(seconds) for name, seconds in times.items()}


def main(sizes: list[int]) -> None:
    """Serve each size's store with `chroma run` in turn and time queries against it."""
    queries = unit_vectors(numpy.random.default_rng(1), QUERIES)
    embeddings = LookupEmbeddings(queries)
    rows: list[dict[str, Any]] = []
    for size in sorted(sizes):
        folder, fill_s = prefill(size)
        with tempfile.TemporaryDirectory(prefix="ragbrain-scale-") as tmp:
            began = time.perf_counter()
            server = ChromaServer(Path(tmp), db=folder).start()
            try:
                policy = StorePolicy(deadline=120.0, attempt_timeout=60.0)
                store = Store.open(None, embeddings, server=server.url, policy=policy)
                assert store.count() == size, f"{folder} holds {store.count()} chunks"
                retriever = CorrectiveRetriever(graph=build_graph(store))
                for i in range(20):  # load the index into the server and warm the connections
                    retriever.invoke(f"q{i}", k=K)
                ready_s = time.perf_counter() - began
                timed = measure(store, retriever, queries)
                raw, nodes, pipeline = timed["chroma"], timed["nodes"], timed["pipeline"]
                assert server.process is not None
                row = {
                    "chunks": size,
                    "fill_seconds": round(fill_s, 1),
                    "server_ready_seconds": round(ready_s, 1),
                    "chroma_ms": {"p50": round(raw["p50_ms"], 2), "p95": round(raw["p95_ms"], 2)},
                    "nodes_without_langgraph_ms": {
                        "p50": round(nodes["p50_ms"], 2),
                        "p95": round(nodes["p95_ms"], 2),
                    },
                    "pipeline_ms": {
                        "p50": round(pipeline["p50_ms"], 2),
                        "p95": round(pipeline["p95_ms"], 2),
                    },
                    "p50_ratio": round(pipeline["p50_ms"] / raw["p50_ms"], 3),
                    "nodes_p50_ratio": round(nodes["p50_ms"] / raw["p50_ms"], 3),
                    "server_rss_mib": round(rss_mib(server.process.pid), 1),
                    "client_rss_mib": round(rss_mib(os.getpid()), 1),
                }
                say(f"{size}: {row}")
                rows.append(row)
            finally:
                server.kill()
    payload = {"machine": machine(), "k": K, "queries": QUERIES, "dimension": DIMENSION}
    payload["rows"] = rows
    write_json(RESULTS / "scale_server.json", payload)
    lines = [
        "| chunks | fill s (embedded, 0 = cached) | server start + warm-up s "
        "| Chroma p50 / p95 ms | nodes without LangGraph p50 / p95 ms (ratio) "
        "| pipeline p50 / p95 ms | p50 ratio | server RSS MiB | client RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['chunks']:,} | {r['fill_seconds']} | {r['server_ready_seconds']} "
            f"| {r['chroma_ms']['p50']} / "
            f"{r['chroma_ms']['p95']} | {r['nodes_without_langgraph_ms']['p50']} / "
            f"{r['nodes_without_langgraph_ms']['p95']} ({r['nodes_p50_ratio']}) "
            f"| {r['pipeline_ms']['p50']} / {r['pipeline_ms']['p95']} "
            f"| {r['p50_ratio']} | {r['server_rss_mib']} | {r['client_rss_mib']} |"
        )
    write_atomic(RESULTS / "scale_server.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


def end_to_end(sizes: list[int], rounds: int = 5) -> None:
    """Over a server: what a user calls (the retriever), the compiled graph on its own and the
    same five nodes called plainly, real query embedding and the critic on every side,
    interleaved; writes results/graph_overhead_server.{json,md}.

    "The graph adds" compares the graph with the plain nodes; the retriever's own wrapper
    (LangChain's ``BaseRetriever.invoke``: its callback manager and input checks) is there with
    or without a graph, so it is reported apart, as the retriever against the graph."""
    from ragbrain.evaluation import eval_critic
    from ragbrain.models.embeddings import default_embeddings

    embeddings, critic = default_embeddings(), eval_critic(None)
    rows: list[dict[str, Any]] = []
    for size in sorted(sizes):
        folder, _ = prefill(size)
        with tempfile.TemporaryDirectory(prefix="ragbrain-scale-") as tmp:
            server = ChromaServer(Path(tmp), db=folder).start()
            try:
                policy = StorePolicy(deadline=120.0, attempt_timeout=60.0)
                store = Store.open(None, embeddings, server=server.url, policy=policy)
                graph = build_graph(store, critic)
                context = RetrievalContext()

                def compiled(question: str, graph: Any = graph, context: Any = context) -> Any:
                    return graph.invoke({"query": question, "type_filter": None}, context=context)

                sides: list[tuple[str, Callable[[str], Any]]] = [
                    ("retriever", CorrectiveRetriever(graph=graph).invoke),
                    ("graph", compiled),
                    ("nodes", without_langgraph(store, critic)),
                ]
                for question in QUESTIONS[:5]:  # warm the model, the server, the critic
                    for _, side in sides:
                        side(question)
                times: dict[str, list[float]] = {name: [] for name, _ in sides}
                for i in range(rounds * len(QUESTIONS)):
                    question = QUESTIONS[i % len(QUESTIONS)]
                    turn = i % len(sides)
                    for name, side in sides[turn:] + sides[:turn]:
                        forget_queries(store)
                        started = time.perf_counter()
                        side(question)
                        times[name].append(time.perf_counter() - started)
                p = {name: stats(seconds) for name, seconds in times.items()}
                row: dict[str, Any] = {"chunks": size}
                for name in times:
                    row[f"{name}_ms"] = {
                        "p50": round(p[name]["p50_ms"], 2),
                        "p95": round(p[name]["p95_ms"], 2),
                    }
                row["graph_adds"] = round(p["graph"]["p50_ms"] / p["nodes"]["p50_ms"] - 1, 4)
                row["graph_adds_ms"] = round(p["graph"]["p50_ms"] - p["nodes"]["p50_ms"], 2)
                row["retriever_adds"] = round(
                    p["retriever"]["p50_ms"] / p["graph"]["p50_ms"] - 1, 4
                )
                say(f"{size}: {row}")
                rows.append(row)
            finally:
                server.kill()
    write_json(
        RESULTS / "graph_overhead_server.json",
        {"machine": machine(), "rounds": rounds, "queries": len(QUESTIONS), "rows": rows},
    )
    lines = [
        "| chunks (server) | retriever p50 / p95 ms | graph p50 / p95 ms "
        "| five nodes called plainly p50 / p95 ms | the graph adds (p50) "
        "| the retriever's wrapper adds (p50) |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['chunks']:,} | {r['retriever_ms']['p50']} / {r['retriever_ms']['p95']} "
        f"| {r['graph_ms']['p50']} / {r['graph_ms']['p95']} "
        f"| {r['nodes_ms']['p50']} / {r['nodes_ms']['p95']} "
        f"| {r['graph_adds']:+.1%} ({r['graph_adds_ms']:+.2f} ms) | {r['retriever_adds']:+.1%} |"
        for r in rows
    ]
    lines += ["", f"Command: `python -m benchmarks.scale_server {' '.join(sys.argv[1:])}`"]
    write_atomic(RESULTS / "graph_overhead_server.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


def _arguments() -> argparse.Namespace:
    """The sizes, and whether to measure end to end (with its rounds)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "sizes",
        type=int,
        nargs="*",
        help="Store sizes in chunks (default: 100000 1000000; with --end-to-end: 10000 100000).",
    )
    parser.add_argument(
        "--end-to-end",
        action="store_true",
        help="Real query embeddings and the shipped critic: what LangGraph adds to a query.",
    )
    parser.add_argument("--rounds", type=int, default=5, help="Passes (with --end-to-end).")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _arguments()
    if arguments.end_to_end:
        end_to_end(arguments.sizes or [10_000, 100_000], arguments.rounds)
    else:
        main(arguments.sizes or [100_000, 1_000_000])
