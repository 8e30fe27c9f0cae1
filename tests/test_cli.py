"""The command line, run in-process with the real model: ingest, query, errors, demo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragbrain.cli import app

pytestmark = pytest.mark.slow
runner = CliRunner()


def test_ingest_then_query_as_json(notes_dir: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    first = runner.invoke(app, ["ingest", str(notes_dir), "--store", store])
    assert first.exit_code == 0, first.output
    assert "6 files: 6 chunks added, 0 unchanged, 0 deleted" in first.stdout
    again = runner.invoke(app, ["ingest", str(notes_dir), "--store", store])
    assert "0 chunks added, 6 unchanged, 0 deleted" in again.stdout

    result = runner.invoke(
        app, ["query", "why did the nightly backup fail", "--store", store, "--json", "--k", "2"]
    )
    assert result.exit_code == 0, result.output
    run = json.loads(result.stdout)
    assert run["depth"] == 2 and run["verdict"] in ("good", "poor")
    assert run["documents"][0]["source"] == "bug/backup.md"
    assert {"distance", "critic_score", "from_fallback", "text"} <= set(run["documents"][0])


def test_query_prints_the_decisions(notes_dir: Path, tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    runner.invoke(app, ["ingest", str(notes_dir), "--store", store, "--type", "note"])
    result = runner.invoke(app, ["query", "nightly backup", "--store", store, "--type", "decision"])
    assert result.exit_code == 0, result.output
    assert "verdict poor" in result.stdout and "fallback yes" in result.stdout
    assert "(fallback)" in result.stdout  # every note is now type 'note': the fallback finds it


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["query", "redis", "--store", "{tmp}/missing"], "No ragbrain store at"),
        (["query", "   ", "--store", "{store}"], "query is empty"),
        (["query", "redis", "--k", "0", "--store", "{store}"], "k must be in 1..100"),
        (["ingest", "{tmp}/no-such-notes", "--store", "{store}"], "no such file or folder"),
    ],
    ids=["missing-store", "empty-query", "k0", "missing-notes"],
)
def test_errors_exit_2_with_a_message(
    args: list[str], message: str, notes_dir: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    runner.invoke(app, ["ingest", str(notes_dir), "--store", str(store)])
    filled = [a.format(tmp=tmp_path, store=store) for a in args]
    result = runner.invoke(app, filled)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_demo_shows_every_path(tmp_path: Path) -> None:
    result = runner.invoke(app, ["demo", "--store", str(tmp_path / "demo")])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "depth 5 (complexity 0)" in out
    assert "depth 10" in out
    assert "fallback yes" in out and "(fallback)" in out
    assert "verdict poor" in out and "verdict good" in out
    assert sum(line.startswith("query: ") for line in out.splitlines()) == 5


def test_graph_prints_mermaid() -> None:
    result = runner.invoke(app, ["graph"])
    assert (
        result.exit_code == 0
        and "assess_quality -. &nbsp;poor&nbsp; .-> fallback_search" in result.stdout
    )
