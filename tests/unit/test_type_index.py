"""Type-filtered search with the lexical index's types: no per-id lookups, rare types' vectors
kept on disk for the next process, and never a stale answer after a write."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ragbrain.lexical.index import LexicalIndex
from ragbrain.store import Store, search
from ragbrain.store.lexical import LexicalSearcher
from tests.support.fakes import BagOfWordsEmbeddings, write_behind_its_back

RARE = frozenset({"rare"})


def _distance(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return 1.0 - dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def _fill(folder: Path) -> tuple[Store, dict[str, tuple[str, list[float]]]]:
    """80 chunks, 4 of them "rare"; returns the store and id -> (type, vector)."""
    store = Store.open(folder, BagOfWordsEmbeddings(), create=True)
    ids = [f"c{i}" for i in range(80)]
    texts = [f"note {i} about {'redis cache' if i % 2 else 'helm deploy'}" for i in range(80)]
    types = ["rare" if i % 20 == 0 else "common" for i in range(80)]
    vectors = store.embeddings.embed_documents(texts)
    store.upsert(ids, texts, [{"type": t} for t in types], vectors)
    return store, {i: (t, v) for i, t, v in zip(ids, types, vectors, strict=True)}


def _reopen(folder: Path) -> Store:
    """The store as a fresh process opens it for the retriever: with its lexical index."""
    store = Store.open(folder, BagOfWordsEmbeddings())
    LexicalSearcher(store)
    return store


def _expected(store: Store, chunks: dict[str, tuple[str, list[float]]], query: str) -> list[str]:
    q = store.embeddings.embed_query(query)
    ranked = sorted((_distance(q, v), i) for i, (t, v) in chunks.items() if t == "rare")
    return [i for _, i in ranked]


def _record_queries(store: Store, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """A list that gets one entry per Chroma ``query`` call from now on."""
    collection_type = type(store.collection)
    searches: list[object] = []
    query = collection_type.query
    monkeypatch.setattr(
        collection_type, "query", lambda *a, **kw: searches.append(a) or query(*a, **kw)
    )
    return searches


@pytest.fixture(autouse=True)
def _load_in_the_query(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "LOAD_IN_BACKGROUND", False)


def test_lexical_index_answers_types() -> None:
    index = LexicalIndex.build(["a", "b", "c"], ["x y", "y z", "z"], ["bug", "note", "bug"])
    assert [index.type_of(i) for i in ("a", "b", "zz")] == ["bug", "note", None]
    assert index.ids_of_types(["bug"]) == ["a", "c"]
    assert index.ids_of_types(["bug", "note"]) == ["a", "b", "c"]
    assert index.ids_of_types(["lesson"]) == []
    assert index.type_counts() == {"bug": 2, "note": 1}


def test_a_fresh_process_filters_without_asking_chroma_for_types(tmp_path: Path) -> None:
    _fill(tmp_path / "s")
    store = _reopen(tmp_path / "s")
    hits = store.search("helm deploy", 5, ["common"])
    assert {h["metadata"]["type"] for h in hits} == {"common"} and len(hits) == 5
    assert store._type_index._types == {}  # every type came from the lexical index


def test_rare_type_vectors_are_kept_for_the_next_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, chunks = _fill(tmp_path / "s")
    LexicalSearcher(store)
    first = store.search("redis cache", 3, ["rare"])
    assert [h["id"] for h in first] == _expected(store, chunks, "redis cache")[:3]
    assert list((tmp_path / "s" / "type-vectors").glob("*.safetensors"))

    def no_chroma_read(self: search.TypeIndex, types: frozenset[str]) -> None:
        raise AssertionError("read from Chroma although the kept vectors are current")

    monkeypatch.setattr(search.TypeIndex, "_load", no_chroma_read)
    again = _reopen(tmp_path / "s")
    searches = _record_queries(again, monkeypatch)
    hits = again.search("redis cache", 3, ["rare"])
    assert searches == []  # 4 of 80 chunks: too rare to over-fetch, searched in memory at once
    assert [h["id"] for h in hits] == [h["id"] for h in first]
    assert [h["distance"] for h in hits] == pytest.approx([h["distance"] for h in first])
    assert again._type_index._vectors[RARE] is not None


def test_opening_keeps_the_rare_types_of_a_store_not_ingested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store written by other means than `ragbrain ingest` has nothing kept; opening it as
    the retriever does keeps its rare types, so even its first rare-type query skips Chroma."""
    _, chunks = _fill(tmp_path / "s")
    kept = tmp_path / "s" / "type-vectors"
    assert not list(kept.glob("*.safetensors"))
    store = _reopen(tmp_path / "s")
    # "rare" (5% of the store) alone: "common" is found by over-fetching, never kept at open
    assert len(list(kept.glob("*.safetensors"))) == 1
    searches = _record_queries(store, monkeypatch)
    hits = store.search("redis cache", 3, ["rare"])
    assert searches == []
    assert [h["id"] for h in hits] == _expected(store, chunks, "redis cache")[:3]


def test_kept_vectors_of_other_ids_are_not_used(tmp_path: Path) -> None:
    """Another writer adds a rare chunk: the next process's index has it, the kept file does
    not, so the vectors are read again and the new chunk is found."""
    store, _ = _fill(tmp_path / "s")
    LexicalSearcher(store)
    store.search("redis cache", 3, ["rare"])
    text = "redis cache stampede"
    write_behind_its_back(store, "new", text, "rare")
    again = _reopen(tmp_path / "s")
    assert "new" in {h["id"] for h in again.search("redis cache stampede", 3, ["rare"])}


def test_corrupt_kept_vectors_are_read_again(tmp_path: Path) -> None:
    store, chunks = _fill(tmp_path / "s")
    LexicalSearcher(store)
    store.search("redis cache", 3, ["rare"])
    for path in (tmp_path / "s" / "type-vectors").glob("*.safetensors"):
        path.write_bytes(path.read_bytes()[:100])  # truncated
    again = _reopen(tmp_path / "s")
    hits = again.search("redis cache", 3, ["rare"])
    assert [h["id"] for h in hits] == _expected(again, chunks, "redis cache")[:3]


def test_a_write_is_not_hidden_by_the_lexical_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk this store re-types keeps its id, so the lexical index still has the old type:
    the filter must ask Chroma for it."""
    _fill(tmp_path / "s")
    store = _reopen(tmp_path / "s")
    assert "c1" not in {h["id"] for h in store.search("redis cache", 5, ["rare"])}
    vector = store.embeddings.embed_documents(["note 1 about redis cache"])
    store.upsert(["c1"], ["note 1 about redis cache"], [{"type": "rare"}], vector)
    assert "c1" in {h["id"] for h in store.search("redis cache", 5, ["rare"])}
    monkeypatch.setattr(search, "OVERFETCH", 80)  # every chunk: c1's type alone decides
    assert [h["id"] for h in store.search("note 1 about redis cache", 1, ["rare"])] == ["c1"]
    assert "c1" not in {h["id"] for h in store.search("redis cache", 40, ["common"])}


def test_ingest_keeps_small_types_for_the_first_query(
    fake_store: Store, notes_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragbrain.ingest import ingest

    assert fake_store.folder is not None
    kept = list((fake_store.folder / "type-vectors").glob("*.safetensors"))
    types = fake_store.types()
    assert len(kept) == len(types)  # every type of the small notes is under MAX_CACHED
    index = LexicalSearcher(fake_store).index
    assert fake_store.keep_small_types(index) == []  # in step: nothing read again

    def no_chroma_read(self: search.TypeIndex, types: frozenset[str]) -> None:
        raise AssertionError("read from Chroma although ingest kept the vectors")

    monkeypatch.setattr(search.TypeIndex, "_load", no_chroma_read)
    monkeypatch.setattr(search, "OVERFETCH", 1)  # the nearest k alone: types need vectors
    fresh = _reopen(fake_store.folder)
    vector = fresh.embeddings.embed_query("redis cache timeout")
    for type_ in types:
        hits = fresh.search("redis cache timeout", 3, [type_])
        truth = fresh.collection.query(
            query_embeddings=[vector], n_results=3, where={"type": type_}
        )
        assert [h["id"] for h in hits] == truth["ids"][0]
    assert fresh._type_index._vectors  # some were searched in memory, none read from Chroma
    monkeypatch.undo()
    (notes_dir / "bug" / "extra.md").write_text("# Extra\n\nredis cache timeout again.\n")
    ingest(notes_dir, fake_store)
    assert fake_store.keep_small_types(LexicalSearcher(fake_store).index) == []
    assert "bug/extra.md" in {
        h["metadata"]["source"]
        for h in _reopen(fake_store.folder).search("redis again", 3, ["bug"])
    }


def test_rechecks_count_only_after_the_store_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma's count costs ~120 ms at 1M chunks: a long-lived reader asks it only when the
    store's version moved, and still sees another writer's chunk when it did."""
    store, _ = _fill(tmp_path / "s")
    searcher = LexicalSearcher(store)
    store.search("redis cache", 3, ["rare"])  # vectors kept in memory
    monkeypatch.setattr(search, "RECHECK_SECONDS", 0.0)
    searcher._checked = -math.inf
    counts: list[int] = []
    count = type(store.collection).count
    monkeypatch.setattr(type(store.collection), "count", lambda c: counts.append(1) or count(c))
    searcher.index  # noqa: B018 (the property rechecks)
    store.search("redis cache", 3, ["rare"])
    assert counts == []
    text = "redis cache stampede"
    write_behind_its_back(store, "other", text, "rare")
    searcher._checked = -math.inf
    assert "other" in searcher.index
    assert "other" in {h["id"] for h in store.search("redis cache stampede", 3, ["rare"])}
    assert counts
