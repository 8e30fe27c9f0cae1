"""A LangChain app's own langchain-chroma store under the whole pipeline: distances against a
brute-force cosine reference in every space, the caller's metadata keys, the lexical index
built from the collection's texts and kept in step, the gate, the critic, and bad input."""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.vectorstores import InMemoryVectorStore

from ragbrain import CorrectiveRetriever, RetrievalContext
from ragbrain.errors import (
    StoreMismatchError,
    StoreNotFoundError,
    UnknownTypeWarning,
    WrongTypeError,
)
from ragbrain.lexical.index import LexicalIndex, fingerprint
from ragbrain.models.embeddings import model_name_of
from ragbrain.store import search
from ragbrain.store.lexical import LexicalSearcher, index_path
from ragbrain.store.wrapped import ModelNames, wrap_chroma
from ragbrain.vectorstores.wrap import first_index
from tests.support.fakes import NOTES, BagOfWordsEmbeddings, OverlapCritic


class ScaledBagOfWords(BagOfWordsEmbeddings):
    """Bag-of-words directions at lengths 0.8-1.2 that vary by text, as embeddings that are
    not normalized have: an l2 search ranks them by something other than their cosine."""

    def _embed(self, text: str) -> list[float]:
        scale = 0.8 + (int(hashlib.md5(text.encode()).hexdigest(), 16) % 5) / 10
        return [x * scale for x in super()._embed(text)]


class NamedMiniLM(BagOfWordsEmbeddings):
    """A fake that names itself all-MiniLM-L6-v2, as HuggingFaceEmbeddings of it do."""

    def __init__(self) -> None:
        super().__init__()
        self.model_name = "sentence-transformers/all-MiniLM-L6-v2"


WORDS = [
    *("backup", "cache", "deploy", "redis", "postgres", "timeout"),
    *("migration", "helm", "rollback", "worker", "queue"),
]


def many_docs(n: int) -> list[Document]:
    """``n`` word-salad documents from ``n // 3`` sources, each with a type."""
    rng = np.random.default_rng(0)
    return [
        Document(
            page_content=" ".join(rng.choice(WORDS, 8)),
            metadata={"source": f"s{i // 3}.md", "type": ("bug", "howto")[i % 2]},
        )
        for i in range(n)
    ]


def note_docs(**extra: Any) -> list[Document]:
    return [
        Document(page_content=text, metadata={"source": path, **extra})
        for path, text in NOTES.items()
    ]


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def client() -> Iterator[chromadb.ClientAPI]:
    """The in-process client a LangChain app holds; every test's collections are dropped."""
    made = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    before = {c.name for c in made.list_collections()}
    yield made
    for collection in made.list_collections():
        if collection.name not in before:
            made.delete_collection(collection.name)


def chroma(
    client: chromadb.ClientAPI,
    docs: list[Document],
    embeddings: Embeddings,
    space: str | None = None,
) -> Chroma:
    """A store built the documented LangChain way (``Chroma.from_documents``); no space: the
    default, l2."""
    configuration: Any = {"hnsw": {"space": space}} if space else None
    return Chroma.from_documents(
        docs,
        embeddings,
        client=client,
        collection_name=f"app-{uuid.uuid4().hex[:12]}",
        collection_configuration=configuration,
    )


def brute_force(vectorstore: Chroma, query: str, k: int) -> list[tuple[str, float]]:
    """The reference: exact cosine distances of every stored vector, best ``k`` first."""
    stored = vectorstore._collection.get(include=["embeddings"])
    vectors = np.asarray(stored["embeddings"], dtype=np.float64)
    q = np.asarray(vectorstore.embeddings.embed_query(query), dtype=np.float64)  # type: ignore[union-attr]
    cosines = vectors @ q / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(q))
    ranked = sorted(zip(stored["ids"], 1 - cosines, strict=True), key=lambda p: p[1])
    return [(id_, float(d)) for id_, d in ranked[:k]]


# --- distances, whatever the space


@pytest.mark.parametrize(
    ("embeddings", "space"),
    [
        (BagOfWordsEmbeddings(), "cosine"),
        (BagOfWordsEmbeddings(), None),
        (BagOfWordsEmbeddings(), "ip"),
        (ScaledBagOfWords(), None),
        (ScaledBagOfWords(), "cosine"),
    ],
    ids=["cosine", "l2-unit", "ip-unit", "l2-not-unit", "cosine-not-unit"],
)
def test_search_matches_a_brute_force_cosine_reference(
    client: chromadb.ClientAPI, embeddings: Embeddings, space: str | None
) -> None:
    vectorstore = chroma(client, many_docs(40) + note_docs(), embeddings, space)
    store, _ = wrap_chroma(vectorstore, names=ModelNames(own=model_name_of(embeddings)))
    for query in ("nightly backup credentials", "redis cache", "helm rollback worker"):
        hits = store.search(query, 5)
        reference = brute_force(vectorstore, query, 100)
        # The best five distances, and each hit's own true distance (ties may swap ids).
        assert [h["distance"] for h in hits] == pytest.approx(
            [d for _, d in reference[:5]], abs=1e-5
        )
        exact = dict(reference)
        assert all(h["distance"] == pytest.approx(exact[h["id"]], abs=1e-5) for h in hits)


def test_the_trace_says_how_the_distances_were_read(client: chromadb.ClientAPI) -> None:
    unit = CorrectiveRetriever.from_vectorstore(
        chroma(client, note_docs(), BagOfWordsEmbeddings()), critic=None
    )
    assert "l2 / 2" in unit.run("backup")["notes"][0]
    vectorstore = chroma(client, note_docs(), ScaledBagOfWords())
    scaled = CorrectiveRetriever.from_vectorstore(vectorstore, critic=None)
    out = scaled.run("nightly backup credentials")
    assert "re-ranked by the true cosine" in out["notes"][0]
    reference = dict(brute_force(vectorstore, "nightly backup credentials", len(NOTES)))
    assert out["documents"]
    for doc in out["documents"]:
        assert doc.metadata["retrieval"]["distance"] == pytest.approx(reference[doc.id], abs=1e-5)


def test_an_inner_product_collection_of_other_lengths_is_refused(
    client: chromadb.ClientAPI,
) -> None:
    vectorstore = chroma(client, note_docs(), ScaledBagOfWords(), "ip")
    with pytest.raises(StoreMismatchError, match=r"inner product.*not\s+unit length"):
        CorrectiveRetriever.from_vectorstore(vectorstore, critic=None)


def test_embeddings_of_another_dimension_are_refused(client: chromadb.ClientAPI) -> None:
    vectorstore = chroma(client, note_docs(), BagOfWordsEmbeddings(64))
    with pytest.raises(StoreMismatchError, match=r"64-dimensional.*32-dimensional"):
        CorrectiveRetriever.from_vectorstore(vectorstore, embeddings=BagOfWordsEmbeddings(32))


# --- the caller's client, collection and metadata


def test_the_callers_client_is_reused_and_no_other_opened(
    client: chromadb.ClientAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    vectorstore = chroma(client, note_docs(), BagOfWordsEmbeddings())

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a second Chroma client was opened")

    for name in ("PersistentClient", "EphemeralClient", "HttpClient", "Client"):
        monkeypatch.setattr(chromadb, name, refuse)
    retriever = CorrectiveRetriever.from_vectorstore(vectorstore, critic=None)
    assert retriever.invoke("nightly backup")
    store = retriever.known_types.__self__  # type: ignore[union-attr]
    assert store.client is vectorstore._client and store.view._collection is vectorstore._collection


def test_a_persistent_store_opened_by_langchain_is_wrapped_in_the_same_process(
    tmp_path: Path,
) -> None:
    """LangChain's default Settings differ from ragbrain's: opening the folder a second time
    would fail ("An instance of Chroma already exists ... with different settings")."""
    vectorstore = Chroma.from_documents(
        note_docs(),
        BagOfWordsEmbeddings(),
        collection_name="my-notes",
        persist_directory=str(tmp_path / "chroma"),
    )
    retriever = CorrectiveRetriever.from_vectorstore(vectorstore, critic=None)
    assert retriever.invoke("nightly backup")[0].metadata["source"] == "bug/backup.md"
    assert not (tmp_path / "chroma" / "lexical.npz").exists()  # nothing in the caller's folder


def test_type_key_and_source_key_name_the_callers_metadata(client: chromadb.ClientAPI) -> None:
    docs = [
        Document(
            page_content=text,
            metadata={"path": path, "category": path.split("/")[0], "type": "markdown"},
        )
        for path, text in NOTES.items()
    ]
    vectorstore = chroma(client, docs, BagOfWordsEmbeddings())
    retriever = CorrectiveRetriever.from_vectorstore(
        vectorstore, critic=None, type_key="category", source_key="path"
    )
    found = retriever.invoke("redis", type_filter="decision")
    assert found and all(d.metadata["category"] == "decision" for d in found[:1])
    # The documents carry the metadata as stored: ragbrain's keys are not left on them.
    assert set(found[0].metadata) == {"path", "category", "type", "retrieval"}
    assert found[0].metadata["type"] == "markdown"
    assert retriever.known_types is not None and "howto" in retriever.known_types()
    scoped = retriever.invoke("backup cache", filters={"path": "bug"})
    assert scoped and all(d.metadata["path"].startswith("bug/") for d in scoped)


def test_a_wrong_type_filter_falls_back_across_the_callers_types(
    client: chromadb.ClientAPI,
) -> None:
    docs = [Document(page_content=t, metadata={"kind": p.split("/")[0]}) for p, t in NOTES.items()]
    retriever = CorrectiveRetriever.from_vectorstore(
        chroma(client, docs, BagOfWordsEmbeddings()),
        critic=None,
        type_key="kind",
        context=RetrievalContext(gate_threshold=0.3, search_mode="dense"),
    )
    out = retriever.run("nightly backup credentials expired", type_filter="howto")
    assert out["fallback"]
    assert out["documents"][0].metadata["kind"] == "bug"
    assert out["documents"][0].metadata["retrieval"]["from_fallback"]


def test_a_type_key_no_metadata_holds_is_a_warning_naming_the_keys(
    client: chromadb.ClientAPI, caplog: pytest.LogCaptureFixture
) -> None:
    vectorstore = chroma(client, note_docs(), BagOfWordsEmbeddings())
    with caplog.at_level(logging.INFO, logger="ragbrain"):
        retriever = CorrectiveRetriever.from_vectorstore(vectorstore, critic=None, type_key="kind")
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'kind'" in m and "['source']" in m for m in warned)
    assert any("'kind'" in n for n in retriever.run("backup")["notes"])
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ragbrain"):
        CorrectiveRetriever.from_vectorstore(vectorstore, critic=None)  # the default key
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_collection_without_texts_is_searched_densely_and_said_so(
    client: chromadb.ClientAPI,
) -> None:
    embeddings = BagOfWordsEmbeddings()
    vectorstore = Chroma(
        collection_name=f"bare-{uuid.uuid4().hex[:8]}", embedding_function=embeddings, client=client
    )
    texts = list(NOTES.values())
    vectorstore._collection.add(
        ids=list(NOTES), embeddings=embeddings.embed_documents(texts), metadatas=None
    )
    retriever = CorrectiveRetriever.from_vectorstore(vectorstore, critic=OverlapCritic())
    out = retriever.run("nightly backup credentials")
    assert any("no stored texts: dense search only" in n for n in out["notes"])
    assert out["critic"].startswith("off: the collection stores no texts")
    assert any("has no lexical index" in n for n in out["notes"])
    assert out["documents"][0].id == "bug/backup.md"


# --- the lexical index: built once from the collection's texts, cached, kept in step


def test_the_first_lexical_build_matches_the_index_builder_and_reports_progress(
    client: chromadb.ClientAPI,
) -> None:
    embeddings = BagOfWordsEmbeddings()
    vectorstore = chroma(client, many_docs(30) + note_docs(), embeddings)
    store, _ = wrap_chroma(vectorstore, names=ModelNames(own=model_name_of(embeddings)))
    seen: list[tuple[int, int]] = []
    built = first_index(store, lambda done, total: seen.append((done, total)))
    got = store.view.get(include=["documents", "metadatas"])
    reference = LexicalIndex.build(
        got["ids"], got["documents"], [m.get("type", "") for m in got["metadatas"]]
    )
    assert seen[0] == (0, 36) and seen[-1] == (36, 36)
    assert built.fingerprint == reference.fingerprint == fingerprint(store.all_ids())
    for query in ("nightly backup", "redis cache", "helm rollback worker queue"):
        assert built.search(query, 5) == reference.search(query, 5)
    assert index_path(store).is_file()


def test_the_lexical_index_is_cached_and_follows_the_collection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "RECHECK_SECONDS", 0.0)
    vectorstore = Chroma.from_documents(
        note_docs(),
        BagOfWordsEmbeddings(),
        collection_name="notes",
        persist_directory=str(tmp_path / "chroma"),
    )
    builds: list[int] = []
    retriever = CorrectiveRetriever.from_vectorstore(
        vectorstore, critic=None, progress=lambda done, total: builds.append(total)
    )
    assert builds  # built once, with progress
    count = len(NOTES)
    assert f"({count} records," in retriever.run("nightly backup")["notes"][0]
    # The app adds a note through its own vector store: the index follows (count and ids),
    # and so does the trace's record count.
    vectorstore.add_documents(
        [Document(page_content="Xylophone tuning guide", metadata={"source": "x.md"})],
        ids=["x"],
    )
    out = retriever.run("xylophone")
    assert out["documents"][0].id == "x"
    assert f"({count + 1} records," in out["notes"][0]
    vectorstore.delete(ids=["x"])
    assert all(d.id != "x" for d in retriever.invoke("xylophone"))
    # Opened again: the kept index is reused, not rebuilt.
    builds.clear()
    again = CorrectiveRetriever.from_vectorstore(
        vectorstore, critic=None, progress=lambda done, total: builds.append(total)
    )
    assert not builds and again.invoke("nightly backup")


def test_a_write_by_another_writer_during_the_first_build_is_caught_up(
    client: chromadb.ClientAPI,
) -> None:
    embeddings = BagOfWordsEmbeddings()
    vectorstore = chroma(client, note_docs(), embeddings)
    store, _ = wrap_chroma(vectorstore, names=ModelNames(own=model_name_of(embeddings)))
    built = first_index(store)
    other = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    other.get_collection(vectorstore._collection.name).add(
        ids=["late"],
        documents=["a late zeppelin note"],
        embeddings=BagOfWordsEmbeddings().embed_documents(["a late zeppelin note"]),
        metadatas=[{"source": "late.md"}],
    )
    searcher = LexicalSearcher(store, built)
    assert "late" in searcher.index and len(searcher.index) == len(NOTES) + 1


def test_ragbrain_never_writes_to_the_callers_collection(client: chromadb.ClientAPI) -> None:
    vectorstore = chroma(client, many_docs(60), BagOfWordsEmbeddings())
    before = dict(vectorstore._collection.metadata or {})
    retriever = CorrectiveRetriever.from_vectorstore(vectorstore, critic=None)
    assert retriever.invoke("backup cache")
    fresh = client.get_collection(vectorstore._collection.name)
    assert dict(fresh.metadata or {}) == before and fresh.count() == 60
    store = retriever.known_types.__self__  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="never writes"):
        store.upsert(["new"], ["text"], [{"type": "x"}], [[1.0] * 64])
    with pytest.raises(ValueError, match="does not change the collection"):
        store.collection.modify(metadata={"owner": "someone else"})


# --- the gate


def test_a_known_model_gets_its_shipped_gate(client: chromadb.ClientAPI) -> None:
    retriever = CorrectiveRetriever.from_vectorstore(
        chroma(client, many_docs(60), NamedMiniLM()), critic=None
    )
    out = retriever.run("backup cache")
    assert any("gate 0.455, shipped for all-MiniLM-L6-v2" in n for n in out["notes"])
    assert out["gate"] == pytest.approx(0.455)


def test_another_model_is_calibrated_on_the_store_once(tmp_path: Path) -> None:
    vectorstore = Chroma.from_documents(
        many_docs(90) + note_docs(),
        BagOfWordsEmbeddings(),
        collection_name="notes",
        persist_directory=str(tmp_path / "chroma"),
    )
    first = CorrectiveRetriever.from_vectorstore(vectorstore, critic=None).run("backup")
    line = next(n for n in first["notes"] if "gate" in n and n.startswith("store:"))
    assert "calibrated on this collection once" in line
    assert "(calibrated for this store)" in next(n for n in first["notes"] if "verdict" in n)
    again = CorrectiveRetriever.from_vectorstore(vectorstore, critic=None).run("backup")
    assert any("calibrated on this collection before" in n for n in again["notes"])
    assert again["gate"] == first["gate"]
    assert "ragbrain:gate_threshold" not in (vectorstore._collection.metadata or {})


@pytest.mark.parametrize(
    ("docs", "context", "expected"),
    [
        (note_docs(), None, "too few to calibrate"),
        (many_docs(60), RetrievalContext(gate_threshold=0.4), "context's gate_threshold"),
    ],
    ids=["small-store", "gate-set-by-the-caller"],
)
def test_the_gate_is_not_calibrated_when_it_cannot_or_need_not_be(
    client: chromadb.ClientAPI,
    docs: list[Document],
    context: RetrievalContext | None,
    expected: str,
) -> None:
    fields = {"context": context} if context else {}
    retriever = CorrectiveRetriever.from_vectorstore(
        chroma(client, docs, BagOfWordsEmbeddings()), critic=None, **fields
    )
    assert any(expected in n for n in retriever.run("backup")["notes"])


# --- what is supported, and what is refused


@pytest.mark.parametrize(
    ("vectorstore", "match"),
    [
        (
            InMemoryVectorStore(DeterministicFakeEmbedding(size=8)),
            "InMemoryVectorStore.*Store.open",
        ),
        ("/some/folder", "langchain_chroma.Chroma; got str"),
        (None, "langchain_chroma.Chroma; got builtins.NoneType"),
    ],
    ids=["other-vector-store", "a-path", "none"],
)
def test_what_is_not_a_langchain_chroma_is_refused_saying_what_is(
    vectorstore: Any, match: str
) -> None:
    with pytest.raises(WrongTypeError, match=match):
        CorrectiveRetriever.from_vectorstore(vectorstore)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"embeddings": "minilm"}, "embeddings_for"),
        ({"type_key": 3}, "type_key must be a metadata key"),
        ({"critic": 0.5}, "critic must be None"),
        ({"on_critic_error": "ignore"}, "on_critic_error must be one of"),
    ],
    ids=["embeddings-name", "type-key", "critic", "on-critic-error"],
)
def test_wrong_argument_types_are_refused(
    client: chromadb.ClientAPI, kwargs: dict[str, Any], match: str
) -> None:
    vectorstore = chroma(client, note_docs(), BagOfWordsEmbeddings())
    with pytest.raises(WrongTypeError, match=match):
        CorrectiveRetriever.from_vectorstore(vectorstore, **kwargs)


def test_a_vector_store_without_embeddings_or_collection_is_refused(
    client: chromadb.ClientAPI,
) -> None:
    vectorstore = chroma(client, note_docs(), BagOfWordsEmbeddings())
    bare = Chroma(collection_name=vectorstore._collection.name, client=client)
    with pytest.raises(WrongTypeError, match=r"no embedding function.*embeddings="):
        CorrectiveRetriever.from_vectorstore(bare)
    assert CorrectiveRetriever.from_vectorstore(
        bare, embeddings=BagOfWordsEmbeddings(), critic=None
    )
    vectorstore.delete_collection()
    with pytest.raises(StoreNotFoundError, match="no collection"):
        CorrectiveRetriever.from_vectorstore(vectorstore)


def test_a_collection_deleted_under_the_retriever_is_a_clear_error(
    client: chromadb.ClientAPI,
) -> None:
    vectorstore = chroma(client, note_docs(), BagOfWordsEmbeddings())
    retriever = CorrectiveRetriever.from_vectorstore(vectorstore, critic=None)
    client.delete_collection(vectorstore._collection.name)
    with pytest.raises(StoreNotFoundError, match="does not exist"):
        retriever.invoke("backup")


# --- what is cached beside the collection, and by what


def test_type_key_added_later_is_seen_by_a_later_open_with_the_same_cache(tmp_path: Path) -> None:
    """The documented migration: the one-liner first, ``type_key`` in a later process. The
    cache (lexical index, type vectors) is keyed by every setting it depends on."""
    docs = [
        Document(page_content=text, metadata={"source": path, "kind": path.split("/")[0]})
        for path, text in NOTES.items()
    ]
    folder = str(tmp_path / "chroma")
    Chroma.from_documents(
        docs, BagOfWordsEmbeddings(), collection_name="app", persist_directory=folder
    )
    first = CorrectiveRetriever.from_vectorstore(
        Chroma("app", BagOfWordsEmbeddings(), persist_directory=folder), critic=None
    )
    assert first.known_types is not None and first.known_types() == [""]
    later = CorrectiveRetriever.from_vectorstore(
        Chroma("app", BagOfWordsEmbeddings(), persist_directory=folder),
        critic=None,
        type_key="kind",
    )
    assert later.known_types is not None
    assert sorted(later.known_types()) == sorted({p.split("/")[0] for p in NOTES})
    out = later.run("redis cache", type_filter="decision")
    assert not out["fallback"]
    assert out["documents"] and all(d.metadata["kind"] == "decision" for d in out["documents"])
    # And back: the default key again sees no types, not the kinds.
    again = CorrectiveRetriever.from_vectorstore(
        Chroma("app", BagOfWordsEmbeddings(), persist_directory=folder), critic=None
    )
    assert again.known_types is not None and again.known_types() == [""]


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_search_kwargs_filter_is_hard_through_a_forced_fallback(
    client: chromadb.ClientAPI, mode: str
) -> None:
    docs = [Document(page_content=t, metadata={"kind": p.split("/")[0]}) for p, t in NOTES.items()]
    vectorstore = chroma(client, docs, BagOfWordsEmbeddings())
    context = RetrievalContext(gate_threshold=0.0, search_mode=mode, abstain="off")  # all poor
    hard = CorrectiveRetriever.from_vectorstore(
        vectorstore,
        critic=None,
        type_key="kind",
        context=context,
        search_kwargs={"k": 4, "filter": {"kind": "howto"}},
    )
    soft = CorrectiveRetriever.from_vectorstore(
        vectorstore, critic=None, type_key="kind", context=context, type_filter="howto", k=4
    )
    for question in ("nightly backup credentials expired", "redis cache eviction", "deploy"):
        held = hard.run(question, type_filter="decision")  # soft type: the fallback drops it
        assert held["fallback"] and held["documents"]
        assert {d.metadata["kind"] for d in held["documents"]} == {"howto"}
        assert any("'howto' (hard)" in n for n in held["notes"])
    widened = soft.run("nightly backup credentials expired")
    assert widened["fallback"] and {d.metadata["kind"] for d in widened["documents"]} - {"howto"}


def test_a_type_no_chunk_has_warns_naming_the_closest(client: chromadb.ClientAPI) -> None:
    docs = [Document(page_content=t, metadata={"kind": p.split("/")[0]}) for p, t in NOTES.items()]
    retriever = CorrectiveRetriever.from_vectorstore(
        chroma(client, docs, BagOfWordsEmbeddings()), critic=None, type_key="kind"
    )
    with pytest.warns(UnknownTypeWarning, match=r"'hwoto' \(closest: howto\)"):
        out = retriever.run("backup", type_filter="hwoto")
    assert any("'hwoto' (closest: howto)" in n for n in out["notes"])
    with pytest.warns(UserWarning, match=r"'decisoin' \(closest: decision\)"):
        retriever.run("backup", filters={"types": "decisoin"})
    # Without type_key, the chunks hold no type: the warning says which key to name.
    plain = CorrectiveRetriever.from_vectorstore(
        chroma(client, docs, BagOfWordsEmbeddings()), critic=None
    )
    with pytest.warns(UserWarning, match="type_key"):
        plain.run("backup", type_filter="howto")
