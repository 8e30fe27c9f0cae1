"""Chunks read by id from a small store's rows held in memory (``store.search.HeldRows``): the
same hits as Chroma's, and never a stale row after this store's write or another writer's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragbrain.store import Store
from ragbrain.store import search as rows_module
from ragbrain.store.search import HeldRows, Hit
from tests.support.fakes import BagOfWordsEmbeddings

TEXTS = [
    "redis cache stampede under load",
    "helm deploy rollback after a failed release",
    "postgres backup failed at night",
    "celery queue timeout and retries",
    "alembic migration locked the table",
]


def write(store: Store, id_: str, text: str, meta: dict[str, Any] | None = None) -> None:
    store.upsert(
        [id_],
        [text],
        [meta or {"type": "note", "source": f"{id_}.md"}],
        store.embeddings.embed_documents([text]),
    )


@pytest.fixture
def store(tmp_path: Path) -> Store:
    made = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    for i, text in enumerate(TEXTS):
        write(made, f"n{i}", text)
    return made


def held(store: Store) -> bool:
    """Load the store's rows now (in this thread); whether they are held at its version."""
    return store._rows.rows(["n0"], wait=True) is not None


def by_id(hits: list[Hit]) -> dict[str, Hit]:
    return {hit["id"]: hit for hit in hits}


def test_held_rows_give_the_same_hits_as_chroma(store: Store) -> None:
    asked = ["n3", "gone", "n0", "n3", "n1"]  # an id the store lacks, one asked twice
    from_chroma = store.hits_by_id("redis backup failed", asked)
    assert held(store)
    from_memory = store.hits_by_id("redis backup failed", asked)
    assert set(by_id(from_memory)) == {"n0", "n1", "n3"}
    assert by_id(from_memory) == by_id(from_chroma)  # texts, metadata and exact distances
    assert len(from_memory) == 3


def test_a_hits_metadata_is_a_copy(store: Store) -> None:
    assert held(store)
    store.hits_by_id("redis", ["n0"])[0]["metadata"]["type"] = "changed"
    assert store.hits_by_id("redis", ["n0"])[0]["metadata"]["type"] == "note"


def test_this_stores_writes_are_seen_at_once(store: Store) -> None:
    assert held(store)
    write(store, "n0", "kubernetes liveness probe")  # an edit under the same id
    store.update_metadata(["n1"], [{"type": "decision"}])
    store.delete(["n2"])
    write(store, "n5", "zorblax flux capacitor")
    hits = by_id(store.hits_by_id("kubernetes liveness probe", ["n0", "n1", "n2", "n5"]))
    assert hits["n0"]["text"] == "kubernetes liveness probe"
    assert hits["n0"]["distance"] == pytest.approx(0.0, abs=1e-6)
    assert hits["n1"]["metadata"]["type"] == "decision"
    assert "n2" not in hits
    assert hits["n5"]["text"] == "zorblax flux capacitor"
    assert held(store)  # loaded again at the new version, with the same answers
    assert by_id(store.hits_by_id("kubernetes liveness probe", ["n0", "n1", "n2", "n5"])) == hits


def test_another_writers_writes_are_seen(store: Store, tmp_path: Path) -> None:
    assert held(store)
    writer = Store.open(tmp_path / "s", BagOfWordsEmbeddings())  # its own client: a process
    write(writer, "n0", "kubernetes liveness probe")
    writer.delete(["n2"])
    hits = by_id(store.hits_by_id("kubernetes probe", ["n0", "n2"]))
    assert hits["n0"]["text"] == "kubernetes liveness probe"
    assert "n2" not in hits
    assert held(store)
    assert by_id(store.hits_by_id("kubernetes probe", ["n0", "n2"])) == hits


def test_a_store_over_the_limit_is_not_held(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rows_module, "HELD_ROWS", len(TEXTS) - 1)
    assert not held(store)
    assert len(store.hits_by_id("redis", [f"n{i}" for i in range(len(TEXTS))])) == len(TEXTS)


def page(ids: list[str]) -> dict[str, Any]:
    return {
        "ids": ids,
        "documents": [f"text of {i}" for i in ids],
        "metadatas": [{"type": "note"} for _ in ids],
        "embeddings": np.ones((len(ids), 3)),
    }


def test_rows_without_a_version_are_never_held() -> None:
    rows = HeldRows(lambda: 2, lambda: iter([page(["a", "b"])]), lambda: None)
    assert rows.rows(["a"], wait=True) is None


def test_a_load_overtaken_by_a_write_is_not_kept() -> None:
    loads = []
    rows: HeldRows

    def pages() -> Iterator[dict[str, Any]]:
        loads.append(1)
        yield page(["a"])
        if len(loads) == 1:
            rows.forget()  # this store writes while the first load reads
        yield page(["b"])

    rows = HeldRows(lambda: 2, pages, lambda: 1)  # type: ignore[arg-type]
    assert rows.rows(["a"], wait=True) is None
    assert rows.rows(["a"], wait=True) is not None  # the next load is kept
    assert len(loads) == 2


def test_rows_are_held_for_their_version_only() -> None:
    version = [1]
    loads = []

    def pages() -> Iterator[dict[str, Any]]:
        loads.append(version[0])
        yield page(["a", "b"])

    rows = HeldRows(lambda: 2, pages, lambda: version[0])  # type: ignore[arg-type]
    found = rows.rows(["b", "a", "c"], wait=True)
    assert found is not None and found.ids == ["b", "a"]
    assert found.texts == ["text of b", "text of a"]
    assert rows.rows(["a"]) is not None and loads == [1]  # held: not read again
    version[0] = 2  # another process wrote
    assert rows.rows(["a"]) is None  # not served at the new version; read again ...
    assert rows.rows(["a"], wait=True) is not None  # ... in the background (waited for here)
    assert loads == [1, 2]


def test_a_wrapped_store_sees_the_callers_own_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller's persistent langchain-chroma store: its rows are held too (read through the
    view, the caller's ``kind`` as the type), and the caller's writes, which bypass the
    ``Store``, are seen (they change the SQLite file)."""
    from langchain_chroma import Chroma
    from langchain_core.documents import Document

    from ragbrain.models.embeddings import model_name_of
    from ragbrain.store.wrapped import ModelNames, wrap_chroma

    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    embeddings = BagOfWordsEmbeddings()
    vectorstore = Chroma.from_documents(
        [Document(page_content=text, metadata={"kind": "note"}) for text in TEXTS],
        embeddings,
        ids=[f"n{i}" for i in range(len(TEXTS))],
        collection_name="app",
        persist_directory=str(tmp_path / "chroma"),
    )
    store, _ = wrap_chroma(
        vectorstore, names=ModelNames(own=model_name_of(embeddings)), type_key="kind"
    )
    asked = ["n0", "n2", "n4"]
    from_chroma = by_id(store.hits_by_id("postgres backup", asked))
    assert held(store)
    assert by_id(store.hits_by_id("postgres backup", asked)) == from_chroma
    assert from_chroma["n2"]["metadata"]["type"] == "note"
    vectorstore.update_document(
        "n2", Document(page_content="kubernetes liveness probe", metadata={"kind": "bug"})
    )
    hits = by_id(store.hits_by_id("kubernetes liveness probe", asked))
    assert hits["n2"]["text"] == "kubernetes liveness probe"
    assert hits["n2"]["distance"] == pytest.approx(0.0, abs=1e-6)
    assert hits["n2"]["metadata"]["type"] == "bug"


def test_a_failed_read_is_not_tried_again_until_the_store_changes() -> None:
    version, reads = [1], []

    def pages() -> Iterator[dict[str, Any]]:
        reads.append(version[0])
        raise RuntimeError("Chroma failed")
        yield {}  # a generator

    rows = HeldRows(lambda: 2, pages, lambda: version[0])  # type: ignore[arg-type]
    assert rows.rows(["a"], wait=True) is None
    assert rows.rows(["a"], wait=True) is None
    assert reads == [1]
    version[0] = 2
    assert rows.rows(["a"], wait=True) is None
    assert reads == [1, 2]


def test_an_empty_store_is_held_and_finds_nothing(tmp_path: Path) -> None:
    empty = Store.open(tmp_path / "e", BagOfWordsEmbeddings(), create=True)
    assert held(empty)
    assert empty.hits_by_id("redis", ["n0"]) == []
