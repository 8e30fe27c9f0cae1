"""How soon the MCP server answers its first `search` after the client's `initialize` returns.

Spawns the real ``ragbrain mcp --store STORE`` over stdio with the official SDK's client,
times ``initialize`` from the spawn, then the first ``search`` from the moment ``initialize``
returned (the server loads its embedding model, critic and lexical index in a background
thread from its start, so this is what a client waits for on top of the handshake). Each
run is a fresh process; the store is the bundled sample notes embedded by the real model
(cached after the first build).

    python -m benchmarks.mcp_first_search [--runs 5] [--store DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

QUERY = "Why did the nightly database backup fail?"


async def one_run(store: Path) -> tuple[float, float]:
    """Seconds from spawn to ``initialize`` returning, and from then to the first answer."""
    params = StdioServerParameters(
        command=str(Path(sys.executable).parent / "ragbrain"), args=["mcp", "--store", str(store)]
    )
    spawned = time.perf_counter()
    with open("/dev/null", "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            ready = time.perf_counter()
            result = await session.call_tool("search", {"query": QUERY})
            answered = time.perf_counter()
            if result.is_error:
                raise RuntimeError(f"search failed: {result.content}")
    return ready - spawned, answered - ready


def main() -> None:
    """Run the measurement and print each run and the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args()
    store = args.store
    if store is None:
        from benchmarks.mcp_speed import sample_store

        store = sample_store()
    inits, firsts = [], []
    for run in range(args.runs):
        init, first = asyncio.run(one_run(store))
        inits.append(init)
        firsts.append(first)
        print(f"run {run + 1}: initialize {init:.2f} s after spawn, first search {first:.2f} s")
    print(
        f"median of {args.runs}: initialize {statistics.median(inits):.2f} s after spawn, "
        f"first search {statistics.median(firsts):.2f} s after initialize"
    )


if __name__ == "__main__":
    main()
