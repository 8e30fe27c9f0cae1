"""Shared pieces of the speed benchmarks: synthetic stores, real queries, timing, results files."""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ragbrain.evaluation import machine, percentile, write_atomic, write_json
from ragbrain.paths import cache_root

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain import RetrievalContext, Store

RESULTS = Path(__file__).parent / "results"
DIMENSION = 384
#: Type shares of the synthetic chunks: common, mid-sized and rare types.
TYPE_SHARES = {"note": 0.4, "bug": 0.3, "decision": 0.2, "howto": 0.09, "lesson": 0.01}
WORDS = [
    "backup",
    "cache",
    "deploy",
    "redis",
    "postgres",
    "timeout",
    "migration",
    "alembic",
    "helm",
    "rollback",
    "worker",
    "queue",
    "celery",
    "invoice",
    "customer",
    "payment",
    "export",
    "latency",
    "index",
    "vacuum",
    "replica",
    "failover",
    "alert",
    "dashboard",
    "token",
    "rotation",
    "schema",
    "lock",
    "retry",
    "budget",
    "incident",
    "review",
    "release",
]

#: Folders of the scoped store's synthetic files, with the share of the files each holds (the
#: rest: misc).
PATH_SHARES = {
    "projects/alpha": 0.40,
    "projects/beta": 0.20,
    "ops": 0.10,
    "team/small": 0.05,
    "archive/rare": 0.01,
}
#: Tags of the scoped store, each drawn independently per file with this probability.
TAG_SHARES = {"common": 0.40, "medium": 0.10, "rare": 0.01}
CHUNKS_PER_FILE = 4
#: The scoped store's modification times are uniform over 2020-01-01 .. 2025-01-01 (UTC).
START, END = 1_577_836_800, 1_735_689_600

#: Real questions, embedded by the real model on every side of a comparison.
QUERIES = (
    "why did the nightly backup fail",
    "how do we roll back a helm release",
    "what caused the redis cache stampede after the deploy",
    "compare alembic migrations and raw sql scripts",
    "which timeout do reporting queries need",
    "duplicate payment reminder emails after a worker restart",
    "how to rotate the jwt signing key without logging everyone out",
    "memory leak in the pdf export worker",
    "difference between the staging and production deploy pipelines",
    "what did we decide about one database per service",
    "celery beat scheduled the nightly jobs twice",
    "csv export garbled non-ascii customer names in excel",
    "connection pool exhausted during month end reporting",
    "rate limiter blocked customers behind a shared nat",
    "flaky ci test caused by unordered set iteration",
    "liveness probe restarted every api pod",
    "how do we cache dashboard aggregates",
    "timezone bug in invoice due dates",
    "search missed customers with accented names",
    "why was the invoices table locked during a migration",
)


def say(text: str) -> None:
    """Progress on stderr, so stdout stays the result."""
    print(text, file=sys.stderr, flush=True)


def synthetic_store(size: int, embeddings: Embeddings, seed: int = 0) -> Store:
    """A cached store of ``size`` synthetic chunks: random unit vectors, word-salad texts,
    types drawn with ``TYPE_SHARES``. Built once per size under the cache folder."""
    import numpy

    from ragbrain import Store

    folder = cache_root() / "bench" / f"synthetic-{size}-seed{seed}"
    store = Store.open(folder, embeddings, create=True)
    if (folder / "complete.json").is_file():
        return store
    rng = random.Random(seed)
    types, weights = list(TYPE_SHARES), list(TYPE_SHARES.values())
    done = store.count()
    for start in range(done, size, 1000):
        ids = [f"chunk-{i}" for i in range(start, min(start + 1000, size))]
        block = numpy.random.default_rng(seed * 1_000_003 + start).standard_normal(
            (len(ids), DIMENSION)
        )
        vectors = (block / numpy.linalg.norm(block, axis=1, keepdims=True)).tolist()
        texts = [" ".join(rng.choices(WORDS, k=40)) for _ in ids]
        chosen = rng.choices(types, weights, k=len(ids))
        metadatas = [
            {"source": f"s{i // 4}.md", "root": "bench", "type": t, "chunk": 0, "title": ""}
            for i, t in zip(range(start, start + len(ids)), chosen, strict=True)
        ]
        store.upsert(ids, texts, metadatas, vectors)
        if (start // 1000) % 10 == 0:
            say(f"  synthetic store {size}: {start + len(ids)}/{size}")
    (folder / "complete.json").write_text(json.dumps({"chunks": size}), encoding="utf-8")
    return store


def scoped_store(size: int, embeddings: Embeddings, seed: int = 0) -> Store:
    """A store of ``size`` synthetic chunks (random unit vectors, word-salad texts), built once
    per size under the cache folder; files of ``CHUNKS_PER_FILE`` chunks share a folder
    (``PATH_SHARES``), tags (``TAG_SHARES``) and a modification time: the path, tag and date
    filters' store."""
    import numpy

    from ragbrain import Store

    folder = cache_root() / "bench" / f"scoped-{size}-seed{seed}"
    store = Store.open(folder, embeddings, create=True)
    if (folder / "complete.json").is_file():
        return store
    rng = random.Random(seed)
    folders = [*PATH_SHARES, "misc"]
    weights = [*PATH_SHARES.values(), 1 - sum(PATH_SHARES.values())]
    types, type_weights = list(TYPE_SHARES), list(TYPE_SHARES.values())
    files: dict[int, dict[str, object]] = {}
    for file in range(0, size // CHUNKS_PER_FILE + 1):
        tags = [tag for tag, share in TAG_SHARES.items() if rng.random() < share]
        files[file] = {
            "source": f"{rng.choices(folders, weights)[0]}/f{file}.md",
            "tags": ", ".join(tags),
            "modified": rng.randrange(START, END),
            "type": rng.choices(types, type_weights)[0],
        }
    done = store.count()
    for start in range(done, size, 1000):
        ids = [f"chunk-{i}" for i in range(start, min(start + 1000, size))]
        block = numpy.random.default_rng(seed * 1_000_003 + start).standard_normal(
            (len(ids), DIMENSION)
        )
        vectors = (block / numpy.linalg.norm(block, axis=1, keepdims=True)).tolist()
        texts = [" ".join(rng.choices(WORDS, k=40)) for _ in ids]
        metadatas = [
            {**files[i // CHUNKS_PER_FILE], "root": "bench", "chunk": i % CHUNKS_PER_FILE}
            for i in range(start, start + len(ids))
        ]
        store.upsert(ids, texts, metadatas, vectors)
        if (start // 1000) % 10 == 0:
            say(f"  scoped store {size}: {start + len(ids)}/{size}")
    (folder / "complete.json").write_text(json.dumps({"chunks": size}), encoding="utf-8")
    return store


def timed(function: Callable[[], object]) -> float:
    """Seconds one call takes."""
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def stats(seconds: Sequence[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds, and the count."""
    ms = [s * 1000 for s in seconds]
    return {"p50_ms": percentile(ms, 50), "p95_ms": percentile(ms, 95), "n": float(len(ms))}


def forget_queries(store: Store) -> None:
    """Empty the store's query-embedding cache so every side embeds each query afresh."""
    store.forget_queries()


def command_line() -> str:
    """The command this process runs, as ``python -m benchmarks.<module> ARGS`` (a subcommand
    entry point such as ``benchmarks.speed`` rewrites ``sys.argv``: the original line counts)."""
    original = sys.orig_argv
    if "-m" in original:
        return " ".join(["python", *original[original.index("-m") :]])
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    module = spec.name.removesuffix(".__main__") if spec else f"benchmarks.{Path(sys.argv[0]).stem}"
    return " ".join([f"python -m {module}", *sys.argv[1:]])


def save(name: str, payload: dict[str, Any], markdown: str) -> None:
    """Write ``results/<name>.json`` and ``.md`` atomically, with the machine they ran on."""
    payload = {**payload, "machine": machine(), "command": command_line()}
    write_json(RESULTS / f"{name}.json", payload)
    m = payload["machine"]
    footer = f"\nMachine: {m['cpu']}, {m['cores']} cores; command: `{payload['command']}`\n"
    write_atomic(RESULTS / f"{name}.md", markdown + footer)
    say(f"wrote {RESULTS / name}.json and .md")


class PlainPipeline(Protocol):
    """The pipeline's steps as one call: a query (and its context) in, documents out."""

    def __call__(self, query: str, context: RetrievalContext | None = None) -> list[Any]: ...


def without_langgraph(store: Store, critic: Any = None, lexical: Any = None) -> PlainPipeline:
    """The graph's five node functions called in order in plain Python, the router included:
    the pipeline's work without LangGraph, so a benchmark can say what LangGraph adds."""
    from langgraph.runtime import Runtime

    from ragbrain import RetrievalContext
    from ragbrain.nodes import Node
    from ragbrain.nodes.critic import make_critic_filter
    from ragbrain.nodes.depth import choose_depth
    from ragbrain.nodes.fallback import make_fallback_search
    from ragbrain.nodes.quality import GateSetting, make_assess_quality, route_after_gate
    from ragbrain.nodes.search import make_vector_search
    from ragbrain.settings import resolve

    fixed = resolve(store, critic, lexical=lexical, offtopic=None, handover=None)

    def settings() -> Any:
        return fixed

    gate = make_assess_quality(
        lambda: GateSetting(fixed.gate, fixed.gate_source, lexical=lexical is not None)
    )
    search = make_vector_search(store, lexical, settings)
    fallback = make_fallback_search(store, lexical, settings)
    judge = make_critic_filter(settings)

    def run(query: str, context: RetrievalContext | None = None) -> list[Any]:
        runtime = Runtime(context=context or RetrievalContext())
        state: Any = {"query": query, "type_filter": None, "notes": []}
        steps: list[Node] = [choose_depth, search, gate]
        for step in steps:
            update = step(state, runtime=runtime)
            state = {**state, **update, "notes": state["notes"] + update["notes"]}
        tail: list[Node] = [fallback, judge] if route_after_gate(state) == "widen" else [judge]
        for step in tail:
            update = step(state, runtime=runtime)
            state = {**state, **update, "notes": state["notes"] + update["notes"]}
        return list(state["documents"])

    return run
