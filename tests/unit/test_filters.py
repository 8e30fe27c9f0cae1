"""Path, tag and date filters: validation (tables of bad input), matching, the mask that
agrees with it, filtered search against brute force, and the times ingest records."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragbrain import CorrectiveRetriever, Filters, InvalidInputError
from ragbrain.context import RetrievalContext
from ragbrain.ingest import ingest
from ragbrain.query.facets import Facets
from ragbrain.query.filters import MODIFIED_KEY, iso
from ragbrain.store import Store
from ragbrain.store.lexical import LexicalSearcher
from tests.support.fakes import BagOfWordsEmbeddings

MARCH = dt.datetime(2024, 3, 1, tzinfo=dt.UTC).timestamp()
APRIL = dt.datetime(2024, 4, 1, tzinfo=dt.UTC).timestamp()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"paths": "bug"}, r"Unknown filter field\(s\) \['paths'\]"),
        ({"tag": "db"}, r"Unknown filter field\(s\) \['tag'\]"),
        ("bug", "filters must be a mapping"),
        ({"path": []}, "path is an empty list"),
        ({"tags": []}, "tags is an empty list"),
        ({"path": 3}, "path must be a string or a list of strings"),
        ({"path": b"bug"}, "path must be a string or a list of strings"),
        ({"path": ["bug", 3]}, r"path\[1\] must be a string"),
        ({"path": ["bug", " "]}, r"path\[1\] is blank"),
        ({"path": "/etc"}, "not an absolute path"),
        ({"path": "~/notes"}, "not an absolute path"),
        ({"path": "C:\\notes"}, "not an absolute path"),
        ({"path": "bug/../../etc"}, "must not hold '..'"),
        ({"path": "./"}, "names no folder"),
        ({"path": ["x"] * 51}, "the limit is 50"),
        ({"tags": "#"}, "tags is only '#'"),
        ({"tags": ["a,b"]}, r"tags\[0\] holds a comma"),
        ({"tags": [None]}, r"tags\[0\] must be a string"),
        ({"all_tags": True}, "all_tags needs tags"),
        ({"tags": "db", "all_tags": "yes"}, "all_tags must be true or false"),
        ({"after": "last week"}, "after must be an ISO date"),
        ({"before": "2024-13-01"}, "before must be an ISO date"),
        ({"after": 1700000000}, "after must be an ISO date .*not int"),
        ({"after": True}, "after must be an ISO date .*not bool"),
        ({"after": "2024-04-01", "before": "2024-03-01"}, "must be earlier than before"),
        ({"after": "2024-03-01", "before": "2024-03-01"}, "the range holds no time"),
    ],
    ids=[
        "unknown-plural",
        "unknown-singular",
        "not-a-mapping",
        "path-empty-list",
        "tags-empty-list",
        "path-number",
        "path-bytes",
        "path-item-number",
        "path-item-blank",
        "path-absolute",
        "path-home",
        "path-drive",
        "path-dot-dot",
        "path-only-dot",
        "path-too-many",
        "tag-only-hash",
        "tag-comma",
        "tag-none",
        "all-tags-alone",
        "all-tags-string",
        "after-words",
        "before-bad-month",
        "after-epoch",
        "after-bool",
        "range-reversed",
        "range-empty",
    ],
)
def test_bad_filters_are_refused_naming_the_field(value: Any, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        Filters.parse(value)


def test_filters_are_normalized_and_read_back_from_their_spec() -> None:
    parsed = Filters.parse(
        {
            "path": ["bug/", "./ops//x", "bug"],
            "tags": ["#DB", "db", " Ops "],
            "all_tags": True,
            "after": "2024-03-01",
            "before": dt.datetime(2024, 4, 1, 2, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        }
    )
    assert parsed == Filters(("bug", "ops/x"), ("db", "ops"), True, MARCH, APRIL)
    assert Filters.parse(parsed.spec()) == parsed
    assert parsed.spec()["after"] == "2024-03-01T00:00:00Z"
    assert Filters.parse({}) is None and Filters.parse({"path": None}) is None
    assert Filters.parse({"after": dt.date(2024, 3, 1)}) == Filters(after=MARCH)  # no zone: UTC
    assert Filters.parse({"after": "2024-03-01T00:00:00"}) == Filters(after=MARCH)


def meta(source: str, tags: str = "", modified: float | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"source": source, "tags": tags}
    if modified is not None:
        found[MODIFIED_KEY] = modified
    return found


MATCHES: list[tuple[dict[str, Any], dict[str, Any], bool]] = [
    ({"path": "bug"}, meta("bug/x.md"), True),
    ({"path": "bug"}, meta("bug"), True),
    ({"path": "bug"}, meta("bugs/x.md"), False),
    ({"path": "bug"}, meta("bug-old/x.md"), False),
    ({"path": "bug/x.md"}, meta("bug/x.md"), True),
    ({"path": "Bug"}, meta("bug/x.md"), False),
    ({"path": ["ops", "bug"]}, meta("bug/deep/y.md"), True),
    ({"path": "shutil"}, meta("shutil.copy"), True),
    ({"path": "shutil"}, meta("shutil/x.py"), True),
    ({"path": "shutil"}, meta("shutilx"), False),
    ({"path": "shutil"}, meta("shutilx.copy"), False),
    ({"path": "os.path"}, meta("os.path.join"), True),
    ({"path": "os.path"}, meta("os.pathsep"), False),
    ({"tags": "DB"}, meta("a.md", "db, ops"), True),
    ({"tags": "#ops"}, meta("a.md", "db, ops"), True),
    ({"tags": "project"}, meta("a.md", "project/alpha"), True),
    ({"tags": "project/alpha"}, meta("a.md", "project"), False),
    ({"tags": "pro"}, meta("a.md", "project"), False),
    ({"tags": ["db", "x"]}, meta("a.md", "db"), True),
    ({"tags": ["db", "x"], "all_tags": True}, meta("a.md", "db"), False),
    ({"tags": ["db", "ops"], "all_tags": True}, meta("a.md", "ops, db"), True),
    ({"tags": "db"}, meta("a.md"), False),
    ({"after": "2024-03-01"}, meta("a.md", modified=MARCH), True),
    ({"before": "2024-03-01"}, meta("a.md", modified=MARCH), False),
    ({"after": "2024-03-01", "before": "2024-04-01"}, meta("a.md", modified=APRIL - 1), True),
    ({"after": "2024-03-01"}, meta("a.md"), False),
    ({"path": "bug", "tags": "db"}, meta("bug/x.md", "ops"), False),
    ({"path": "bug", "tags": "db", "after": "2024-01-01"}, meta("bug/x.md", "db", MARCH), True),
]


@pytest.mark.parametrize(
    ("spec", "metadata", "expected"),
    MATCHES,
    ids=[
        "path-under",
        "path-itself",
        "path-not-a-longer-name",
        "path-not-a-dash-sibling",
        "path-a-file",
        "path-case-matters",
        "path-any-of-two",
        "path-dotted-child",
        "path-slashed-child",
        "path-dotted-not-a-longer-name",
        "path-dotted-not-a-longer-parent",
        "path-dotted-two-levels",
        "path-dotted-not-a-longer-leaf",
        "tag-any-case",
        "tag-hash",
        "tag-nested-under",
        "tag-not-its-parent",
        "tag-not-a-prefix-of-a-word",
        "tags-any",
        "tags-all-missing-one",
        "tags-all",
        "tag-none-stored",
        "after-inclusive",
        "before-exclusive",
        "range",
        "no-time-recorded",
        "and-fails-on-tags",
        "and-all-pass",
    ],
)
def test_matching_and_the_mask_agree(
    spec: dict[str, Any], metadata: dict[str, Any], expected: bool
) -> None:
    filters = Filters.parse(spec)
    assert filters is not None
    assert filters.matches(metadata) is expected
    # The index's mask gives the same answer, among unrelated chunks.
    others = [meta("bug-old/z.md", "projects", 0.0), meta("zz/y.md", "db/x", APRIL * 2), metadata]
    facets = Facets(
        [m["source"] for m in others],
        [m["tags"] for m in others],
        [m.get(MODIFIED_KEY, float("nan")) for m in others],
    )
    mask = facets.mask(filters)
    assert bool(mask[-1]) is expected
    assert mask.tolist() == [filters.matches(m) for m in others]


def _notes(write_notes: Callable[[dict[str, str]], Path]) -> Path:
    files = {}
    for n in range(24):
        folder = ["bug", "ops/db", "decision", "bugs"][n % 4]
        tags = ["db", "ops", "db, ops", ""][n // 6]
        front = f"---\ntags: [{tags}]\ndate: 2024-0{1 + n % 6}-10\n---\n" if tags else ""
        files[f"{folder}/note{n}.md"] = f"{front}# Note {n}\n\nbackup cache deploy {n} redis"
    return write_notes(files)


@pytest.fixture
def scoped(tmp_path: Path, write_notes: Callable[[dict[str, str]], Path]) -> Store:
    store = Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)
    ingest(_notes(write_notes), store)
    return store


SCOPES = [
    {"path": "bug"},
    {"path": ["ops", "decision"]},
    {"tags": "db"},
    {"tags": ["db", "ops"], "all_tags": True},
    {"after": "2024-03-01", "before": "2024-05-01"},
    {"path": "bug", "tags": "ops"},
    {"path": "nowhere"},
]


@pytest.mark.parametrize("with_index", [True, False], ids=["index", "no-index"])
@pytest.mark.parametrize("spec", SCOPES, ids=[str(s) for s in SCOPES])
def test_filtered_search_is_the_brute_force_top_k(
    scoped: Store, spec: dict[str, Any], with_index: bool
) -> None:
    if with_index:
        LexicalSearcher(scoped)  # registers the index of the whole store
    filters = Filters.parse(spec)
    assert filters is not None
    every = scoped.search("backup redis", 100)
    expected = [h["distance"] for h in every if filters.matches(h["metadata"])][:5]

    got = scoped.search("backup redis", 5, None, filters)

    # Distances, not ids: the notes' texts differ in one number, so some chunks tie.
    assert [h["distance"] for h in got] == pytest.approx(expected, abs=1e-6)
    assert all(filters.matches(h["metadata"]) for h in got)


def test_the_lexical_side_is_filtered_the_same_way(scoped: Store) -> None:
    index = LexicalSearcher(scoped).index
    filters = Filters(paths=("ops",), tags=("db",))
    found = index.search("backup redis", 50, None, filters)
    sources = {h["metadata"]["source"] for h in scoped.hits_by_id("x", [h.id for h in found])}
    assert found and all(s.startswith("ops/") for s in sources)
    assert len(found) == int(index.scope_mask(None, filters).sum())


def test_the_retriever_keeps_the_filters_through_the_fallback(scoped: Store) -> None:
    LexicalSearcher(scoped)
    retriever = CorrectiveRetriever.from_store(  # off-topic refusal is tested elsewhere
        scoped.folder,
        embeddings=BagOfWordsEmbeddings(),
        critic=None,
        context=RetrievalContext(abstain="off"),
    )
    # No chunk is of type 'lesson': the gate judges 'poor', the fallback drops the type only.
    out = retriever.run("backup redis", type_filter="lesson", filters={"path": "bug"})

    assert out["fallback"] and out["documents"]
    assert all(d.metadata["source"].startswith("bug/") for d in out["documents"])
    notes = "\n".join(out["notes"])
    assert "filters (path under 'bug'): 6 of 24 chunks in scope, 0 of them of the types" in notes
    assert "the path, tag and date filters kept" in notes
    with pytest.raises(InvalidInputError, match="Unknown filter field"):
        retriever.invoke("backup", filters={"folder": "bug"})
    with pytest.raises(ValueError, match="path is an empty list"):  # pydantic wraps it
        CorrectiveRetriever(graph=retriever.graph, filters={"path": []})
    default = CorrectiveRetriever(
        graph=retriever.graph,
        filters=Filters(paths=("decision",)),
        context=RetrievalContext(abstain="off"),
    )
    assert {d.metadata["source"].split("/")[0] for d in default.invoke("backup redis")} == {
        "decision"
    }


def test_ingest_records_times_and_rewrites_them_in_place(
    tmp_path: Path, write_notes: Callable[[dict[str, str]], Path]
) -> None:
    notes = write_notes(
        {
            "a.md": "---\ndate: 2024-03-05\n---\n# A\n\nbackup",
            "b.md": "# B\n\nredis cache",
            "c.md": "---\ndate: not a date\n---\n# C\n\ncache",
        }
    )
    os.utime(notes / "b.md", (MARCH, MARCH))
    os.utime(notes / "c.md", (APRIL, APRIL))
    store = Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)
    ingest(notes, store)
    times = {s: m[MODIFIED_KEY] for s, m in _by_source(store).items()}
    assert times == {
        "a.md": int(dt.datetime(2024, 3, 5, tzinfo=dt.UTC).timestamp()),
        "b.md": int(MARCH),
        "c.md": int(APRIL),  # a date that is not one: the file's time stands
    }
    ids = set(store.all_ids())

    os.utime(notes / "b.md", (APRIL, APRIL))  # touched: same text, new time
    report = ingest(notes, store)

    assert (report.added, report.deleted, report.retimed) == (0, 0, 1)
    assert report.summary().endswith(
        "3 unchanged, 0 deleted, 0 files skipped, 1 chunks' times rewritten in place"
    )
    assert set(store.all_ids()) == ids  # nothing re-embedded
    assert _by_source(store)["b.md"][MODIFIED_KEY] == int(APRIL)
    searcher = LexicalSearcher(store)
    april = Filters(after=APRIL)
    assert [h["metadata"]["source"] for h in store.search("redis cache", 5, None, april)] == [
        "b.md",
        "c.md",
    ] or sorted(h["metadata"]["source"] for h in store.search("cache", 5, None, april)) == [
        "b.md",
        "c.md",
    ]
    assert int(searcher.index.scope_mask(None, april).sum()) == 2


def _by_source(store: Store) -> dict[str, dict[str, Any]]:
    return {m["source"]: m for page in store.pages(["metadatas"]) for m in page["metadatas"] or []}


def test_a_store_ingested_before_times_were_recorded_says_so(scoped: Store) -> None:
    # As an older ingest wrote them: no `modified` key.
    ids = scoped.all_ids()
    scoped.update_metadata(ids, [{MODIFIED_KEY: None}] * len(ids))  # None deletes a key
    from ragbrain.store.lexical import index_path

    index_path(scoped).unlink()
    retriever = CorrectiveRetriever.from_store(  # off-topic refusal is tested elsewhere
        scoped.folder,
        embeddings=BagOfWordsEmbeddings(),
        critic=None,
        context=RetrievalContext(abstain="off"),
    )

    out = retriever.run("backup", filters={"after": "2024-01-01"})

    assert out["documents"] == []
    notes = "\n".join(out["notes"])
    assert "24 chunks have no recorded time" in notes and "`ragbrain ingest`" in notes
    assert retriever.run("backup", filters={"path": "bug"})["documents"]  # others still work


def test_iso_is_utc() -> None:
    assert iso(MARCH) == "2024-03-01T00:00:00Z"


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ({"path": "bgu"}, "no stored source lies under 'bgu' (closest: 'bug'"),
        ({"path": "ops/dbb"}, "no stored source lies under 'ops/dbb' (closest: 'ops/db'"),
        ({"path": "zzzz"}, "no stored source lies under 'zzzz' (no close match)"),
        ({"tags": "dbb"}, "no stored tag matches 'dbb' (closest: 'db'"),
    ],
    ids=["folder-typo", "subfolder-typo", "nothing-close", "tag-typo"],
)
def test_a_filter_that_matches_nothing_names_the_closest(
    scoped: Store, spec: dict[str, Any], said: str
) -> None:
    LexicalSearcher(scoped)
    retriever = CorrectiveRetriever.from_store(  # off-topic refusal is tested elsewhere
        scoped.folder,
        embeddings=BagOfWordsEmbeddings(),
        critic=None,
        context=RetrievalContext(abstain="off"),
    )
    out = retriever.run("backup", filters=spec)
    assert out["documents"] == []
    assert said in "\n".join(out["notes"])


def test_a_filter_that_matches_something_names_nothing(scoped: Store) -> None:
    index = LexicalSearcher(scoped).index
    # 'bug' matches; 'bugs' too (its own folder): neither is unmatched, though 'bug' is a
    # prefix of 'bugs' as a string.
    assert index.unmatched(Filters(paths=("bug", "bugs"), tags=("db",))) == []


def test_a_long_lived_searcher_sees_times_another_writer_rewrote(
    tmp_path: Path,
    write_notes: Callable[[dict[str, str]], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragbrain.store import search

    notes = write_notes({"a.md": "# A\n\nbackup", "b.md": "# B\n\nredis"})
    os.utime(notes / "a.md", (MARCH, MARCH))
    ingest(notes, Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True))
    server = Store.open(tmp_path / "store", BagOfWordsEmbeddings())
    searcher = LexicalSearcher(server)  # as a running MCP server holds it
    april = Filters(after=APRIL)
    assert [h["metadata"]["source"] for h in server.search("backup", 5, None, april)] == ["b.md"]
    monkeypatch.setattr(search, "RECHECK_SECONDS", 0.0)

    os.utime(notes / "a.md", (APRIL, APRIL))  # touched, text unchanged
    report = ingest(notes, Store.open(tmp_path / "store", BagOfWordsEmbeddings()))

    assert (report.added, report.retimed) == (0, 1)
    assert int(searcher.index.scope_mask(None, april).sum()) == 2
    found = sorted(h["metadata"]["source"] for h in server.search("backup", 5, None, april))
    assert found == ["a.md", "b.md"]


def test_hard_types_match_and_read_back() -> None:
    filters = Filters.parse({"types": ["Module", "class"], "path": "shutil"})
    assert filters is not None and filters.types == ("module", "class")
    assert Filters.parse(filters.spec()) == filters
    assert filters.matches({"type": "MODULE", "source": "shutil.copy"})
    assert not filters.matches({"type": "function", "source": "shutil.copy"})
    assert filters.with_types(["class", "function"]).types == ("class",)
    with pytest.raises(InvalidInputError, match="share no type"):
        filters.with_types(["function"])
    assert "type 'module' or 'class' (hard)" in filters.describe()


def test_a_hard_type_filter_holds_through_the_fallback(scoped: Store) -> None:
    LexicalSearcher(scoped)
    retriever = CorrectiveRetriever.from_store(
        scoped.folder,
        embeddings=BagOfWordsEmbeddings(),
        critic=None,
        context=RetrievalContext(abstain="off"),
    )
    # The soft type 'lesson' matches nothing, so the fallback runs; the hard 'types' holds.
    out = retriever.run("backup redis", type_filter="lesson", filters={"types": "decision"})
    assert out["fallback"] and out["documents"]
    assert {d.metadata["type"] for d in out["documents"]} == {"decision"}
