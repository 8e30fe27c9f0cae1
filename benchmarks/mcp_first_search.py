"""How soon the MCP server answers its first `search` after the client's `initialize` returns.

Spawns the server over stdio with the official SDK's client, times ``initialize`` from the
spawn, then the first ``search`` from the moment ``initialize`` returned: what a client waits
for on top of the handshake while the server loads its embedding model, critic and lexical
index in a background thread. Two sides, alternating, each run a fresh process:

- ``ragbrain mcp --store STORE``: the command as shipped (loading starts before the MCP SDK
  is imported, as soon as the options are checked);
- ``late``: the same service served with loading started only when the server starts
  serving (``serve(RagbrainService(store))``: what ``ragbrain mcp`` did before).

The store is the bundled sample notes embedded by the real model (cached after the first
build). The machine's load average is printed with each run: on a shared machine it moves
every figure.

    python -m benchmarks.mcp_first_search [--runs 5] [--store DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

QUERY = "Why did the nightly database backup fail?"
LATE = (
    "import sys; from ragbrain.mcp_server import RagbrainService, serve; "
    "serve(RagbrainService(sys.argv[1]))"
)


def command(side: str, store: Path) -> StdioServerParameters:
    """How each side's server is started."""
    if side == "late":
        return StdioServerParameters(command=sys.executable, args=["-c", LATE, str(store)])
    ragbrain = str(Path(sys.executable).parent / "ragbrain")
    return StdioServerParameters(command=ragbrain, args=["mcp", "--store", str(store)])


async def one_run(params: StdioServerParameters) -> tuple[float, float]:
    """Seconds from spawn to ``initialize`` returning, and from then to the first answer."""
    spawned = time.perf_counter()
    with open(os.devnull, "w") as quiet:  # the SDK wants a text stream
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
    """Run both sides in turn and print each run and the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--store", type=Path, default=None)
    args = parser.parse_args()
    store = args.store
    if store is None:
        from benchmarks.mcp_speed import sample_store

        store = sample_store()
    sides = ("ragbrain mcp", "late")
    times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    for run in range(args.runs):
        for side in sides if run % 2 == 0 else sides[::-1]:
            load = os.getloadavg()[0]
            init, first = asyncio.run(one_run(command(side, store)))
            times[side].append((init, first))
            print(
                f"run {run + 1} {side}: initialize {init:.2f} s after spawn, first search "
                f"{first:.2f} s after initialize (load average {load:.1f})"
            )
    print("| side | spawn to initialize | initialize to first answer | spawn to first answer |")
    print("|---|---:|---:|---:|")
    for side, pairs in times.items():
        init = statistics.median(i for i, _ in pairs)
        first = statistics.median(f for _, f in pairs)
        total = statistics.median(i + f for i, f in pairs)
        print(f"| {side} | {init:.2f} s | {first:.2f} s | {total:.2f} s |")


if __name__ == "__main__":
    main()
