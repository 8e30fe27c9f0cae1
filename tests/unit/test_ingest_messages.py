"""What ingest tells people: an interrupted run (what was written, how to finish, exit 130, a
lexical index in step, queries that say so), link-list files warned about once, every message
once, and text in brackets printed as it is."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragbrain.cli import app
from ragbrain.graph import build_graph
from ragbrain.ingest import IngestInterrupted, ingest
from ragbrain.ingest import run as run_module
from ragbrain.lexical.index import LexicalIndex
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.store import Store
from ragbrain.store.lexical import LexicalSearcher, index_path
from tests.support.fakes import NOTES, BagOfWordsEmbeddings

runner = CliRunner()


@pytest.fixture
def ctrl_c_on_second_write(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Two chunks a batch, and Ctrl-C during the second batch's write."""
    monkeypatch.setattr(run_module, "EMBED_BATCH", 2)
    calls = {"n": 0}
    upsert = Store.upsert

    def interrupted_upsert(self: Store, *args: Any, **kwargs: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        upsert(self, *args, **kwargs)

    monkeypatch.setattr(Store, "upsert", interrupted_upsert)
    yield
    monkeypatch.setattr(Store, "upsert", upsert)


@pytest.fixture
def fake_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ragbrain ingest` writing with the fake model (no model loads)."""
    import ragbrain.cli.notes

    def open_fake(notes: Path | None, store: Path | None, *_: object) -> Store:
        assert store is not None
        return Store.open(store, BagOfWordsEmbeddings(), create=True)

    monkeypatch.setattr(ragbrain.cli.notes, "_open_for_writing", open_fake)


def test_an_interrupted_ingest_keeps_its_lexical_index_in_step_and_says_so(
    notes_dir: Path, tmp_path: Path, ctrl_c_on_second_write: None
) -> None:
    store = Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)
    with pytest.raises(IngestInterrupted) as stopped:
        ingest(notes_dir, store)

    report = stopped.value.report
    assert (report.added, report.deleted, report.interrupted) == (2, 0, True)
    assert store.count() == 2
    assert sorted(LexicalIndex.load(index_path(store)).ids) == sorted(store.all_ids())
    (entry,) = store.ledger().unfinished
    assert (entry.written, entry.total, entry.interrupted) == (2, len(NOTES), True)
    run = CorrectiveRetriever(graph=build_graph(store, lexical=LexicalSearcher(store))).run("x")
    said = [n for n in run["notes"] if "interrupted" in n]
    assert said and f"run `ragbrain ingest {notes_dir}` again" in said[0]


def test_the_next_ingest_finishes_and_the_queries_stop_saying_so(
    notes_dir: Path, tmp_path: Path, ctrl_c_on_second_write: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)
    with pytest.raises(IngestInterrupted):
        ingest(notes_dir, store)
    monkeypatch.undo()

    report = ingest(notes_dir, store)

    assert (report.added, report.unchanged) == (len(NOTES) - 2, 2)
    assert store.ledger().unfinished == ()
    run = CorrectiveRetriever(graph=build_graph(store, lexical=LexicalSearcher(store))).run("x")
    assert not [n for n in run["notes"] if "interrupted" in n]


def test_ctrl_c_on_the_command_line_says_what_was_written_and_exits_130(
    notes_dir: Path, tmp_path: Path, ctrl_c_on_second_write: None, fake_cli: None
) -> None:
    store = tmp_path / "store"
    result = runner.invoke(app, ["ingest", str(notes_dir), "--store", str(store)])
    assert result.exit_code == 130, result.output
    assert "interrupted: 2 new chunks written, nothing deleted" in result.stderr
    assert f"ragbrain ingest {notes_dir} --store {store}" in result.stderr.replace("\n", " ")


def test_a_link_list_is_warned_about_once_with_its_ignore_line(
    write_notes: Callable[[dict[str, str]], Path], tmp_path: Path, fake_cli: None
) -> None:
    notes = {**NOTES, "bad.md": "caf\udcff".encode("utf-8", "surrogateescape").decode("latin-1")}
    links = "\n".join(f"- [{Path(p).stem}]({p})" for p in NOTES for _ in range(4))
    root = write_notes({**notes, "README.md": f"# Index\n\n{links}\n"})
    (root / "bad.md").write_bytes(b"---\ntitle: [unclosed\n---\nbody")
    args = ["ingest", str(root), "--store", str(tmp_path / "store")]

    first = runner.invoke(app, args)
    again = runner.invoke(app, args)

    assert first.exit_code == 0, first.output
    assert first.stderr.count("README.md: mostly links") == 1
    assert f"add `/README.md` to {root / '.ragbrainignore'}" in first.stderr.replace("\n", " ")
    assert first.stderr.count("skipped ") == 1  # said once, not also while running
    assert "mostly links" not in again.stderr  # unchanged: not written, not warned again
    (root / ".ragbrainignore").write_text("/README.md\n")
    pruned = runner.invoke(app, args)
    assert "1 excluded" in pruned.stdout and "mostly links" not in pruned.stderr


def test_text_in_brackets_is_printed_as_it_is(
    notes_dir: Path, tmp_path: Path, fake_cli: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "x[weird]" / "store"
    done = runner.invoke(app, ["ingest", str(notes_dir), "--store", str(store)])
    assert done.exit_code == 0, done.output
    assert f"-> {store}" in done.stdout

    missing = runner.invoke(app, ["query", "redis", "--store", str(tmp_path / "[x]" / "none")])
    assert missing.exit_code == 2
    assert f"No ragbrain store at {tmp_path / '[x]' / 'none'}" in missing.stderr

    monkeypatch.setitem(sys.modules, "mcp", None)  # the [mcp] extra is not installed
    for name in [n for n in sys.modules if n.startswith("ragbrain.mcp_server")]:
        monkeypatch.delitem(sys.modules, name)
    no_sdk = runner.invoke(app, ["mcp", "--store", str(store)])
    assert no_sdk.exit_code == 1
    assert "pip install 'ragbrain[mcp]'" in no_sdk.stderr
