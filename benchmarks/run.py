"""Run every speed benchmark in turn; each writes its JSON and Markdown to benchmarks/results/.

python -m benchmarks.run        (what `make bench` runs)
"""

from __future__ import annotations

import subprocess
import sys

BENCHMARKS = (
    "latency",
    "ingest_speed",
    "filter_speed",
    "scope_speed",
    "mcp_roundtrip",
    "mcp_tools",
    "mcp_http",
    "faults",
    "watch_fresh",
    "pdf_speed",
)


def main() -> None:
    """Run the benchmarks one after another, stopping at the first failure."""
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        subprocess.run([sys.executable, "-m", f"benchmarks.{name}"], check=True)


if __name__ == "__main__":
    main()
