"""Many processes on one embedded store: resident stdio MCP servers (the SDK's own client), a
terminal `ragbrain ingest` that adds, edits and deletes, and a second server remembering; each
sees the others' writes at its next call, and a fresh process finds every note."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters

from ragbrain.paths import sample_notes
from tests.support.mcp_client import McpClient, connect

REPO = Path(__file__).resolve().parents[2]
RAGBRAIN = Path(sys.executable).parent / "ragbrain"
TIMEOUT = 300


def ragbrain(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """A terminal command (this checkout's code) run in ``cwd``, its output captured."""
    return subprocess.run(
        [str(RAGBRAIN), *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=cwd,
        env=dict(os.environ),
    )


def server(
    stack: ExitStack, store: Path, notes: Path, log: Path, cwd: Path | None = None
) -> McpClient:
    """A resident `ragbrain mcp` over stdio, as an agent window starts it; with ``cwd``, run
    there and given the store and notes relative to it."""
    where = cwd or REPO
    store, notes = (store.relative_to(cwd), notes.relative_to(cwd)) if cwd else (store, notes)
    params = StdioServerParameters(
        command=str(RAGBRAIN),
        args=[
            "mcp",
            "--store",
            str(store),
            "--allow",
            str(notes),
            "--inbox",
            str(notes / "inbox"),
            "--abstain",
            "off",
        ],
        cwd=str(where),
        env=dict(os.environ),  # PYTHONPATH too: the server runs this checkout's code
    )
    errlog = stack.enter_context(log.open("w"))
    return stack.enter_context(connect(params, errlog))


def call(client: McpClient, tool: str, arguments: dict[str, Any], log: Path) -> dict[str, Any]:
    """A tool call that must succeed; its structured result."""
    result = client.call(tool, arguments)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, f"{tool} {arguments} failed: {text}\n{log.read_text()[-3000:]}"
    assert result.structured_content is not None
    return result.structured_content


def sources(client: McpClient, query: str, log: Path) -> list[str]:
    found = call(client, "search", {"query": query, "k": 5}, log)
    return [chunk["source"] for chunk in found["chunks"]]


@pytest.fixture
def notes(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "notes"
    shutil.copytree(sample_notes(), folder)
    (folder / "inbox").mkdir()
    yield folder


NEW = (
    "howto/calibrate-the-zorblax-flux-capacitor.md",
    "# Calibrate the zorblax flux capacitor\n\nTurn the zorblax dial to seven, then wait for "
    "the quindle lamp to glow amber before you tighten the flux bolts.\n",
)
EDITED = "bug/nightly-backup-job-failed-silently.md"
EDIT = "\n\nUpdate: the backup now also pages the vantablack pager rotation on failure.\n"
DELETED = "bug/redis-cache-stampede-after-deploy.md"


@pytest.mark.slow
def test_servers_and_a_terminal_ingest_see_each_others_writes(notes: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = ragbrain("ingest", str(notes), "--store", str(store))
    assert done.returncode == 0, done.stderr
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    with ExitStack() as stack:
        a = server(stack, store, notes, logs[0])
        assert DELETED in sources(a, "redis cache stampede after a deploy", logs[0])

        # A terminal ingest adds a note, edits one and deletes one while A stays up.
        (notes / NEW[0]).write_text(NEW[1], encoding="utf-8")
        with (notes / EDITED).open("a", encoding="utf-8") as handle:
            handle.write(EDIT)
        (notes / DELETED).unlink()
        done = ragbrain("ingest", str(notes), "--store", str(store))
        assert done.returncode == 0, done.stderr

        assert NEW[0] in sources(a, "zorblax flux capacitor quindle lamp", logs[0])
        assert EDITED in sources(a, "vantablack pager rotation", logs[0])
        assert DELETED not in sources(a, "redis cache stampede after a deploy", logs[0])

        # A second agent window: B remembers, then A remembers; each sees the other's note.
        b = server(stack, store, notes, logs[1])
        from_b = call(
            b,
            "remember",
            {
                "title": "Grease the wobbleframe hinges",
                "text": "The wobbleframe hinges squeak after a cold night; grease them monthly.",
                "type": "lesson",
            },
            logs[1],
        )["source"]
        from_a = call(
            a,
            "remember",
            {
                "title": "Feed the snorkelwhip turtle",
                "text": "The snorkelwhip turtle eats kelp pellets twice a day, never bread.",
                "type": "howto",
            },
            logs[0],
        )["source"]
        assert from_b in sources(a, "wobbleframe hinges squeak", logs[0])
        assert from_a in sources(b, "snorkelwhip turtle kelp pellets", logs[1])
        assert NEW[0] in sources(b, "zorblax flux capacitor quindle lamp", logs[1])
        assert call(a, "stats", {}, logs[0])["chunks"] == call(b, "stats", {}, logs[1])["chunks"]

    # A fresh process finds every note written by the others, and the store checks out.
    for query, source in (
        ("wobbleframe hinges squeak", from_b),
        ("snorkelwhip turtle kelp pellets", from_a),
        ("zorblax flux capacitor quindle lamp", NEW[0]),
    ):
        done = ragbrain("query", query, "--store", str(store), "--json", "--abstain", "off")
        assert done.returncode == 0, done.stderr
        assert source in [d["source"] for d in json.loads(done.stdout)["documents"]], query
    doctor = ragbrain("doctor", "--store", str(store))
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
