"""Types that forgive: case-insensitive type filters everywhere, unknown types named with the
closest known ones (CLI warning, trace note, MCP field), and `ragbrain types`."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragbrain.cli import app
from ragbrain.doctor import diagnose
from ragbrain.errors import UnknownTypeWarning
from ragbrain.ingest import ingest
from ragbrain.lexical.index import LexicalIndex
from ragbrain.mcp_server import RagbrainService
from ragbrain.query.typematch import stored_spellings, unknown_types, unknown_types_message
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.store import Store
from ragbrain.store.lexical import LexicalSearcher
from ragbrain.store.reader import list_types
from tests.support.fakes import NOTES, BagOfWordsEmbeddings

KNOWN = ["SQLite", "sqlite", "postgres", "bug", "decision", "lesson"]


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (["sqlite"], ["SQLite", "sqlite"]),
        (["SQLITE", "Bug"], ["SQLite", "sqlite", "bug"]),
        ([" Lesson "], ["lesson"]),
        (["redis"], ["redis"]),
        (["bug", "redis"], ["bug", "redis"]),
    ],
    ids=["both-spellings", "two-types", "spaces", "unknown-kept-as-given", "known-and-unknown"],
)
def test_stored_spellings(requested: list[str], expected: list[str]) -> None:
    assert stored_spellings(requested, KNOWN) == expected


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (["SQLite"], []),
        (["BUG", "lesson"], []),
        (["sqlit"], [("sqlit", ["SQLite", "sqlite"])]),
        (["decisions"], [("decisions", ["decision"])]),
        (["postgress", "bug"], [("postgress", ["postgres"])]),
        (["kubernetes"], [("kubernetes", [])]),
        (["lessen", "lessen"], [("lessen", ["lesson"])]),
    ],
    ids=["case-only", "two-known", "typo", "plural", "one-of-two", "no-close-match", "repeated"],
)
def test_unknown_types(requested: list[str], expected: list[tuple[str, list[str]]]) -> None:
    assert unknown_types(requested, KNOWN) == expected


def test_the_message_names_the_closest() -> None:
    line = unknown_types_message([("sqlit", ["SQLite"]), ("zzz", [])])
    assert "'sqlit' (closest: SQLite)" in line and "'zzz' (no close match)" in line
    assert unknown_types_message([]) == ""


@pytest.fixture
def mixed_store(tmp_path: Path, write_notes: Callable[[dict[str, str]], Path]) -> Store:
    """Notes of types written in several cases: 'SQLite' and 'sqlite' (front matter)."""
    folder = write_notes(
        {
            **NOTES,
            "db/wal.md": "---\ntype: SQLite\n---\n# WAL mode\n\nSQLite WAL mode lets readers "
            "run while one writer writes.",
            "db/vacuum.md": "---\ntype: sqlite\n---\n# Vacuum\n\nSQLite VACUUM rebuilds the "
            "database file and frees pages.",
        }
    )
    store = Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)
    ingest(folder, store)
    return store


@pytest.mark.parametrize("with_index", [False, True], ids=["store-only", "with-lexical-index"])
@pytest.mark.parametrize("asked", ["sqlite", "SQLITE", "SQLite"])
def test_store_search_matches_types_in_any_case(
    mixed_store: Store, with_index: bool, asked: str
) -> None:
    if with_index:
        LexicalSearcher(mixed_store)  # registers the index of every chunk's type
    hits = mixed_store.search("sqlite database pages writer", 10, [asked])
    assert {h["metadata"]["source"] for h in hits} == {"db/wal.md", "db/vacuum.md"}
    assert {h["metadata"]["type"] for h in hits} == {"SQLite", "sqlite"}  # stored as written


def test_lexical_type_filter_matches_any_case() -> None:
    index = LexicalIndex.build(
        ["a", "b", "c"], ["sqlite wal", "sqlite vacuum", "sqlite bug"], ["SQLite", "sqlite", "bug"]
    )
    assert {h.id for h in index.search("sqlite", 5, ["SQLITE"])} == {"a", "b"}
    assert [h.id for h in index.search("sqlite", 5, ["BUG"])] == ["c"]


def test_the_trace_names_an_unknown_type(mixed_store: Store) -> None:
    retriever = CorrectiveRetriever.from_store(
        mixed_store.location, embeddings=mixed_store.embeddings, critic=None
    )
    output = retriever.run("vacuum", type_filter=["sqlit"])
    (note,) = [n for n in output["notes"] if n.startswith("type filter:")]
    assert note.startswith("type filter: no stored note type matches 'sqlit'")
    assert "closest: SQLite, sqlite" in note
    search_at = next(i for i, n in enumerate(output["notes"]) if "search (" in n)
    assert output["notes"][search_at + 1] == note  # written by the node that filtered
    assert not any(
        "type filter" in n for n in retriever.run("vacuum", type_filter="SQLITE")["notes"]
    )


def test_the_mcp_result_names_an_unknown_type(mixed_store: Store) -> None:
    service = RagbrainService(mixed_store.location, critic=None, embeddings=mixed_store.embeddings)
    result = service.search("backup", ["bugs"], 3)
    assert [(u.type, u.closest) for u in result.unknown_types] == [("bugs", ["bug"])]
    assert service.search("backup", ["BUG"], 3).unknown_types == []


def test_the_cli_warns_on_stderr_and_exits_0(
    mixed_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CLI reads a store with the model the store records: here the fake one.
    # By the module itself: ``ragbrain.store.connect`` names the function ``connect`` too.
    connect_module = importlib.import_module("ragbrain.store.connect")
    fake = BagOfWordsEmbeddings()
    monkeypatch.setattr(connect_module, "_recorded_embeddings", lambda *_: (fake, fake.model_name))
    store = mixed_store.location
    runner = CliRunner()
    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always")
        result = runner.invoke(
            app, ["query", "vacuum", "--type", "Sqlit", "--store", store, "--no-critic"]
        )
    assert result.exit_code == 0, result.output
    # Said once, in the command's words: the retriever's UnknownTypeWarning is silenced.
    assert not [w for w in raised if issubclass(w.category, UnknownTypeWarning)]
    assert "warning: no stored note type matches 'Sqlit' (closest: SQLite, sqlite)" in (
        result.stderr
    )
    quiet = runner.invoke(
        app, ["query", "vacuum", "--type", "SQLITE", "--store", store, "--no-critic"]
    )
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr


def test_types_lists_every_type_with_counts(mixed_store: Store) -> None:
    rows = {r.type: (r.chunks, r.files) for r in list_types(mixed_store.location)}
    assert rows == {
        "bug": (2, 2),
        "decision": (2, 2),
        "lesson": (2, 2),
        "SQLite": (1, 1),
        "sqlite": (1, 1),
    }
    result = CliRunner().invoke(app, ["types", "--store", mixed_store.location])
    assert result.exit_code == 0, result.output
    assert "5 types, 8 chunks" in result.stdout and "SQLite" in result.stdout
    found = {f.check: f.message for f in diagnose(mixed_store.location)}
    assert found["types"].startswith("5 types: bug 2 (2 files), decision 2 (2 files)")
    assert (
        "differing only in case (a filter matches them together): SQLite / sqlite"
        in (found["types"])
    )


def test_types_of_a_missing_store_fails_cleanly(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["types", "--store", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "No ragbrain store" in result.stderr
