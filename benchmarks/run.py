"""Run every speed benchmark in turn; each writes its JSON and Markdown to benchmarks/results/.

    python -m benchmarks.run                  (what `make bench` runs)
    python -m benchmarks.run faults [--runs 3]

``faults`` runs the tests marked ``faults`` (a real ``chroma run`` absent, killed mid-query,
frozen with SIGSTOP, restarted; ingestion killed with SIGKILL at random points, then rerun)
several times in fresh pytest processes and records each run's outcome, counts and duration:
do they pass every time, or only sometimes? A run's own failures are kept in the results.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from typing import Any

from benchmarks.common import save, say

#: Each benchmark's module and arguments, in the order they run.
BENCHMARKS = (
    ("latency", "pipeline"),
    ("speed", "ingest", "notes"),
    ("speed", "filter", "types"),
    ("speed", "filter", "scopes"),
    ("speed", "mcp", "roundtrip"),
    ("speed", "mcp", "tools"),
    ("speed", "mcp", "http"),
    ("run", "faults"),
    ("watch_fresh",),
    ("speed", "ingest", "pdf"),
)

_COUNTS = re.compile(r"(\d+) (passed|failed|error|errors|skipped)")


def run_once() -> dict[str, Any]:
    """One pytest run of the fault tests, in its own process."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "faults", "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        check=False,
    )
    counts = {kind: 0 for kind in ("passed", "failed", "errors", "skipped")}
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    for number, kind in _COUNTS.findall(summary):
        counts["errors" if kind.startswith("error") else kind] += int(number)
    return {
        "exit_code": done.returncode,
        "seconds": round(time.perf_counter() - started, 1),
        **counts,
        "summary": summary,
        "failures": [line for line in done.stdout.splitlines() if line.startswith("FAILED")],
    }


def faults(runs_wanted: int) -> None:
    """Run the fault tests ``runs_wanted`` times in fresh pytest processes (a flaky test shows
    up as a run with a failure); write results/faults.json and .md."""
    runs = []
    for number in range(1, runs_wanted + 1):
        result = run_once()
        say(f"run {number}/{runs_wanted}: {result['summary']}")
        runs.append(result)
    lines = [
        "| run | result | passed | failed | errors | seconds |",
        "|---|---|---|---|---|---|",
        *(
            f"| {i} | {'green' if r['exit_code'] == 0 else 'RED'} | {r['passed']} | "
            f"{r['failed']} | {r['errors']} | {r['seconds']} |"
            for i, r in enumerate(runs, start=1)
        ),
    ]
    failures = sorted({f for r in runs for f in r["failures"]})
    if failures:
        lines += ["", "Failures:", *(f"- `{f}`" for f in failures)]
    table = "\n".join(lines)
    print(table)
    save("faults", {"runs": runs}, table + "\n")
    if any(r["exit_code"] != 0 for r in runs):
        sys.exit(1)


def main() -> None:
    """Run the benchmarks one after another, stopping at the first failure (or, with
    ``faults``, the fault tests alone)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command")
    repeated = commands.add_parser("faults", help="the fault tests, repeated")
    repeated.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.command == "faults":
        faults(args.runs)
        return
    for module, *rest in BENCHMARKS:
        print(f"== {module} {' '.join(rest)}".rstrip(), flush=True)
        subprocess.run([sys.executable, "-m", f"benchmarks.{module}", *rest], check=True)


if __name__ == "__main__":
    main()
