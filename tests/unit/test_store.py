"""Store: cosine search checked against brute force, type filters, space and dimension checks."""

from __future__ import annotations

import math
import random
from pathlib import Path

import chromadb
import pytest

from ragbrain.errors import InvalidInputError, StoreMismatchError, StoreNotFoundError
from ragbrain.store import COLLECTION, Store
from tests.support.fakes import BagOfWordsEmbeddings

WORDS = ("redis", "cache", "postgres", "backup", "deploy", "alembic")
WORDS += ("celery", "queue", "timeout", "helm", "s3", "index")


def random_texts(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=6)) for _ in range(n)]


def cosine_distance(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return 1.0 - dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


@pytest.fixture
def filled(tmp_path: Path, fake_embeddings: BagOfWordsEmbeddings) -> tuple[Store, list[str]]:
    store = Store.open(tmp_path / "s", fake_embeddings, create=True)
    texts = random_texts(200)
    types = [("bug", "decision", "lesson")[i % 3] for i in range(len(texts))]
    store.upsert(
        [f"id{i}" for i in range(len(texts))],
        texts,
        [{"type": t, "source": f"f{i}.md"} for i, t in enumerate(types)],
        fake_embeddings.embed_documents(texts),
    )
    return store, types


def test_search_matches_brute_force_cosine(filled: tuple[Store, list[str]]) -> None:
    store, types = filled
    texts = random_texts(200)
    vectors = store.embeddings.embed_documents(texts)
    query = "redis cache backup"
    q = store.embeddings.embed_query(query)
    expected = sorted(cosine_distance(q, v) for v in vectors)[:10]
    hits = store.search(query, 10)
    assert [h["distance"] for h in hits] == pytest.approx(expected, abs=1e-4)
    assert [h["distance"] for h in hits] == sorted(h["distance"] for h in hits)

    only_bugs = [cosine_distance(q, v) for v, t in zip(vectors, types, strict=True) if t == "bug"]
    filtered = store.search(query, 5, ["bug"])
    assert {h["metadata"]["type"] for h in filtered} == {"bug"}
    assert [h["distance"] for h in filtered] == pytest.approx(sorted(only_bugs)[:5], abs=1e-4)
    two = store.search(query, 30, ["bug", "lesson"])
    assert {h["metadata"]["type"] for h in two} == {"bug", "lesson"}


def test_created_collections_are_cosine(filled: tuple[Store, list[str]]) -> None:
    store, _ = filled
    assert store.collection.configuration["hnsw"]["space"] == "cosine"
    assert store.count() == 200
    assert store.types() == {"bug": 67, "decision": 67, "lesson": 66}


def test_missing_store_is_a_clear_error(
    tmp_path: Path, fake_embeddings: BagOfWordsEmbeddings
) -> None:
    with pytest.raises(StoreNotFoundError, match=r"No ragbrain store at .*ragbrain ingest"):
        Store.open(tmp_path / "nowhere", fake_embeddings)
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreNotFoundError, match="holds no ragbrain collection"):
        Store.open(tmp_path / "empty", fake_embeddings)
    assert not (tmp_path / "nowhere").exists()  # nothing was created


def test_other_space_is_refused_or_converted(
    tmp_path: Path, fake_embeddings: BagOfWordsEmbeddings
) -> None:
    client = chromadb.PersistentClient(
        path=str(tmp_path / "l2"), settings=chromadb.Settings(anonymized_telemetry=False)
    )
    old = client.create_collection(COLLECTION, embedding_function=None)  # Chroma's default: l2
    texts = random_texts(20)
    old.add(
        ids=[f"id{i}" for i in range(20)],
        documents=texts,
        metadatas=[{"type": "note"}] * 20,
        embeddings=fake_embeddings.embed_documents(texts),
    )
    del client
    with pytest.raises(StoreMismatchError, match=r"'l2' distance space.*convert_space=True"):
        Store.open(tmp_path / "l2", fake_embeddings)
    store = Store.open(tmp_path / "l2", fake_embeddings, convert_space=True)
    assert store.collection.configuration["hnsw"]["space"] == "cosine"
    assert store.count() == 20
    assert store.search(texts[3], 1)[0]["id"] == "id3"
    assert Store.open(tmp_path / "l2", fake_embeddings).count() == 20  # converted for good


def test_other_dimension_is_refused(filled: tuple[Store, list[str]], tmp_path: Path) -> None:
    with pytest.raises(StoreMismatchError, match=r"64-dimensional.*32-dimensional"):
        Store.open(tmp_path / "s", BagOfWordsEmbeddings(size=32))


def test_listings_read_the_store_page_by_page(
    filled: tuple[Store, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragbrain.store import store as store_module

    store, texts = filled
    monkeypatch.setattr(store_module, "PAGE", 7)  # 200 chunks: 29 pages, the last one short
    assert sum(len(page["ids"]) for page in store.pages([])) == len(texts)
    assert store.types() == {"bug": 67, "decision": 67, "lesson": 66}
    assert sum(len(ids) for ids in store.ids_by_source("").values()) == 0
    store.upsert(["r1"], ["redis"], [{"root": "notes", "source": "a.md"}], [[1.0] * 64])
    assert store.ids_by_source("notes") == {"a.md": {"r1"}}


@pytest.mark.slow
def test_listings_work_past_sqlites_variable_limit(tmp_path: Path) -> None:
    """Chroma reads a get's metadata in one SQL statement with a variable per id; SQLite takes
    at most 32,766, so an unpaged listing of a 33k-chunk store fails. Ingest lists by root."""
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(size=2), create=True)
    n = 33_000
    for start in range(0, n, 5000):
        ids = [f"c{i}" for i in range(start, min(n, start + 5000))]
        store.collection.add(
            ids=ids,
            embeddings=[[1.0, float(i % 13)] for i in range(len(ids))],
            metadatas=[
                {"root": "r", "source": f"s{i % 7}.md", "type": "bug"} for i in range(len(ids))
            ],
            documents=["x"] * len(ids),
        )
    assert store.types() == {"bug": n}
    assert sum(len(ids) for ids in store.ids_by_source("r").values()) == n


def test_version_changes_with_writes_only(filled: tuple[Store, list[str]]) -> None:
    store, _ = filled
    before = store.version()
    assert before is not None
    store.count()
    store.search("redis cache", 5)
    store.search("redis cache", 5, ["bug"])
    store.types()
    assert store.version() == before  # reads never change it
    store.upsert(["v1"], ["redis"], [{"type": "bug"}], [[1.0] * 64])
    after_write = store.version()
    assert after_write != before
    store.delete(["v1"])
    assert store.version() != after_write


def test_a_folder_and_a_server_together_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="Only one of a store folder or a server"):
        Store.open(
            tmp_path / "store", BagOfWordsEmbeddings(), create=True, server="http://127.0.0.1:9"
        )
    assert not (tmp_path / "store").exists()  # refused before anything was made
