"""Server mode at scale: query p50/p95 and memory against store size, Chroma alone vs the pipeline.

python -m benchmarks.scale_server [SIZE ...]     (default: 100000 1000000; not in `make test`)

Starts `chroma run` on a free loopback port, fills it with synthetic 384-dimensional unit
vectors (MiniLM's size; search timing does not depend on what the vectors mean), then times,
at each size, Chroma's own `collection.query` through HttpClient and the whole ragbrain
pipeline (critic off) on the same query vectors. Query embedding is excluded from both: the
benchmark's query "model" looks the vector up, so the difference is the pipeline's overhead.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy
from langchain_core.embeddings import Embeddings

from benchmarks.common import DIMENSION, say, stats
from ragbrain import CorrectiveRetriever, StorePolicy, build_graph
from ragbrain.evaluation.report import machine, write_atomic, write_json
from ragbrain.store import Store
from tests.chroma_server import ChromaServer

RESULTS = Path(__file__).parent / "results"
QUERIES = 200
K = 10
BATCH = 1000
TYPES = ["note", "bug", "decision", "howto", "lesson"]


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


def fill(store: Store, start: int, end: int, rng: numpy.random.Generator) -> None:
    for first in range(start, end, BATCH):
        last = min(first + BATCH, end)
        ids = [f"chunk-{i}" for i in range(first, last)]
        metadatas = [
            {"source": f"s{i}.md", "root": "bench", "type": TYPES[i % 5], "chunk": 0, "title": ""}
            for i in range(first, last)
        ]
        store.upsert(
            ids, [f"chunk {i}" for i in ids], metadatas, unit_vectors(rng, len(ids)).tolist()
        )
        if (first // BATCH) % 20 == 0:
            say(f"  filled {last}/{end}")


def measure(store: Store, retriever: CorrectiveRetriever, queries: numpy.ndarray[Any, Any]) -> Any:
    raw, pipeline = [], []
    for i, vector in enumerate(queries):
        start = time.perf_counter()
        store.collection.query(query_embeddings=[vector.tolist()], n_results=K)
        raw.append(time.perf_counter() - start)
        start = time.perf_counter()
        docs = retriever.invoke(f"q{i}", k=K)
        pipeline.append(time.perf_counter() - start)
        assert len(docs) == K
    return stats(raw), stats(pipeline)


def main(sizes: list[int]) -> None:
    """Fill one server up to each size in turn and time queries at each."""
    rng = numpy.random.default_rng(0)
    queries = unit_vectors(numpy.random.default_rng(1), QUERIES)
    embeddings = LookupEmbeddings(queries)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ragbrain-scale-") as tmp:
        server = ChromaServer(Path(tmp)).start()
        try:
            policy = StorePolicy(deadline=120.0, attempt_timeout=60.0)
            store = Store.open(None, embeddings, create=True, server=server.url, policy=policy)
            retriever = CorrectiveRetriever(graph=build_graph(store))
            filled = 0
            for size in sorted(sizes):
                began = time.perf_counter()
                fill(store, filled, size, rng)
                filled = size
                fill_s = time.perf_counter() - began
                for i in range(20):  # warm the index and the connections
                    retriever.invoke(f"q{i}", k=K)
                raw, pipeline = measure(store, retriever, queries)
                assert server.process is not None
                row = {
                    "chunks": size,
                    "fill_seconds": round(fill_s, 1),
                    "chroma_ms": {"p50": round(raw["p50_ms"], 2), "p95": round(raw["p95_ms"], 2)},
                    "pipeline_ms": {
                        "p50": round(pipeline["p50_ms"], 2),
                        "p95": round(pipeline["p95_ms"], 2),
                    },
                    "p50_ratio": round(pipeline["p50_ms"] / raw["p50_ms"], 3),
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
        "| chunks | fill s | Chroma p50 / p95 ms | pipeline p50 / p95 ms | p50 ratio "
        "| server RSS MiB | client RSS MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['chunks']:,} | {r['fill_seconds']} | {r['chroma_ms']['p50']} / "
            f"{r['chroma_ms']['p95']} | {r['pipeline_ms']['p50']} / {r['pipeline_ms']['p95']} "
            f"| {r['p50_ratio']} | {r['server_rss_mib']} | {r['client_rss_mib']} |"
        )
    write_atomic(RESULTS / "scale_server.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1:]] or [100_000, 1_000_000])
