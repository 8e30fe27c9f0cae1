"""Query latency: the pipeline against LangChain's Chroma retriever, hybrid search, LangGraph,
and a cold `ragbrain query`.

Four measurements, one subcommand each:

- ``pipeline``: LangChain's plain Chroma retriever vs the ragbrain pipeline on stores of 10k
  and 100k synthetic chunks (random unit vectors; the search cost does not depend on what the
  vectors mean); every query is a real question embedded by the real model on every side,
  with the store's query-embedding cache emptied before each call. Sides are interleaved query
  by query, rotating which goes first, so drift on a shared machine hits them alike. Results:
  ``results/latency.*``.
- ``hybrid``: what hybrid search costs: lexical index build/update/load times and the query
  latency it adds over dense search, on the synthetic 100k-chunk store. The synthetic texts
  are word salad over a 33-word vocabulary, so every query term matches most chunks: a
  pessimistic case for BM25 (real notes have far sparser terms). Results:
  ``results/hybrid_latency.*``.
- ``graph``: what LangGraph itself costs a run of ragbrain's graph shape, apart from any
  node's work. A graph of the pipeline's shape and schemas (``RetrievalState``, its input,
  output and context schemas; five nodes, the gate's conditional edge, four supersteps on the
  path taken) whose nodes all do the same small job, against the same node function called
  four times in plain Python, interleaved. Two kinds of node: *busy* (a few milliseconds of
  numpy, as embedding and the critic are) and *blocking* (the same plus a 3 ms sleep, as a
  search waits on a Chroma server's socket). The difference of the medians is LangGraph's cost
  per run. Results: ``results/graph_cost.*``.
- ``cold``: CLI process time, side by side: bad input and a cold `ragbrain query`, this tree vs
  a baseline. Each command runs as a fresh process (`python -c "from ragbrain.cli import app;
  app()" ...`) with PYTHONPATH set to one source tree or the other: this checkout's `src/`, and
  the baseline revision's `src/` unpacked from git (`git archive`). Runs alternate between the
  trees, rotating which goes first, so drift on a shared machine hits both alike. Reported:
  median and p90 of the wall time, and the median CPU time (user + sys of the child, which
  other load on the machine inflates less). The store is the bundled sample notes (56 notes,
  156 chunks), ingested once and copied for each tree, which then runs one untimed query on
  its copy: a tree whose lexical index format differs from the other's would otherwise
  rebuild the index on every run. Also printed: where a cold query's time goes in this tree
  and in the baseline (timers around the imports and loads, in one process each). Results:
  ``results/cold_start.*``.

    python -m benchmarks.latency pipeline [--sizes 10000 100000] [--rounds 5]
    python -m benchmarks.latency hybrid [--size 100000] [--rounds 5] [--keep-index]
    python -m benchmarks.latency graph [--runs 400]
    python -m benchmarks.latency cold [--rounds 5] [--baseline-rev main]
    python -m benchmarks.latency follow [--sizes 10000] [--rounds 5] [--reopens 30]
    python -m benchmarks.latency long [--rounds 7]

- ``long``: what a long question costs: the whole retriever (``from_store`` over the bundled
  sample notes, the critic on) on questions of 100 and 10,000 characters (the longest a run
  searches), each round a question not asked before, English and a mix of Japanese, Thai
  and Chinese. The store embeds each question first (its query cache keeps it), then the run
  is timed: ragbrain's own time, apart from the embedding. Sides interleaved. Reported:
  medians of both, the own times' ratio, and the whole 10,000-character question against
  1.2x the short one's own time plus its own embedding (<= 1 meets the target). Results:
  ``results/long_question.*``.

- ``follow``: what following other processes costs a long-lived store (``Store.follow``), as
  ratios to a plain query on the same store: the check when nothing changed (a stat; timed
  over 1,000 calls), the check after another client only opened the folder (a stat and one
  read-only SQLite query), and the reopen after another writer's one-chunk write together
  with the first search on the fresh client (which loads the HNSW segment from disk). The
  plain query is a dense search for k=10 with the query vector cached, and the whole pipeline
  (critic off, cached vector) beside it. The store is a copy of the synthetic store; the
  other writer is a second ``Store`` on the same folder in the same process, which opens its
  own Chroma client as another process would. Then resident memory before and after 30 more
  reopens. Results: ``results/follow_cost.*``.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import Any

import numpy as np
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

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
from ragbrain import CorrectiveRetriever, RetrievalContext, Store, build_graph
from ragbrain.evaluation import dense_retriever, eval_critic
from ragbrain.hybrid import hybrid_search
from ragbrain.lexical.index import LexicalIndex
from ragbrain.models.embeddings import default_embeddings
from ragbrain.query.inputs import MAX_QUERY_CHARS
from ragbrain.state import RetrievalInput, RetrievalOutput, RetrievalState
from ragbrain.store.lexical import index_path, sync_lexical

# --- pipeline: ragbrain against LangChain's Chroma retriever --------------------------------


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


def pipeline(args: argparse.Namespace) -> None:
    """Run the pipeline comparison and write results/latency.json and .md."""
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


# --- hybrid: what BM25 and the fusion add over dense search ---------------------------------


def hybrid(args: argparse.Namespace) -> None:
    """Measure hybrid search's cost and write ``results/hybrid_latency.{json,md}``."""
    store = synthetic_store(args.size, default_embeddings())
    path = index_path(store)
    if not args.keep_index:
        path.unlink(missing_ok=True)
    started = time.perf_counter()
    index = sync_lexical(store)
    build_s = time.perf_counter() - started
    built = (
        "open (load + staleness check)"
        if args.keep_index
        else "full build (read, tokenize, index, save)"
    )
    say(f"{built}: {build_s:.1f} s")
    load_s = timed(lambda: LexicalIndex.load(path))
    say(f"load: {load_s:.2f} s")
    fingerprint_s = timed(store.all_ids)
    rebuild_s = timed(lambda: index.updated({index.ids[0]}, ["x"], ["backup alert"], ["bug"]))
    say(f"rebuild from kept terms (one chunk changed): {rebuild_s:.2f} s")
    dense_ms: list[float] = []
    hybrid_ms: list[float] = []
    bm25_ms: list[float] = []
    bm25s_ms: list[float] = []  # bm25s's scorer alone, without tokenizing and top-k
    for query in QUERIES[:3]:  # warm-up
        store.search(query, 10)
        hybrid_search(store, index, query, 10)
    for round_ in range(args.rounds):
        for i, query in enumerate(QUERIES):
            forget_queries(store)
            store.embed_query(query)  # both sides get the embedding for free: we time search
            pair: list[tuple[list[float], Callable[[], object]]] = [
                (dense_ms, functools.partial(store.search, query, 10)),
                (hybrid_ms, functools.partial(hybrid_search, store, index, query, 10)),
            ]
            for sink, call in pair if (i + round_) % 2 else pair[::-1]:
                sink.append(timed(call))
            bm25_ms.append(timed(functools.partial(index.search, query, 30)))
            terms = index.query_terms(query)
            bm25s_ms.append(timed(functools.partial(index.scores, terms)))
    dense, fused, bm25 = stats(dense_ms), stats(hybrid_ms), stats(bm25_ms)
    bm25s_scorer = stats(bm25s_ms)
    payload = {
        "size": args.size,
        "build_s" if not args.keep_index else "open_s": round(build_s, 2),
        "load_s": round(load_s, 3),
        "list_ids_s": round(fingerprint_s, 3),
        "rebuild_from_terms_s": round(rebuild_s, 2),
        "dense_search_ms": dense,
        "hybrid_search_ms": fused,
        "bm25_only_ms": bm25,
        "bm25s_get_scores_ms": bm25s_scorer,
        "added_p50_ms": round(fused["p50_ms"] - dense["p50_ms"], 2),
    }
    markdown = "\n".join(
        [
            f"# Hybrid search cost, {args.size} synthetic chunks",
            "",
            "| what | time |",
            "|---|---|",
            f"| {built} | {build_s:.1f} s |",
            f"| rebuild from kept terms after a change | {rebuild_s:.2f} s |",
            f"| load from disk | {load_s:.2f} s |",
            f"| list the store's ids (staleness check) | {fingerprint_s:.2f} s |",
            f"| dense search k=10, p50 | {dense['p50_ms']:.1f} ms |",
            f"| hybrid search k=10, p50 | {fused['p50_ms']:.1f} ms |",
            f"| BM25 alone top 30, p50 | {bm25['p50_ms']:.1f} ms |",
            f"| (of which bm25s's scorer, p50) | {bm25s_scorer['p50_ms']:.1f} ms |",
            f"| **added by hybrid, p50** | **{payload['added_p50_ms']:.1f} ms** |",
            "",
        ]
    )
    save("hybrid_latency", payload, markdown)
    say(markdown)


# --- graph: LangGraph's own cost per run -----------------------------------------------------

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


def measure_graph(sleep: bool, runs: int) -> dict[str, float]:
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
    pair = [("graph", compiled), ("plain", plain)]
    for i in range(runs + 50):
        for name, side in pair[i % 2 :] + pair[: i % 2]:
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


def graph_cost(args: argparse.Namespace) -> None:
    """Measure both kinds of node; write results/graph_cost.{json,md}."""
    rows = {"busy": measure_graph(False, args.runs), "blocking": measure_graph(True, args.runs)}
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


# --- cold: a fresh CLI process, this tree against a baseline revision ------------------------

ROOT = Path(__file__).resolve().parent.parent
RUN = "import sys; from ragbrain.cli import app; sys.argv[0] = 'ragbrain'; app()"
QUERY = "why did the nightly backup fail?"
STAGES = """
import sys, time
t0 = time.perf_counter(); out = {}
def mark(name):
    global t0
    now = time.perf_counter(); out[name] = now - t0; t0 = now
import ragbrain.cli; mark("import ragbrain.cli")
from ragbrain.retriever import CorrectiveRetriever; mark("import the retriever")
try:
    from ragbrain.models.embeddings import default_embeddings
except ImportError:  # a baseline tree from before the models/ package
    from ragbrain.embeddings import default_embeddings
embeddings = default_embeddings(); embeddings.embed_query("x"); mark("embedding model")
from ragbrain import Store
store = Store.open(sys.argv[1], embeddings); mark("Store.open (Chroma)")
from ragbrain.factory import resolve_critic
critic, _ = resolve_critic("default"); mark("critic")
from ragbrain.store.lexical import LexicalSearcher
lexical = LexicalSearcher(store); mark("lexical index")
from ragbrain import build_graph
retriever = CorrectiveRetriever(graph=build_graph(store, critic, lexical=lexical))
mark("build the graph")
retriever.run(sys.argv[2]); mark("first query")
print(repr(out))
"""


def cold_cases(store: Path, scratch: Path) -> dict[str, list[str]]:
    """The commands timed, by name."""
    return {
        "empty query": ["query", "", "--store", str(store)],
        "bad --k": ["query", "redis", "--k", "0", "--store", str(store)],
        "missing store": ["query", "redis", "--store", str(scratch / "missing")],
        "missing notes folder": ["ingest", str(scratch / "notthere"), "--store", "{new}"],
        "query (cold start)": ["query", QUERY, "--store", str(store)],
    }


def baseline_tree(rev: str, into: Path) -> tuple[Path, str]:
    """The ``src/`` of ``rev`` unpacked under ``into``, and the commit it resolves to."""
    sha = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", rev], capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", sha, "src"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src", sha


def run_once(src: Path, args: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds (user + sys), exit code and stderr tail of one process."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RUN, *args], capture_output=True, text=True, env=env, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tail = (done.stderr.strip().splitlines() or [""])[-1][:160]
    return wall, cpu, done.returncode, tail


def import_chromadb() -> float:
    """Wall seconds of ``python -c "import chromadb"``: the floor a cold query is held to."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import chromadb"], check=True)
    return time.perf_counter() - started


def stages(src: Path, store: Path) -> dict[str, float]:
    """Where a cold query's time goes in the tree at ``src`` (one process)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run(
        [sys.executable, "-c", STAGES, str(store), QUERY],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    import ast

    parsed: dict[str, float] = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    return parsed


def cold(options: argparse.Namespace) -> None:
    """Time the CLI commands in both trees; write results/cold_start.{json,md}."""
    with tempfile.TemporaryDirectory(prefix="ragbrain-cold-") as tmp:
        scratch = Path(tmp)
        base_src, sha = baseline_tree(options.baseline_rev, scratch / "baseline")
        trees = {"baseline": base_src, "this tree": ROOT / "src"}
        store = scratch / "store"
        say("ingesting the sample notes")
        wall, _, code, tail = run_once(
            ROOT / "src",
            [
                "ingest",
                str(ROOT / "src/ragbrain/sample_notes"),
                "--store",
                str(store),
                "--embedding",
                "minilm",
            ],
        )
        if code:
            raise SystemExit(f"ingest failed: {tail}")
        stores = {tree: scratch / f"store-{tree.replace(' ', '-')}" for tree in trees}
        for tree, copy in stores.items():
            shutil.copytree(store, copy)
            _, _, code, tail = run_once(trees[tree], ["query", QUERY, "--store", str(copy)])
            if code:
                raise SystemExit(f"{tree}: the untimed first query failed: {tail}")
        results: dict[str, dict[str, list[Any]]] = {}
        leftovers: dict[str, bool] = {}
        reference: list[float] = []
        for name in cold_cases(store, scratch):
            results[name] = {tree: [] for tree in trees}
            for round_ in range(options.rounds):
                order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
                for tree in order:
                    args = cold_cases(stores[tree], scratch)[name]
                    new = scratch / f"new-{tree.replace(' ', '-')}-{round_}"
                    filled = [a.format(new=new) for a in args]
                    wall, cpu, code, tail = run_once(trees[tree], filled)
                    results[name][tree].append({"wall": wall, "cpu": cpu, "code": code})
                    if "{new}" in args:
                        leftovers[tree] = (
                            leftovers.get(tree, False) or (new / "chroma.sqlite3").exists()
                        )
                if name == "query (cold start)":  # the floor, in the same rounds
                    reference.append(import_chromadb())
                say(f"{name}: round {round_ + 1}/{options.rounds} ({tail})")
        where = {tree: stages(src, stores[tree]) for tree, src in trees.items()}
    summary = {
        name: {
            tree: {
                "wall_p50": statistics.median(r["wall"] for r in runs),
                "wall_max": max(r["wall"] for r in runs),
                "cpu_p50": statistics.median(r["cpu"] for r in runs),
                "exit_codes": sorted({r["code"] for r in runs}),
            }
            for tree, runs in by_tree.items()
        }
        for name, by_tree in results.items()
    }
    payload = {
        "baseline_rev": sha,
        "rounds": options.rounds,
        "summary": summary,
        "runs": results,
        "stages": where,
        "store_left_by_failed_ingest": leftovers,
        "import_chromadb": {"walls": reference, "wall_p50": statistics.median(reference)},
    }
    save("cold_start", payload, cold_markdown(payload))


def cold_markdown(payload: dict[str, Any]) -> str:
    """The results as Markdown tables."""
    lines = [
        "# CLI process time: bad input and a cold query",
        "",
        f"Baseline: `{payload['baseline_rev'][:10]}`; each command {payload['rounds']} times "
        "per tree, alternating. Seconds; p50 = median.",
        "",
        "| command | baseline wall p50 | this tree wall p50 | ratio | baseline CPU p50 | "
        "this tree CPU p50 | this tree wall max | exit |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, by_tree in payload["summary"].items():
        base, new = by_tree["baseline"], by_tree["this tree"]
        lines.append(
            f"| {name} | {base['wall_p50']:.2f} | {new['wall_p50']:.2f} | "
            f"{new['wall_p50'] / base['wall_p50']:.2f} | {base['cpu_p50']:.2f} | "
            f"{new['cpu_p50']:.2f} | {new['wall_max']:.2f} | {new['exit_codes']} |"
        )
    left = payload["store_left_by_failed_ingest"]
    floor = payload["import_chromadb"]["wall_p50"]
    cold = payload["summary"]["query (cold start)"]
    lines += [
        "",
        f'`python -c "import chromadb"`, timed in the same rounds: {floor:.2f} s p50. A cold '
        "query takes "
        + ", ".join(f"{cold[tree]['wall_p50'] / floor:.2f}x that ({tree})" for tree in cold)
        + ".",
        "",
        "`ingest notthere --store NEW` left NEW/chroma.sqlite3 behind: "
        + ", ".join(f"{tree} {'yes' if flag else 'no'}" for tree, flag in left.items()),
        "",
        "Where a cold query's time goes (one process each, seconds):",
        "",
        "| stage | baseline | this tree |",
        "|---|---:|---:|",
    ]
    base, new = payload["stages"]["baseline"], payload["stages"]["this tree"]
    for stage in base:
        lines.append(f"| {stage} | {base[stage]:.2f} | {new.get(stage, 0.0):.2f} |")
    lines.append(f"| total | {sum(base.values()):.2f} | {sum(new.values()):.2f} |")
    return "\n".join(lines) + "\n"


# --- follow: the check for other processes' writes, and the reopen -------------------------


def follow_round(reader: Store, writer: Store, query: str, n: int, pipe: Any) -> dict[str, float]:
    """One round's seconds: a plain query, the pipeline, the idle check, the check after a
    touch, and reopen + first search after another writer's write."""
    from ragbrain.store.processes import fresh_client

    assert reader.folder is not None
    row = {
        "search": timed(lambda: reader.search(query, 10)),
        "pipeline": timed(lambda: pipe(query)),
    }

    def idle_checks() -> None:
        for _ in range(1000):
            reader.follow()

    row["check, nothing changed"] = timed(idle_checks) / 1000
    fresh_client(reader.folder).get_collection("ragbrain").count()  # another client opens
    row["check after another client opened"] = timed(reader.follow)
    text = f"probe {n}"
    writer.upsert(
        [f"probe-{n}"], [text], [{"type": "bench"}], reader.embeddings.embed_documents([text])
    )
    row["reopen after another's write"] = timed(reader.follow)
    row["reopen + first search"] = row["reopen after another's write"] + timed(
        lambda: reader.search(query, 10)
    )
    return row


def resident_mb() -> float:
    """This process's resident memory (Linux ``/proc``), in MB."""
    status = Path("/proc/self/status").read_text(encoding="utf-8")
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def reopen_memory(reader: Store, writer: Store, reopens: int) -> dict[str, float]:
    """Resident memory before and after ``reopens`` more reopens: a process that follows
    another writer for long must not keep every old segment."""
    before = resident_mb()
    vector = reader.embeddings.embed_documents(["memory probe"])
    for n in range(reopens):
        writer.upsert([f"memory-{n}"], ["memory probe"], [{"type": "bench"}], vector)
        reader.search("memory probe", 10)
    return {"before_mb": before, "after_mb": resident_mb(), "reopens": float(reopens)}


def follow_cost(args: argparse.Namespace) -> None:
    """Measure the follow check and the reopen; write ``results/follow_cost.{json,md}``."""
    embeddings = default_embeddings()
    results: dict[str, dict[str, dict[str, float]]] = {}
    memory: dict[str, dict[str, float]] = {}
    for size in args.sizes:
        source = synthetic_store(size, embeddings).folder
        assert source is not None
        with tempfile.TemporaryDirectory() as scratch:
            copy = Path(scratch) / "store"
            shutil.copytree(source, copy)
            reader, writer = Store.open(copy, embeddings), Store.open(copy, embeddings)
            graph = build_graph(reader, None, critic_off_reason="off in this benchmark")
            pipe = CorrectiveRetriever(graph=graph, context=RetrievalContext(k=10)).invoke
            for query in QUERIES:  # warm-up: the model, the index, every query's vector
                reader.search(query, 10)
                pipe(query)
            seconds: dict[str, list[float]] = {}
            n = 0
            for _ in range(args.rounds):
                for query in QUERIES:
                    n += 1
                    for name, value in follow_round(reader, writer, query, n, pipe).items():
                        seconds.setdefault(name, []).append(value)
            results[str(size)] = {name: stats(values) for name, values in seconds.items()}
            memory[str(size)] = reopen_memory(reader, writer, args.reopens)
        say(f"measured {size} chunks")
    lines = [
        "| chunks | step | p50 ms | p95 ms | p50 / plain query | p50 / pipeline |",
        "|---|---|---|---|---|---|",
    ]
    for size, rows in results.items():
        base, pipeline_ms = rows["search"]["p50_ms"], rows["pipeline"]["p50_ms"]
        for name, row in rows.items():
            label = {"search": "plain query (dense, k=10)", "pipeline": "pipeline, critic off"}
            cells = (
                f"{row['p50_ms']:.3f} | {row['p95_ms']:.3f} | {row['p50_ms'] / base:.3f}x | "
                f"{row['p50_ms'] / pipeline_ms:.3f}x"
            )
            lines.append(f"| {int(size):,} | {label.get(name, name)} | {cells} |")
    for size, row in memory.items():
        lines.append(
            f"\n{int(size):,} chunks: resident memory {row['before_mb']:.0f} MB, then "
            f"{row['after_mb']:.0f} MB after {int(row['reopens'])} more reopens (each after "
            "another writer's write, with a search)."
        )
    table = "\n".join(lines)
    print(table)
    save(
        "follow_cost",
        {"rounds": args.rounds, "queries": len(QUERIES), "results": results, "memory": memory},
        table + "\n",
    )


# --- long: a 10,000-character question against a 100-character one ------------------------

#: Filler of each kind, repeated to the length asked: prose as an app pastes it, and the three
#: scripts whose comparison frames were once quadratic.
LONG_FILLERS = {
    "English": "The job wrote its log to the shared volume and then stopped without an error. ",
    "ja/th/zh": "バックアップが失敗した原因と対策 การสำรองข้อมูลล้มเหลวทุกคืน 数据库备份失败的原因 ",
}


def long_question(base: str, filler: str, length: int, round_: int) -> str:
    """``base`` made unique to the round, then ``filler`` up to ``length`` characters."""
    head = f"{base} (case {round_}) "
    return (head + filler * (length // len(filler) + 1))[:length]


def long_cost(args: argparse.Namespace) -> None:
    """Time 100- and 10,000-character questions; write results/long_question.{json,md}."""
    from ragbrain.factory import open_store_and_graph
    from ragbrain.ingest import ingest
    from ragbrain.paths import sample_notes

    with tempfile.TemporaryDirectory(prefix="ragbrain-long-") as tmp:
        ingest(sample_notes(), Store.open(Path(tmp) / "store", default_embeddings(), create=True))
        store, graph = open_store_and_graph(Path(tmp) / "store")
        retriever = CorrectiveRetriever(graph=graph, known_types=store.known_types)
        lengths = (100, MAX_QUERY_CHARS)
        keys = [f"{kind} {length}" for kind in LONG_FILLERS for length in lengths]
        runs: dict[str, list[float]] = {key: [] for key in keys}
        embeds: dict[str, list[float]] = {key: [] for key in keys}
        for round_ in range(-2, args.rounds):  # two rounds of warm-up
            order = [(kind, length) for kind in LONG_FILLERS for length in lengths]
            if round_ % 2:
                order.reverse()
            for kind, length in order:
                base = QUERIES[round_ % len(QUERIES)]
                query = long_question(base, LONG_FILLERS[kind], length, round_)
                # The store's own embedding of the question (kept in its query cache), then
                # the run, which finds it there: the run's time is ragbrain's own.
                embed = timed(functools.partial(store.embed_query, query))
                run = timed(functools.partial(retriever.invoke, query))
                if round_ >= 0:
                    runs[f"{kind} {length}"].append(run * 1000)
                    embeds[f"{kind} {length}"].append(embed * 1000)
    rows = []
    for kind in LONG_FILLERS:
        short, long_ = f"{kind} 100", f"{kind} {MAX_QUERY_CHARS}"
        own = {key: statistics.median(runs[key]) for key in (short, long_)}
        embedded = {key: statistics.median(embeds[key]) for key in (short, long_)}
        whole = {
            key: statistics.median(r + e for r, e in zip(runs[key], embeds[key], strict=True))
            for key in (short, long_)
        }
        rows.append(
            {
                "kind": kind,
                "own_100_ms": own[short],
                "own_long_ms": own[long_],
                "embed_100_ms": embedded[short],
                "embed_long_ms": embedded[long_],
                "own_ratio": own[long_] / own[short],
                "whole_ratio": whole[long_] / whole[short],
                "target_ratio": whole[long_] / (1.2 * own[short] + embedded[long_]),
            }
        )
    payload = {"rounds": args.rounds, "rows": rows, "runs_ms": runs, "embeds_ms": embeds}
    lines = [
        f"# A 10,000-character question against a 100-character one (median of {args.rounds})",
        "",
        "| text | ragbrain's own, 100 chars | own, 10,000 | own, 10,000 / 100 | embedding, 100 "
        "| embedding, 10,000 | whole, 10,000 / (1.2 x own 100 + embedding 10,000) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['kind']} | {row['own_100_ms']:.1f} ms | {row['own_long_ms']:.1f} ms | "
            f"{row['own_ratio']:.2f}x | {row['embed_100_ms']:.1f} ms | "
            f"{row['embed_long_ms']:.1f} ms | {row['target_ratio']:.2f} |"
        )
    markdown = "\n".join(lines) + "\n"
    save("long_question", payload, markdown)
    print(markdown)


def main() -> None:
    """Parse the subcommand and run its measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("pipeline", help="ragbrain against LangChain's Chroma retriever")
    one.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    one.add_argument("--rounds", type=int, default=5)
    one.set_defaults(run=pipeline)
    two = commands.add_parser("hybrid", help="what hybrid search adds over dense search")
    two.add_argument("--size", type=int, default=100_000)
    two.add_argument("--rounds", type=int, default=5)
    two.add_argument(
        "--keep-index", action="store_true", help="Reuse the saved index (no build timing)."
    )
    two.set_defaults(run=hybrid)
    three = commands.add_parser("graph", help="LangGraph's own cost per run of the graph shape")
    three.add_argument("--runs", type=int, default=400)
    three.set_defaults(run=graph_cost)
    four = commands.add_parser("cold", help="a fresh CLI process: bad input and a cold query")
    four.add_argument("--rounds", type=int, default=5)
    four.add_argument(
        "--baseline-rev", default="main", help="The git revision whose src/ is compared."
    )
    four.set_defaults(run=cold)
    five = commands.add_parser("follow", help="the check for other writers, and the reopen")
    five.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    five.add_argument("--rounds", type=int, default=5)
    five.add_argument("--reopens", type=int, default=30, help="Reopens for the memory check.")
    five.set_defaults(run=follow_cost)
    six = commands.add_parser("long", help="a 10,000-character question against a short one")
    six.add_argument("--rounds", type=int, default=7)
    six.set_defaults(run=long_cost)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
