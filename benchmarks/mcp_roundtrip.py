"""MCP round trip: `search` over stdio from the SDK's client vs the retriever in process.

Both sides answer the same queries over the same store of the bundled sample notes, after
start-up (the server has loaded its models; the first calls are warm-up). Calls alternate
between the sides, rotating which goes first. Two cases: each call a query text neither side
has seen (the model embeds it), and the same query again (its embedding is cached), which
leaves only the protocol's own cost. Torch gets the same number of threads on both sides
(--threads, default 1: on a busy two-core machine, two spinning threads per process make
the embedding time swing by 10x and drown what is measured here).

    python -m benchmarks.mcp_roundtrip [--rounds 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks.common import QUERIES, save, say, stats
from ragbrain.ingest import ingest
from ragbrain.models.embeddings import default_embeddings
from ragbrain.paths import cache_root, sample_notes
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.store import Store

TARGET_MS = 20.0


def sample_store() -> Path:
    """The sample notes embedded by the real model, cached (ingesting again changes nothing)."""
    folder = cache_root() / "bench" / "sample-notes"
    ingest(sample_notes(), Store.open(folder, default_embeddings(), create=True))
    return folder


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    """Seconds one awaited call takes."""
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


async def measure(store: Path, rounds: int, threads: int) -> dict[str, dict[str, dict[str, float]]]:
    """p50/p95 of both sides, for new and repeated query texts."""
    import torch

    torch.set_num_threads(threads)
    retriever = CorrectiveRetriever.from_store(store)
    server = StdioServerParameters(
        command=str(Path(sys.executable).parent / "ragbrain"),
        args=["mcp", "--store", str(store)],
        env={"OMP_NUM_THREADS": str(threads)},
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()

        async def over_mcp(query: str) -> object:
            result = await session.call_tool("search", {"query": query})
            if result.is_error:
                raise RuntimeError(f"search failed: {result.content}")
            return result.structured_content

        async def in_process(query: str) -> object:
            return retriever.run(query)

        sides: dict[str, Callable[[str], Awaitable[object]]] = {
            "mcp (stdio)": over_mcp,
            "in process": in_process,
        }
        for query in QUERIES[:3]:  # warm-up: the server loads its models on the first call
            for call in sides.values():
                await call(query)
        names = list(sides)
        results: dict[str, dict[str, dict[str, float]]] = {}
        for case in ("new query", "repeated query"):
            seconds: dict[str, list[float]] = {name: [] for name in names}
            for index in range(rounds * len(QUERIES)):
                base = QUERIES[index % len(QUERIES)]
                query = f"{base} ({index})" if case == "new query" else QUERIES[0]
                shift = index % len(names)
                for name in names[shift:] + names[:shift]:
                    seconds[name].append(await timed(functools.partial(sides[name], query)))
            results[case] = {name: stats(values) for name, values in seconds.items()}
            say(
                f"  {case}: "
                + ", ".join(f"{n} p50 {s['p50_ms']:.1f} ms" for n, s in results[case].items())
            )
        return results


def markdown(results: dict[str, dict[str, dict[str, float]]], threads: int) -> str:
    """A table of both cases, with the overhead against the target."""
    lines = [
        "| case | side | p50 ms | p95 ms | calls |",
        "|---|---|---|---|---|",
    ]
    for case, sides in results.items():
        for name, s in sides.items():
            lines.append(
                f"| {case} | {name} | {s['p50_ms']:.1f} | {s['p95_ms']:.1f} | {int(s['n'])} |"
            )
    lines.append("")
    lines.append(f"Torch threads on each side: {threads}.")
    lines.append("")
    for case, sides in results.items():
        overhead = sides["mcp (stdio)"]["p50_ms"] - sides["in process"]["p50_ms"]
        verdict = "within" if overhead <= TARGET_MS else "OVER"
        lines.append(
            f"- {case}: MCP p50 is {overhead:+.1f} ms from in process ({verdict} the "
            f"{TARGET_MS:.0f} ms target)."
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure, print the table, and write results/mcp_roundtrip.{json,md}."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5, help="Passes over the queries.")
    parser.add_argument("--threads", type=int, default=1, help="Torch threads on each side.")
    args = parser.parse_args(argv)
    say("building the sample store (cached after the first run) ...")
    store = sample_store()
    results = asyncio.run(measure(store, args.rounds, args.threads))
    table = markdown(results, args.threads)
    print(table)
    payload: dict[str, Any] = {
        "target_ms": TARGET_MS,
        "rounds": args.rounds,
        "torch_threads": args.threads,
        "results": results,
    }
    save("mcp_roundtrip", payload, table)
    return payload


if __name__ == "__main__":
    main()
