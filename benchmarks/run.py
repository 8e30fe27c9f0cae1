"""Run every speed benchmark in turn; each writes its JSON and Markdown to benchmarks/results/.

python -m benchmarks.run        (what `make bench` runs)
"""

from __future__ import annotations

import argparse
import subprocess
import sys

#: Each benchmark's module and arguments, in the order they run.
BENCHMARKS = (
    ("latency", "pipeline"),
    ("ingest_speed", "notes"),
    ("filter_speed", "types"),
    ("filter_speed", "scopes"),
    ("mcp_speed", "roundtrip"),
    ("mcp_speed", "tools"),
    ("mcp_speed", "http"),
    ("faults",),
    ("watch_fresh",),
    ("ingest_speed", "pdf"),
)


def main() -> None:
    """Run the benchmarks one after another, stopping at the first failure."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    for module, *args in BENCHMARKS:
        print(f"== {module} {' '.join(args)}".rstrip(), flush=True)
        subprocess.run([sys.executable, "-m", f"benchmarks.{module}", *args], check=True)


if __name__ == "__main__":
    main()
