"""One `ragbrain mcp --http` server for 20 concurrent SDK clients vs one stdio server.

Both servers run the real model and the shipped critic over copies of one store of the
bundled sample notes, with one torch thread each (OMP_NUM_THREADS=1). Each first answers
all 20 benchmark queries once (warm-up: models loaded, query embeddings cached, so what
follows is the search, the critic and the protocol). Then:

- stdio: one client makes the 20 searches in turn (the reference answers and latency);
- HTTP, one client: the same 20 searches in turn;
- HTTP, 20 clients at once (the SDK's streamable HTTP client, all in this process), each
  making the 20 searches, starting at a different query.

Reported: errors, how many answers equal the stdio answer for the same query (the whole
structured result), the servers' resident memory (VmRSS, and the peak VmHWM) after their
runs, and per-search p50/p95 of each case.

    python -m benchmarks.mcp_http [--clients 20] [--searches 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from benchmarks.common import QUERIES, save, say, stats
from benchmarks.mcp_roundtrip import sample_store
from ragbrain.paths import cache_root

RAGBRAIN = str(Path(sys.executable).parent / "ragbrain")
TOKEN = "benchmark-token-0123456789abcdef"
RSS_TARGET = 1.2
P50_TARGET = 1.5


def memory(pid: int) -> dict[str, float]:
    """Resident memory now and at its peak, in MB, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return {"rss_mb": fields["VmRSS"], "peak_mb": fields["VmHWM"]}


async def searches(
    session: ClientSession, queries: list[str]
) -> tuple[list[float], list[Any], int]:
    """Each query in turn: seconds, structured results, errors."""
    seconds, answers, errors = [], [], 0
    for query in queries:
        start = time.perf_counter()
        result = await session.call_tool("search", {"query": query})
        seconds.append(time.perf_counter() - start)
        errors += bool(result.is_error)
        answers.append(result.structured_content)
    return seconds, answers, errors


async def over_stdio(store: Path, env: dict[str, str], base: Path) -> dict[str, Any]:
    pid_file = base / "stdio.pid"
    params = StdioServerParameters(
        command="/bin/sh",
        args=[
            "-c",
            'echo $$ > "$0"; exec "$1" mcp --store "$2"',
            str(pid_file),
            RAGBRAIN,
            str(store),
        ],
        env=env,
    )
    with (base / "stdio.log").open("w") as log:
        async with (
            stdio_client(params, errlog=log) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await searches(session, list(QUERIES))  # warm-up
            seconds, answers, errors = await searches(session, list(QUERIES))
            mem = memory(int(pid_file.read_text()))
    return {
        "seconds": seconds,
        "answers": dict(zip(QUERIES, answers, strict=True)),
        "errors": errors,
        "memory": mem,
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _client(url: str, queries: list[str]) -> tuple[list[float], list[Any], int]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await searches(session, queries)


async def over_http(
    store: Path, env: dict[str, str], base: Path, clients: int, per: int
) -> dict[str, Any]:
    (base / "token").write_text(TOKEN)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    args = [
        RAGBRAIN,
        "mcp",
        "--store",
        str(store),
        "--http",
        f"127.0.0.1:{port}",
        "--token-file",
        str(base / "token"),
    ]
    with (base / "http.log").open("w") as log:
        process = subprocess.Popen(args, env=env, stdout=log, stderr=log)
        try:
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if process.poll() is not None:
                        raise RuntimeError((base / "http.log").read_text()) from None
                    await asyncio.sleep(0.3)
            await _client(url, list(QUERIES))  # warm-up
            single = await _client(url, list(QUERIES))
            started = time.perf_counter()
            runs = await asyncio.gather(
                *(
                    _client(url, [QUERIES[(c + i) % len(QUERIES)] for i in range(per)])
                    for c in range(clients)
                ),
                return_exceptions=True,
            )
            wall = time.perf_counter() - started
            mem = memory(process.pid)
        finally:
            process.terminate()
            process.wait(timeout=30)
    failed = [r for r in runs if isinstance(r, BaseException)]
    done = [r for r in runs if not isinstance(r, BaseException)]
    pairs = [
        (QUERIES[(c + i) % len(QUERIES)], answer)
        for c, (_, answers, _) in enumerate(done)
        for i, answer in enumerate(answers)
    ]
    return {
        "single": {
            "seconds": single[0],
            "answers": dict(zip(QUERIES, single[1], strict=True)),
            "errors": single[2],
        },
        "concurrent": {
            "seconds": [s for seconds, _, _ in done for s in seconds],
            "pairs": pairs,
            "errors": sum(e for _, _, e in done) + len(failed),
            "failed_clients": [repr(f) for f in failed],
            "wall_s": wall,
        },
        "memory": mem,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure, print the table, and write results/mcp_http.{json,md}."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--searches", type=int, default=20, help="Searches per client.")
    args = parser.parse_args(argv)
    say("building the sample store (cached after the first run) ...")
    source = sample_store()
    base = cache_root() / "bench" / "mcp-http"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    for name in ("stdio", "http"):
        shutil.copytree(source, base / f"store-{name}")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    say("stdio server ...")
    stdio = asyncio.run(over_stdio(base / "store-stdio", env, base))
    say("HTTP server ...")
    http = asyncio.run(over_http(base / "store-http", env, base, args.clients, args.searches))
    reference = stdio["answers"]
    same_single = sum(reference[q] == a for q, a in http["single"]["answers"].items())
    same = sum(reference[q] == a for q, a in http["concurrent"]["pairs"])
    rows = {
        "stdio, 1 client": stats(stdio["seconds"]),
        "HTTP, 1 client": stats(http["single"]["seconds"]),
        f"HTTP, {args.clients} clients at once": stats(http["concurrent"]["seconds"]),
    }
    rss_ratio = http["memory"]["rss_mb"] / stdio["memory"]["rss_mb"]
    p50_single = rows["HTTP, 1 client"]["p50_ms"]
    p50_ratio = rows[f"HTTP, {args.clients} clients at once"]["p50_ms"] / p50_single
    p50_ratio_stdio = (
        rows[f"HTTP, {args.clients} clients at once"]["p50_ms"] / rows["stdio, 1 client"]["p50_ms"]
    )
    total = args.clients * args.searches
    many = f"HTTP, {args.clients} clients at once"
    counts = {
        "stdio, 1 client": (len(stdio["seconds"]), stdio["errors"]),
        "HTTP, 1 client": (len(http["single"]["seconds"]), http["single"]["errors"]),
        many: (len(http["concurrent"]["seconds"]), http["concurrent"]["errors"]),
    }
    lines = ["| case | p50 ms | p95 ms | searches | errors |", "|---|---|---|---|---|"]
    for name, row in rows.items():
        n, errors = counts[name]
        lines.append(f"| {name} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | {n} | {errors} |")
    lines += [
        "",
        "| server | resident MB after the run | peak MB |",
        "|---|---|---|",
        f"| stdio (1 client) | {stdio['memory']['rss_mb']:.0f} | "
        f"{stdio['memory']['peak_mb']:.0f} |",
        f"| HTTP ({args.clients} clients) | {http['memory']['rss_mb']:.0f} | "
        f"{http['memory']['peak_mb']:.0f} |",
        "",
        f"- Errors: {http['concurrent']['errors']} in {total} concurrent searches "
        f"({len(http['concurrent']['failed_clients'])} clients failed).",
        f"- Answers equal to stdio's for the same query: {same}/{len(http['concurrent']['pairs'])}"
        f" concurrent, {same_single}/{len(QUERIES)} single client.",
        f"- Resident memory, one HTTP server / one stdio server: {rss_ratio:.3f}x "
        f"({'within' if rss_ratio <= RSS_TARGET else 'OVER'} the {RSS_TARGET}x target); "
        f"{args.clients} stdio servers would hold "
        f"~{args.clients * stdio['memory']['rss_mb'] / 1024:.1f} GB.",
        f"- p50 with {args.clients} clients at once / one HTTP client: {p50_ratio:.2f}x "
        f"({'within' if p50_ratio <= P50_TARGET else 'OVER'} the {P50_TARGET}x target); / one "
        f"stdio client: {p50_ratio_stdio:.2f}x. Wall time of the concurrent run: "
        f"{http['concurrent']['wall_s']:.1f} s "
        f"({total / http['concurrent']['wall_s']:.1f} searches/s).",
    ]
    table = "\n".join(lines) + "\n"
    print(table)
    payload = {
        "clients": args.clients,
        "searches_per_client": args.searches,
        "latency": rows,
        "errors": http["concurrent"]["errors"],
        "failed_clients": http["concurrent"]["failed_clients"],
        "same_as_stdio": {
            "concurrent": same,
            "of": len(http["concurrent"]["pairs"]),
            "single": same_single,
        },
        "memory": {"stdio": stdio["memory"], "http": http["memory"], "ratio": rss_ratio},
        "p50_ratio_vs_single_http": p50_ratio,
        "p50_ratio_vs_single_stdio": p50_ratio_stdio,
        "wall_s": http["concurrent"]["wall_s"],
        "targets": {"rss_ratio": RSS_TARGET, "p50_ratio": P50_TARGET},
    }
    save("mcp_http", payload, table)
    return payload


if __name__ == "__main__":
    main()
