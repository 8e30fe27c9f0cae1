"""The MCP server's cost: a `search` round trip, the `get` and `remember` tools, HTTP under load.

Every side runs the real `ragbrain mcp` (or its `RagbrainService`) through the official SDK's
client. One subcommand each:

- ``roundtrip``: `search` over stdio from the SDK's client vs the retriever in process. Both
  sides answer the same queries over the same store of the bundled sample notes, after
  start-up (the server has loaded its models; the first calls are warm-up). Calls alternate
  between the sides, rotating which goes first. Two cases: each call a query text neither side
  has seen (the model embeds it), and the same query again (its embedding is cached), which
  leaves only the protocol's own cost. Torch gets the same number of threads on both sides
  (--threads, default 1: on a busy two-core machine, two spinning threads per process make
  the embedding time swing by 10x and drown what is measured here). Results:
  ``results/mcp_roundtrip.*``.
- ``tools``: `get` (a 40-line range, and a chunk with 2 neighbours on each side) against a
  `search` of the same service, on one store of 10,000 chunks (1,125 generated notes of about
  nine chunks, ingested by the real splitter with their line spans). The store's vectors come
  from a deterministic 384-dimension hashing embedding (the real model would only make
  building it slower: `get` embeds nothing; the `search` column includes embedding each query
  with the fake model, ~0.1 ms, instead of MiniLM's ~5-15 ms, and runs with the critic off),
  so the search column is the store's and the pipeline's own cost. Then `remember` followed by
  a `search` for the note's title, with the service as `ragbrain mcp --inbox` runs it (the
  real model and the shipped critic, on the bundled sample notes; and on the 10k store, fake
  model and critic off, where ingesting one note reads the ids of all chunks of its root):
  how long each takes, and whether the search returns the note first. Results:
  ``results/mcp_tools.*``.
- ``http``: one `ragbrain mcp --http` server for 20 concurrent SDK clients vs one stdio
  server. Both run the real model and the shipped critic over copies of one store of the
  bundled sample notes, with one torch thread each (OMP_NUM_THREADS=1), and first answer all
  20 benchmark queries once (warm-up: models loaded, query embeddings cached, so what follows
  is the search, the critic and the protocol). Then stdio: one client makes the 20 searches in
  turn (the reference answers and latency); HTTP, one client: the same 20 searches in turn;
  HTTP, 20 clients at once (the SDK's streamable HTTP client, all in this process), each
  making the 20 searches, starting at a different query. Reported: errors, how many answers
  equal the stdio answer for the same query (the whole structured result), the servers'
  resident memory (VmRSS, and the peak VmHWM) after their runs, and per-search p50/p95 of
  each case. Results: ``results/mcp_http.*``.

- ``first-search``: how soon the server answers its first `search` after the client's
  `initialize` returns. Spawns the real ``ragbrain mcp --store STORE`` over stdio, times
  ``initialize`` from the spawn, then the first ``search`` from the moment ``initialize``
  returned (the server loads its embedding model, critic and lexical index in a background
  thread from its start, so this is what a client waits for on top of the handshake), beside
  ``late``, the same service with loading started only when it starts serving. Each run is a
  fresh process, the sides alternating; the store is the bundled sample notes (or
  ``--store``). Prints each run with the load average, then the medians.

    python -m benchmarks.speed mcp roundtrip [--rounds 5] [--threads 1]
    python -m benchmarks.speed mcp tools [--calls 100] [--remembers 10]
    python -m benchmarks.speed mcp http [--clients 20] [--searches 20]
    python -m benchmarks.speed mcp first-search [--runs 5] [--store DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import math
import os
import random
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from benchmarks.common import QUERIES, WORDS, save, say, stats
from ragbrain import CorrectiveRetriever, Store
from ragbrain.ingest import ingest
from ragbrain.mcp_server import RagbrainService
from ragbrain.models.embeddings import default_embeddings
from ragbrain.paths import cache_root, sample_notes

TARGET_MS = 20.0

# --- roundtrip: search over stdio against the retriever in process ----------------------------


def sample_store() -> Path:
    """The sample notes embedded by the real model, cached (ingesting again changes nothing)."""
    folder = cache_root() / "bench" / "sample-notes"
    ingest(sample_notes(), Store.open(folder, default_embeddings(), create=True))
    return folder


async def timed_async(call: Callable[[], Awaitable[object]]) -> float:
    """Seconds one awaited call takes."""
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


async def measure_roundtrip(
    store: Path, rounds: int, threads: int
) -> dict[str, dict[str, dict[str, float]]]:
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
                    seconds[name].append(await timed_async(functools.partial(sides[name], query)))
            results[case] = {name: stats(values) for name, values in seconds.items()}
            say(
                f"  {case}: "
                + ", ".join(f"{n} p50 {s['p50_ms']:.1f} ms" for n, s in results[case].items())
            )
        return results


def roundtrip_markdown(results: dict[str, dict[str, dict[str, float]]], threads: int) -> str:
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


def roundtrip(args: argparse.Namespace) -> None:
    """Measure the round trip, print the table, and write results/mcp_roundtrip.{json,md}."""
    say("building the sample store (cached after the first run) ...")
    store = sample_store()
    results = asyncio.run(measure_roundtrip(store, args.rounds, args.threads))
    table = roundtrip_markdown(results, args.threads)
    print(table)
    payload: dict[str, Any] = {
        "target_ms": TARGET_MS,
        "rounds": args.rounds,
        "torch_threads": args.threads,
        "results": results,
    }
    save("mcp_roundtrip", payload, table)


# --- tools: get and remember on a 10k-chunk store --------------------------------------------

NOTES = 1125  # ~8.9 chunks each: ~10,000 chunks
GET_TARGET_MS = 15.0
REMEMBER_TARGET_S = 2.0
_WORD = re.compile(r"\w+")


class HashingEmbeddings(Embeddings):
    """Deterministic 384-dimension bag-of-words vectors (texts sharing words are close)."""

    model_name = "hashing-384"

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * 384
        for word in _WORD.findall(text.lower()):
            vector[int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % 384] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        vector[0] += 0.0 if any(vector) else 1.0
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def _note(rng: random.Random, n: int) -> str:
    """Front matter, a title, and 40 paragraphs of two lines: ten chunks of ~200 tokens."""
    paragraphs = []
    for p in range(40):
        first = " ".join(rng.choices(WORDS, k=12))
        second = " ".join(rng.choices(WORDS, k=12))
        paragraphs.append(f"Paragraph {p}: {first}\n{second}.")
    return (
        f"---\ntype: {rng.choice(['bug', 'decision', 'howto', 'lesson'])}\n---\n\n# Note {n}\n\n"
        + "\n\n".join(paragraphs)
        + "\n"
    )


def big_store() -> tuple[Path, Path]:
    """The notes folder and the store of 10k chunks (cached: built once)."""
    from ragbrain import Store
    from ragbrain.ingest import ingest

    base = cache_root() / "bench" / "mcp-tools-10k"
    notes, store = base / "notes", base / "store"
    if not (base / f"complete-{NOTES}").is_file():
        rng = random.Random(0)
        for n in range(NOTES):
            text = _note(rng, n)  # drawn for every note, so each note's text is always the same
            path = notes / f"team{n % 10}" / f"note-{n:04d}.md"
            if not path.is_file():
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        (notes / "inbox").mkdir(exist_ok=True)
        say(f"ingesting {NOTES} notes (fake model; only new ones are embedded) ...")
        report = ingest(notes, Store.open(store, HashingEmbeddings(), create=True))
        say(f"  {report.summary()}")
        (base / f"complete-{NOTES}").write_text("ok")
    return notes, store


def _p50s(seconds: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {name: stats(values) for name, values in seconds.items()}


def measure_get(calls: int) -> dict[str, Any]:
    """get (40 lines; chunk +- 2) and search, interleaved, on the 10k store."""
    _, store = big_store()
    service = RagbrainService(store, critic=None, embeddings=HashingEmbeddings())
    count = service.stats().chunks
    rng = random.Random(1)
    sides: dict[str, Callable[[int], object]] = {
        "get 40 lines": lambda n: service.get(f"team{n % 10}/note-{n:04d}.md", 20, 59),
        "get chunk +-2": lambda n: service.get(
            f"team{n % 10}/note-{n:04d}.md", chunk=5, neighbours=2
        ),
        "search": lambda n: service.search(
            f"{rng.choice(WORDS)} {rng.choice(WORDS)} note {n}", None, 10
        ),
    }
    check = service.get("team0/note-0000.md", 20, 59)  # what "get 40 lines" asks for n = 0
    assert (check.start_line, check.end_line) == (20, 59), check
    around = service.get("team0/note-0000.md", chunk=5, neighbours=2)
    assert around.chunks[:5] == [3, 4, 5, 6, 7], around.chunks
    for n in range(5):  # warm-up
        for side in sides.values():
            side(n)
    seconds: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for index in range(calls):
        n = rng.randrange(NOTES)
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            sides[name](n)
            seconds[name].append(time.perf_counter() - start)
    result = _p50s(seconds)
    say("  " + ", ".join(f"{k} p50 {v['p50_ms']:.1f} ms" for k, v in result.items()))
    return {"chunks": count, "sides": result, "text_chars_40_lines": len(check.text)}


def _remember_then_search(service: RagbrainService, runs: int, tag: str) -> dict[str, Any]:
    remember_s, search_s, found = [], [], 0
    for n in range(runs):
        title = (
            f"Lesson {tag} {n}: rotate the {WORDS[n % len(WORDS)]} credentials before they expire"
        )
        started = time.perf_counter()
        written = service.remember(
            title, f"Learned on run {n}: {title.lower()}.", "lesson", ["bench"]
        )
        returned = time.perf_counter()
        result = service.search(title, None, None)
        remember_s.append(returned - started)
        search_s.append(time.perf_counter() - returned)
        found += bool(result.chunks) and result.chunks[0].source == written.source
    return {
        "remember": stats(remember_s),
        "search after": stats(search_s),
        "found first": found,
        "runs": runs,
        "max_s_from_return_to_found": max(search_s),
    }


def measure_remember(runs: int) -> dict[str, Any]:
    """remember then search, on the sample notes (real model) and on the 10k store."""
    from ragbrain import Store
    from ragbrain.ingest import ingest
    from ragbrain.models.embeddings import default_embeddings
    from ragbrain.paths import sample_notes

    base = cache_root() / "bench" / "mcp-remember"
    shutil.rmtree(base, ignore_errors=True)
    shutil.copytree(sample_notes(), base / "notes")
    (base / "notes" / "inbox").mkdir()
    ingest(base / "notes", Store.open(base / "store", default_embeddings(), create=True))
    real = RagbrainService(base / "store", allowed=[base / "notes"], inbox=base / "notes" / "inbox")
    real.search("warm up the models", None, None)
    results = {"sample notes, real model, critic on": _remember_then_search(real, runs, "real")}

    notes, store = big_store()
    copy = base / "store-10k"
    shutil.copytree(store, copy)
    # The copy's chunks name the original root; pointing the service at the cached notes
    # folder keeps sources and roots as ingested.
    fake = RagbrainService(
        copy, allowed=[notes], inbox=notes / "inbox", critic=None, embeddings=HashingEmbeddings()
    )
    fake.search("warm up", None, None)
    try:
        results["10k chunks, fake model, critic off"] = _remember_then_search(fake, runs, "fake")
    finally:
        for path in (notes / "inbox").iterdir():
            path.unlink()
    for name, r in results.items():
        say(
            f"  {name}: remember p50 {r['remember']['p50_ms']:.0f} ms, search after p50 "
            f"{r['search after']['p50_ms']:.0f} ms, found first {r['found first']}/{r['runs']}"
        )
    return results


def tools_markdown(get: dict[str, Any], remember: dict[str, Any]) -> str:
    lines = [
        f"### get vs search on a {get['chunks']:,}-chunk store (fake 384-d embedding, critic off)",
        "",
        "| call | p50 ms | p95 ms | calls |",
        "|---|---|---|---|",
    ]
    for name, s in get["sides"].items():
        lines.append(f"| {name} | {s['p50_ms']:.1f} | {s['p95_ms']:.1f} | {int(s['n'])} |")
    for name in ("get 40 lines", "get chunk +-2"):
        p50 = get["sides"][name]["p50_ms"]
        verdict = "within" if p50 <= GET_TARGET_MS else "OVER"
        lines.append("")
        lines.append(f"- {name}: p50 {p50:.1f} ms, {verdict} the {GET_TARGET_MS:.0f} ms target.")
    lines += [
        "",
        "### remember, then search for the note's title",
        "",
        "| store | remember p50 ms | p95 ms | search after p50 ms | p95 ms | found first |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in remember.items():
        lines.append(
            f"| {name} | {r['remember']['p50_ms']:.0f} | {r['remember']['p95_ms']:.0f} | "
            f"{r['search after']['p50_ms']:.0f} | {r['search after']['p95_ms']:.0f} | "
            f"{r['found first']}/{r['runs']} |"
        )
    worst = max(r["max_s_from_return_to_found"] for r in remember.values())
    verdict = "within" if worst <= REMEMBER_TARGET_S else "OVER"
    lines += [
        "",
        f"- Slowest search after a remember returned: {worst:.2f} s, {verdict} the "
        f"{REMEMBER_TARGET_S:.0f} s target.",
    ]
    return "\n".join(lines) + "\n"


def tools(args: argparse.Namespace) -> None:
    """Measure get and remember, print the tables, and write results/mcp_tools.{json,md}."""
    import torch

    torch.set_num_threads(1)
    get = measure_get(args.calls)
    remember = measure_remember(args.remembers)
    table = tools_markdown(get, remember)
    print(table)
    payload = {
        "get": get,
        "remember": remember,
        "targets": {"get_p50_ms": GET_TARGET_MS, "remember_s": REMEMBER_TARGET_S},
    }
    save("mcp_tools", payload, table)


# --- http: one HTTP server for 20 clients against one stdio server ---------------------------

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


def http(args: argparse.Namespace) -> None:
    """Measure both servers, print the table, and write results/mcp_http.{json,md}."""
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


# --- first-search: the first answer after the handshake --------------------------------------

FIRST_QUERY = "Why did the nightly database backup fail?"
#: The same service served with loading started only when the server starts serving (what
#: ``ragbrain mcp`` did before its loading moved ahead of the MCP SDK's import).
LATE = (
    "import sys; from ragbrain.mcp_server import RagbrainService, serve; "
    "serve(RagbrainService(sys.argv[1]))"
)


def first_search_command(side: str, store: Path) -> StdioServerParameters:
    """How each side's server is started."""
    if side == "late":
        return StdioServerParameters(command=sys.executable, args=["-c", LATE, str(store)])
    ragbrain = str(Path(sys.executable).parent / "ragbrain")
    return StdioServerParameters(command=ragbrain, args=["mcp", "--store", str(store)])


async def first_search_run(params: StdioServerParameters) -> tuple[float, float]:
    """Seconds from spawn to ``initialize`` returning, and from then to the first answer."""
    spawned = time.perf_counter()
    with open(os.devnull, "w") as quiet:  # the SDK wants a text stream
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            ready = time.perf_counter()
            result = await session.call_tool("search", {"query": FIRST_QUERY})
            answered = time.perf_counter()
            if result.is_error:
                raise RuntimeError(f"search failed: {result.content}")
    return ready - spawned, answered - ready


def first_search(args: argparse.Namespace) -> None:
    """Both sides in turn (``ragbrain mcp`` as shipped, and ``late``), each run a fresh
    process; print each run with the load average, then the medians."""
    store = args.store if args.store is not None else sample_store()
    sides = ("ragbrain mcp", "late")
    times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    for run in range(args.runs):
        for side in sides if run % 2 == 0 else sides[::-1]:
            load = os.getloadavg()[0]
            init, first = asyncio.run(first_search_run(first_search_command(side, store)))
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


def main() -> None:
    """Parse the subcommand and run its measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("roundtrip", help="search over stdio against the retriever")
    one.add_argument("--rounds", type=int, default=5, help="Passes over the queries.")
    one.add_argument("--threads", type=int, default=1, help="Torch threads on each side.")
    one.set_defaults(run=roundtrip)
    two = commands.add_parser("tools", help="get and remember on a 10k-chunk store")
    two.add_argument("--calls", type=int, default=100, help="Calls of each side of get.")
    two.add_argument("--remembers", type=int, default=10, help="remember-then-search runs.")
    two.set_defaults(run=tools)
    three = commands.add_parser("http", help="one HTTP server for many clients against stdio")
    three.add_argument("--clients", type=int, default=20)
    three.add_argument("--searches", type=int, default=20, help="Searches per client.")
    three.set_defaults(run=http)
    four = commands.add_parser("first-search", help="the first answer after initialize")
    four.add_argument("--runs", type=int, default=5)
    four.add_argument("--store", type=Path, default=None, help="Default: the sample notes.")
    four.set_defaults(run=first_search)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
