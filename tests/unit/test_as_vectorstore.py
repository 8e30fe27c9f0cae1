"""A ragbrain store as a langchain-chroma ``Chroma``: LangChain code reads it, and LangChain's
indexing API writes to it idempotently, with the lexical index following and nothing written
half-way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.indexing import InMemoryRecordManager, index

from ragbrain import CorrectiveRetriever
from ragbrain.errors import InvalidInputError, StoreLockedError, WrongTypeError
from ragbrain.lexical.index import LexicalIndex, fingerprint
from ragbrain.store import Store
from ragbrain.store.lexical import index_path
from ragbrain.store.vectorstore import DEFAULT_TYPE, RagbrainChroma
from tests.support.fakes import NOTES, BagOfWordsEmbeddings

pytestmark = pytest.mark.filterwarnings("ignore:Using SHA-1:UserWarning")


def docs() -> list[Document]:
    return [Document(page_content=t, metadata={"source": p}) for p, t in NOTES.items()]


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)


@pytest.fixture
def manager() -> InMemoryRecordManager:
    made = InMemoryRecordManager("ragbrain/test")
    made.create_schema()
    return made


def lexical_in_step(store: Store) -> bool:
    return LexicalIndex.load(index_path(store)).fingerprint == fingerprint(store.all_ids())


def test_it_is_a_chroma_over_the_same_client_and_collection(store: Store) -> None:
    vectorstore = store.as_vectorstore()
    assert isinstance(vectorstore, Chroma)
    assert vectorstore._client is store.client and vectorstore._collection is store.collection
    assert vectorstore.embeddings is store.embeddings
    vectorstore.add_documents(docs())
    found = vectorstore.similarity_search_with_relevance_scores("nightly backup credentials", k=2)
    assert found[0][0].metadata["source"] == "bug/backup.md"
    assert 0 < found[0][1] <= 1  # Chroma reads the store's cosine space
    assert vectorstore.as_retriever().invoke("redis cache")


def test_indexing_is_idempotent_replaces_changed_and_removes_deleted(
    store: Store, manager: InMemoryRecordManager
) -> None:
    vectorstore = store.as_vectorstore()
    first = index(docs(), manager, vectorstore, cleanup="full", source_id_key="source")
    assert first["num_added"] == len(NOTES) and store.count() == len(NOTES)
    assert lexical_in_step(store)

    again = index(docs(), manager, vectorstore, cleanup="full", source_id_key="source")
    assert again["num_added"] == 0 and again["num_skipped"] == len(NOTES)

    changed = [
        Document(page_content="The nightly backup now goes to GCS, zebra.", metadata=d.metadata)
        if d.metadata["source"] == "bug/backup.md"
        else d
        for d in docs()
        if d.metadata["source"] != "decision/redis.md"
    ]
    third = index(changed, manager, vectorstore, cleanup="full", source_id_key="source")
    assert third["num_added"] == 1 and third["num_deleted"] == 2  # the old backup, redis
    assert store.count() == len(NOTES) - 1 and lexical_in_step(store)
    texts = {text for _, text, _ in store.texts_and_types(store.all_ids())}
    assert "The nightly backup now goes to GCS, zebra." in texts
    assert not any("Celery uses RabbitMQ" in t for t in texts)
    # ragbrain's own retriever over the same store sees the change, BM25 included.
    retriever = CorrectiveRetriever.from_store(
        store.location, embeddings=store.embeddings, critic=None
    )
    out = retriever.run("zebra", k=1)
    assert out["documents"][0].page_content.endswith("zebra.")


def test_chunks_keep_their_metadata_and_get_a_type(store: Store) -> None:
    vectorstore = store.as_vectorstore()
    ids = vectorstore.add_texts(["alpha note", "beta note"], [{"type": "bug", "page": 3}])
    got = {d.id: d.metadata for d in vectorstore.get_by_ids(ids)}
    assert got[ids[0]] == {"type": "bug", "page": 3}
    assert got[ids[1]] == {"type": DEFAULT_TYPE}
    assert store.known_types() == sorted(["bug", DEFAULT_TYPE])


@pytest.mark.parametrize(
    ("texts", "kwargs", "error", "match"),
    [
        (
            ["a", "b"],
            {"metadatas": [{"source": "a"}, {"bad": {"nested": 1}}]},
            InvalidInputError,
            "text 1",
        ),
        (["a", "b"], {"ids": ["same", "same"]}, InvalidInputError, "given twice"),
        (["a", "b"], {"ids": ["one"]}, InvalidInputError, "one id per text"),
        (["a", 3], {}, InvalidInputError, "takes strings"),
        (["a"], {"ids": [7]}, WrongTypeError, "non-empty strings"),
        (["a"], {"where": {"x": 1}}, InvalidInputError, "no other options"),
        (["a"], {"metadatas": [{}, {}]}, InvalidInputError, "2 metadatas for 1 texts"),
    ],
    ids=["metadata", "duplicate-id", "too-few-ids", "not-text", "id-type", "option", "metadatas"],
)
def test_bad_input_writes_nothing(
    store: Store, texts: list[Any], kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    vectorstore = store.as_vectorstore()
    vectorstore.add_texts(["kept"], ids=["kept"])
    with pytest.raises(error, match=match):
        vectorstore.add_texts(texts, **kwargs)
    assert store.all_ids() == ["kept"]


def test_a_vector_the_store_cannot_take_writes_nothing(store: Store) -> None:
    class HalfBroken(BagOfWordsEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            vectors = super().embed_documents(texts)
            return [*vectors[:-1], [0.0] * self.size]

    store.as_vectorstore().add_texts(["kept"], ids=["kept"])
    broken = Store.open(store.location, HalfBroken())
    with pytest.raises(InvalidInputError, match="all zero"):
        broken.as_vectorstore().add_texts(["good", "also good", "the last"])
    assert store.all_ids() == ["kept"]


def test_deletes_and_collection_drops(store: Store) -> None:
    vectorstore = store.as_vectorstore()
    vectorstore.add_documents(docs(), ids=list(NOTES))
    vectorstore.delete(["bug/backup.md", "no-such-id"])
    assert store.count() == len(NOTES) - 1 and lexical_in_step(store)
    with pytest.raises(InvalidInputError, match="list of ids"):
        vectorstore.delete()
    with pytest.raises(InvalidInputError, match="delete its folder"):
        vectorstore.reset_collection()
    with pytest.raises(InvalidInputError, match="delete its folder"):
        vectorstore.delete_collection()
    assert store.count() == len(NOTES) - 1


def test_updates_replace_in_place(store: Store) -> None:
    vectorstore = store.as_vectorstore()
    vectorstore.add_documents(docs(), ids=list(NOTES))
    vectorstore.update_document("bug/cache.md", Document(page_content="Cache note, rewritten."))
    assert vectorstore.get_by_ids(["bug/cache.md"])[0].page_content == "Cache note, rewritten."
    assert store.count() == len(NOTES) and lexical_in_step(store)


def test_a_second_writer_waits_then_is_refused(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGBRAIN_LOCK_WAIT", "0.2")
    vectorstore = Store.open(store.folder, BagOfWordsEmbeddings()).as_vectorstore()
    with store.writing(), pytest.raises(StoreLockedError, match="locked by another writer"):
        vectorstore.add_texts(["while another writes"])
    assert store.count() == 0


async def test_async_writes_go_through_the_store(store: Store) -> None:
    vectorstore = store.as_vectorstore()
    ids = await vectorstore.aadd_documents(docs())
    assert store.count() == len(NOTES) and lexical_in_step(store)
    await vectorstore.adelete(ids[:2])
    assert store.count() == len(NOTES) - 2 and lexical_in_step(store)


def test_a_store_without_its_client_is_refused(store: Store) -> None:
    bare = Store(store.collection, store.embeddings, location=store.location)
    with pytest.raises(InvalidInputError, match=r"not a ragbrain store opened with Store\.open"):
        RagbrainChroma(bare)
