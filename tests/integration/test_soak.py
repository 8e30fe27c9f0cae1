"""A bounded soak on one embedded store: three resident stdio MCP servers (one started with
relative paths) and terminal ingests (relative paths), seeded random adds, edits, deletes,
remembers and searches, then a `remember` while another writer holds the store. Every call
succeeds, each write is seen by another process at its next call, and at the end a fresh
process finds every note on disk by its own words (dense and BM25) and `doctor` finds the
store whole. Beside it: 10 ingests while another process searches, the index whole after
each."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from ragbrain.store.processes import writer_lock
from tests.integration.test_index_reach import ingest_while_searching, make_store
from tests.integration.test_many_processes import REPO, call, ragbrain, server, sources
from tests.support.mcp_client import McpClient

pytestmark = [pytest.mark.slow]

SEED = 45
STEPS = 24
#: The soak stops taking new steps after this long (a loaded machine runs fewer of them).
BUDGET_S = 150.0
WORDS = [
    "otter",
    "heron",
    "badger",
    "lynx",
    "walrus",
    "gecko",
    "ibis",
    "marten",
    "tapir",
    "quokka",
    "narwhal",
    "pangolin",
    "amber",
    "cobalt",
    "crimson",
    "ochre",
    "teal",
    "violet",
    "saffron",
    "umber",
    "jade",
    "scarlet",
    "indigo",
    "ivory",
    "lathe",
    "chisel",
    "trowel",
    "awl",
    "sextant",
    "anvil",
    "bellows",
    "plane",
    "caliper",
    "vise",
    "mallet",
    "rasp",
    "oslo",
    "quito",
    "hanoi",
    "lima",
    "perth",
    "dakar",
    "riga",
    "tunis",
    "accra",
    "baku",
    "minsk",
    "sofia",
]


def phrase(rng: random.Random) -> str:
    """A sentence of rare word combinations: its own words find it and nothing else."""
    words = rng.sample(WORDS, 6)
    return f"The {words[0]} {words[1]} keeps a {words[2]} {words[3]} near {words[4]} {words[5]}."


def remember_under_a_held_lock(
    servers: list[McpClient], logs: list[Path], store: Path, notes: Path, rng: random.Random
) -> dict[str, str]:
    """While another writer holds the store: `remember` answers at once, queued, with no
    lock error; a retry finds the same note; once the lock frees, the note is indexed and
    another server finds it; one file on disk."""
    text = phrase(rng)
    note = {"title": "Soak note under the lock", "text": text, "type": "lesson"}
    with writer_lock(store):
        first = call(servers[0], "remember", note, logs[0])
        again = call(servers[0], "remember", note, logs[0])
    assert first["queued"] and again["queued"] and again["already"], (first, again)
    assert again["source"] == first["source"]
    deadline = time.monotonic() + 120
    while first["source"] not in sources(servers[1], text, logs[1]):
        assert time.monotonic() < deadline, "the queued note was never indexed"
        time.sleep(0.5)
    assert [p.name for p in (notes / "inbox").glob("soak-note-under-the-lock*")] == [
        "soak-note-under-the-lock.md"
    ]
    return {first["source"]: text}


@pytest.mark.slow
def test_ten_ingests_while_another_process_searches_keep_every_chunk(tmp_path: Path) -> None:
    """The issue's target: 10 rounds of an ingest while another process searches in a loop,
    on a store of a few thousand chunks; the index reaches every chunk after each round."""
    ingest_while_searching(*make_store(tmp_path, notes_count=700), rounds=10)


@pytest.mark.slow
def test_three_servers_and_terminal_ingests_soak(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    notes, store = tmp_path / "notes", tmp_path / "store"
    (notes / "inbox").mkdir(parents=True)
    (notes / "soak").mkdir()
    texts: dict[str, str] = {}
    for i in range(4):
        texts[f"soak/seed-{i}.md"] = phrase(rng)
        (notes / f"soak/seed-{i}.md").write_text(texts[f"soak/seed-{i}.md"], encoding="utf-8")
    done = ragbrain("ingest", "notes", "--store", "store", cwd=tmp_path)  # relative paths
    assert done.returncode == 0, done.stderr
    logs = [tmp_path / f"server-{i}.log" for i in range(3)]
    started = time.monotonic()
    steps, seen_by_another = 0, 0
    with ExitStack() as stack:
        servers = [
            server(stack, store, notes, log, cwd=tmp_path if i == 0 else None)
            for i, log in enumerate(logs)
        ]

        def writer_and_reader() -> tuple[int, int]:
            first = rng.randrange(3)
            return first, (first + rng.randrange(1, 3)) % 3

        while steps < STEPS and time.monotonic() - started < BUDGET_S:
            steps += 1
            op = rng.choice(["add", "edit", "delete", "remember", "search", "terminal"])
            w, r = writer_and_reader()
            if op in ("add", "edit", "terminal") or (op == "delete" and len(texts) > 3):
                if op == "delete":
                    source = rng.choice(sorted(s for s in texts if s.startswith("soak/")))
                    (notes / source).unlink()
                    gone = texts.pop(source)
                else:
                    source = (
                        rng.choice(sorted(s for s in texts if s.startswith("soak/")))
                        if op == "edit"
                        else f"soak/note-{steps}.md"
                    )
                    texts[source] = phrase(rng)
                    (notes / source).write_text(texts[source], encoding="utf-8")
                if op == "terminal":  # a writer outside every server
                    done = ragbrain("ingest", "notes", "--store", "store", cwd=tmp_path)
                    assert done.returncode == 0, done.stderr
                else:
                    call(servers[w], "ingest", {"path": str(notes)}, logs[w])
                if op == "delete":
                    assert source not in sources(servers[r], gone, logs[r]), (steps, op)
                else:
                    assert source in sources(servers[r], texts[source], logs[r]), (steps, op)
                seen_by_another += 1
            elif op == "remember":
                text = phrase(rng)
                source = call(
                    servers[w],
                    "remember",
                    {"title": f"Soak note {steps}", "text": text, "type": "lesson"},
                    logs[w],
                )["source"]
                texts[source] = text
                assert source in sources(servers[r], text, logs[r]), (steps, op)
                seen_by_another += 1
            else:
                source = rng.choice(sorted(texts))
                assert source in sources(servers[r], texts[source], logs[r]), (steps, op)
        texts.update(remember_under_a_held_lock(servers, logs, store, notes, rng))
        counts = {call(s, "stats", {}, log)["chunks"] for s, log in zip(servers, logs, strict=True)}
        assert len(counts) == 1  # all three servers see the same store

    assert steps >= 8 and seen_by_another >= 4, (steps, seen_by_another)
    checked = subprocess.run(
        [sys.executable, "-m", "tests.support.store_check", str(store), str(notes)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert checked.returncode == 0, checked.stderr
    found = json.loads(checked.stdout)
    assert found["notes"] == len(list(notes.rglob("*.md")))
    assert found["dense_missed"] == [] and found["bm25_missed"] == [], found
    doctor = ragbrain("doctor", "--store", str(store))
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
