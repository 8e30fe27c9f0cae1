"""Ingestion killed with SIGKILL at random points, then rerun: nothing lost, nothing doubled."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ragbrain.errors import StoreLockedError
from ragbrain.ingest import ingest
from ragbrain.store import Store
from ragbrain.store.ledger import LOCK_FILE
from tests.support.fakes import BagOfWordsEmbeddings

pytestmark = [pytest.mark.slow, pytest.mark.faults]

TRIALS = 5
ROOT = Path(__file__).resolve().parents[2]
VOCAB = [
    "redis",
    "cache",
    "backup",
    "deploy",
    "alembic",
    "celery",
    "queue",
    "timeout",
    "helm",
    "rollback",
    "index",
    "vector",
    "postgres",
    "migration",
    "alert",
    "credentials",
    "schema",
    "replica",
    "shard",
    "latency",
    "budget",
    "incident",
]


class Worker:
    """``python -m tests.support.ingest_worker``: one line in, one line out."""

    def __init__(self, store: Path, notes: Path) -> None:
        # This checkout's code (src) and its tests package, whatever is installed.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.ingest_worker", str(store), str(notes)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.read() == "ready"

    def read(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, f"the worker died (exit code {self.process.poll()})"
        return line.strip()

    def send(self, command: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.read()

    def dump(self) -> dict[str, Any]:
        state: dict[str, Any] = json.loads(self.send("dump"))
        return state

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def quit(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("quit\n")
        self.process.stdin.close()
        self.process.wait(timeout=60)


def write_notes(root: Path, rng: random.Random, names: list[str]) -> None:
    """(Re)write each named note with fresh random text of one to four chunks."""
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        paragraphs = [" ".join(rng.choices(VOCAB, k=rng.randint(40, 160))) for _ in range(3)]
        path.write_text(f"# {name}\n\n" + "\n\n".join(paragraphs), encoding="utf-8")


def mutate(root: Path, rng: random.Random, serial: int) -> None:
    """Change some notes, delete some, add some: every kind of write and delete happens."""
    existing = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
    changed = rng.sample(existing, k=len(existing) // 4)
    write_notes(root, rng, changed)
    for name in rng.sample([n for n in existing if n not in changed], k=len(existing) // 8):
        (root / name).unlink()
    write_notes(root, rng, [f"new/{serial}-{i}.md" for i in range(4)])


def clean_run(notes: Path, folder: Path) -> dict[str, list[str]]:
    """What an uninterrupted ingest of ``notes`` into an empty store holds."""
    store = Store.open(folder, BagOfWordsEmbeddings(), create=True)
    ingest(notes, store)
    got = store.collection.get(include=["documents", "metadatas"])
    return {
        id_: [text, meta["source"]]
        for id_, text, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
    }


def by_source(chunks: dict[str, list[str]]) -> dict[str, set[str]]:
    grouped: dict[str, set[str]] = {}
    for id_, (_, source) in chunks.items():
        grouped.setdefault(source, set()).add(id_)
    return grouped


def test_sigkill_at_random_points_loses_and_duplicates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGBRAIN_LOCK_WAIT", "0.05")  # this process's writers wait so long
    rng = random.Random(20240606)
    notes, store = tmp_path / "notes", tmp_path / "store"
    write_notes(notes, rng, [f"{kind}/{i}.md" for kind in ("bug", "lesson") for i in range(10)])

    worker = Worker(store, notes)
    assert worker.send("ingest") == "start"
    first = worker.read()
    duration = float(first.split()[1])
    previous: dict[str, list[str]] = worker.dump()["chunks"]
    kills: list[float] = []
    for trial in range(TRIALS):
        mutate(notes, rng, trial)
        expected = clean_run(notes, tmp_path / f"clean-{trial}")
        # Kill the writer somewhere between its first read and a little after its last write.
        delay = rng.uniform(0.0, duration * 1.2)
        assert worker.send("ingest") == "start"
        if trial == 0:  # meanwhile a second writer waits its bounded time, then is refused
            started = time.monotonic()
            while not (store / LOCK_FILE).read_text() and time.monotonic() - started < 5.0:
                time.sleep(0.005)  # the worker holds the lock once it names itself there
            with pytest.raises(StoreLockedError, match="locked by another writer"):
                ingest(notes, Store.open(store, BagOfWordsEmbeddings()))
            assert time.monotonic() - started < 5.0
        time.sleep(delay)
        worker.kill()
        kills.append(delay)

        worker = Worker(store, notes)
        crashed = worker.dump()["chunks"]
        # A crash leaves a superset: each file still has all of its old chunks or all of its
        # new ones, and nothing is there that belongs to neither.
        old, new = by_source(previous), by_source(expected)
        for source, ids in new.items():
            assert ids <= set(crashed) or old.get(source, set()) <= set(crashed), (trial, source)
        assert set(crashed) <= set(previous) | set(expected), trial

        assert worker.send("ingest") == "start"
        report = worker.read()
        assert report.startswith("done"), report
        state = worker.dump()
        assert state["chunks"] == expected, f"trial {trial} (killed after {delay:.2f}s)"
        assert state["count"] == len(expected)  # no duplicates: count is the number of ids
        assert state["missed"] == []  # every chunk is found first by its own text
        previous = state["chunks"]
    worker.quit()
    assert len(kills) == TRIALS
    print(
        f"SIGKILL trials: {TRIALS}, kill delays {[round(k, 2) for k in kills]}s, "
        f"clean ingest {duration:.2f}s: 0 lost, 0 duplicated"
    )
