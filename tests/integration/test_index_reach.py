"""The vector index keeps every chunk while one process ingests and another searches in a loop.

Chroma writes a collection's HNSW files from whichever process has applied
``hnsw:sync_threshold`` new records, a searching one too; two processes doing so at once (or
one loading the files while another writes them) leave files that mix two graphs. The store
here lowers the threshold from 1000 to 20 so that each round crosses it many times on a
store of a few hundred chunks. After every round a fresh process finds every chunk by its
own vector, and the searcher never failed (docs/many-processes.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragbrain.ingest import ingest
from ragbrain.store import Store
from tests.support.reach_worker import RandomEmbeddings, write_notes

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
NOTES = 150  # 3 chunks each
EDITS = 40  # notes rewritten per round: 120 chunks written and 120 deleted
ROUNDS = 4


def worker(*args: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.reach_worker", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def ask(process: subprocess.Popen[str], line: str) -> str:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()
    return process.stdout.readline().strip()


def reach(store: Path) -> dict[str, object]:
    """What a fresh process finds (it crashing is a failure too)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.reach_worker", "check", str(store)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"the check exited with {done.returncode}: {done.stderr[-2000:]}"
    found: dict[str, object] = json.loads(done.stdout)
    return found


def make_store(tmp_path: Path, notes_count: int = NOTES, threshold: int = 20) -> tuple[Path, Path]:
    """A notes folder of ``notes_count`` notes and its store, whose HNSW files are written
    every ``threshold`` records."""
    notes, folder = tmp_path / "notes", tmp_path / "store"
    write_notes(notes, notes_count)
    opened = Store.open(folder, RandomEmbeddings(), create=True)
    ingest(notes, opened)
    hnsw = {"sync_threshold": threshold, "batch_size": min(threshold, 100)}
    opened.collection.modify(configuration={"hnsw": hnsw})
    return notes, folder


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    yield make_store(tmp_path)


def ingest_while_searching(notes: Path, folder: Path, rounds: int) -> None:
    """``rounds`` ingests by one process while another searches; the index whole after each."""
    count = len(list(notes.glob("*.md")))
    writer, searcher = worker("write", str(folder), str(notes)), worker("search", str(folder))
    try:
        for round_ in range(1, rounds + 1):
            assert ask(searcher, "start") == "started"
            written = ask(writer, f"round {round_} {EDITS}")
            searched = ask(searcher, "stop")
            assert written.startswith("done") and f"{EDITS * 3} chunks added" in written
            assert " errors 0 " in searched, (round_, searched)
            found = reach(folder)
            assert found["chunks"] == count * 3, (round_, found)
            assert found["missing"] == [] and found["unreachable"] == [], (round_, found)
    finally:
        for process in (writer, searcher):
            process.kill()
            process.wait()


def test_an_ingest_while_another_process_searches_keeps_every_chunk(
    store: tuple[Path, Path],
) -> None:
    ingest_while_searching(*store, ROUNDS)
