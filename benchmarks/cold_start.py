"""CLI process time, side by side: bad input and a cold `ragbrain query`, this tree vs a baseline.

Each command runs as a fresh process (`python -c "from ragbrain.cli import app; app()" ...`)
with PYTHONPATH set to one source tree or the other: this checkout's `src/`, and the baseline
revision's `src/` unpacked from git (`git archive`). Runs alternate between the trees, rotating
which goes first, so drift on a shared machine hits both alike. Reported: median and p90 of the
wall time, and the median CPU time (user + sys of the child, which other load on the machine
inflates less). The store is the bundled sample notes (56 notes, 156 chunks), ingested once
and copied for each tree, which then runs one untimed query on its copy: a tree whose lexical
index format differs from the other's would otherwise rebuild the index on every run.
Also printed: where a cold query's time goes in this tree and in the baseline (timers around
the imports and loads, in one process each).

    python -m benchmarks.cold_start [--rounds 5] [--baseline-rev main]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

from benchmarks.common import save, say

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
from ragbrain.models.embeddings import default_embeddings
embeddings = default_embeddings(); embeddings.embed_query("x"); mark("embedding model")
from ragbrain.store import Store
store = Store.open(sys.argv[1], embeddings); mark("Store.open (Chroma)")
from ragbrain.factory import resolve_critic
critic, _ = resolve_critic("default"); mark("critic")
from ragbrain.lexical.sync import LexicalSearcher
lexical = LexicalSearcher(store); mark("lexical index")
from ragbrain.graph import build_graph
retriever = CorrectiveRetriever(graph=build_graph(store, critic, lexical=lexical))
mark("build the graph")
retriever.run(sys.argv[2]); mark("first query")
print(repr(out))
"""


def cases(store: Path, scratch: Path) -> dict[str, list[str]]:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline-rev", default="main")
    options = parser.parse_args()
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
        for name in cases(store, scratch):
            results[name] = {tree: [] for tree in trees}
            for round_ in range(options.rounds):
                order = list(trees) if round_ % 2 == 0 else list(reversed(trees))
                for tree in order:
                    args = cases(stores[tree], scratch)[name]
                    new = scratch / f"new-{tree.replace(' ', '-')}-{round_}"
                    filled = [a.format(new=new) for a in args]
                    wall, cpu, code, tail = run_once(trees[tree], filled)
                    results[name][tree].append({"wall": wall, "cpu": cpu, "code": code})
                    if "{new}" in args:
                        leftovers[tree] = (
                            leftovers.get(tree, False) or (new / "chroma.sqlite3").exists()
                        )
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
    }
    save("cold_start", payload, markdown(payload))


def markdown(payload: dict[str, Any]) -> str:
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
    lines += [
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


if __name__ == "__main__":
    main()
