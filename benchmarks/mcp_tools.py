"""The MCP tools `get` and `remember` on a 10k-chunk store, side by side with `search`.

`get`: a 40-line range and a chunk with 2 neighbours on each side, against a `search` of
the same service, on one store of 10,000 chunks (1,125 generated notes of about nine chunks,
ingested by the real splitter with their line spans). The store's vectors come from a
deterministic 384-dimension hashing embedding (the real model would only make building it
slower: `get` embeds nothing; the `search` column includes embedding each query with the
fake model, ~0.1 ms, instead of MiniLM's ~5-15 ms, and runs with the critic off), so the
search column is the store's and the pipeline's own cost.

`remember` then `search`: the service as `ragbrain mcp --inbox` runs it, with the real
model and the shipped critic, on the bundled sample notes; how long `remember` takes, how
long the next `search` for the note's title takes, and whether that search returns the note
first. Also on the 10k store (fake model, critic off), where ingesting one note reads the
ids of all chunks of its root.

    python -m benchmarks.mcp_tools [--calls 100] [--remembers 10]
"""

from __future__ import annotations

import argparse
import hashlib
import math
import random
import re
import shutil
import time
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from benchmarks.common import WORDS, save, say, stats
from ragbrain.mcp_server import RagbrainService
from ragbrain.paths import cache_root

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
    from ragbrain.ingest import ingest
    from ragbrain.store import Store

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
    sides = {
        "get 40 lines": lambda n: service.get(f"team{n % 10}/note-{n:04d}.md", 20, 59),
        "get chunk +-2": lambda n: service.get(
            f"team{n % 10}/note-{n:04d}.md", chunk=5, neighbours=2
        ),
        "search": lambda n: service.search(
            f"{rng.choice(WORDS)} {rng.choice(WORDS)} note {n}", None, 10
        ),
    }
    check = sides["get 40 lines"](0)
    assert (check.start_line, check.end_line) == (20, 59), check
    around = sides["get chunk +-2"](0)
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
    from ragbrain.ingest import ingest
    from ragbrain.models.embeddings import default_embeddings
    from ragbrain.paths import sample_notes
    from ragbrain.store import Store

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


def markdown(get: dict[str, Any], remember: dict[str, Any]) -> str:
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


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure, print the tables, and write results/mcp_tools.{json,md}."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=100, help="Calls of each side of get.")
    parser.add_argument("--remembers", type=int, default=10, help="remember-then-search runs.")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    get = measure_get(args.calls)
    remember = measure_remember(args.remembers)
    table = markdown(get, remember)
    print(table)
    payload = {
        "get": get,
        "remember": remember,
        "targets": {"get_p50_ms": GET_TARGET_MS, "remember_s": REMEMBER_TARGET_S},
    }
    save("mcp_tools", payload, table)
    return payload


if __name__ == "__main__":
    main()
