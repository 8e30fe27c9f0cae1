"""A store follows other writers: two stores on one folder stand for two processes (each opens
its own fresh Chroma client, as another process would), a re-embed with another model, the
folder deleted and restored."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragbrain.errors import StoreMismatchError, StoreNotFoundError
from ragbrain.ingest import ingest
from ragbrain.ingest.reembed import re_embed
from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, E5_SMALL, model_name_of
from ragbrain.store import Store
from ragbrain.store.lexical import LexicalSearcher
from ragbrain.store.processes import Follower
from tests.support.fakes import BagOfWordsEmbeddings, Named


def write(store: Store, id_: str, text: str) -> None:
    store.upsert([id_], [text], [{"type": "note"}], store.embeddings.embed_documents([text]))


def nearest(store: Store, query: str) -> list[str]:
    return [hit["id"] for hit in store.search(query, 3)]


def test_a_reader_sees_another_writers_adds_edits_and_deletes(tmp_path: Path) -> None:
    reader = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    for i, text in enumerate(["redis cache stampede", "helm deploy rollback", "backup failed"]):
        write(reader, f"n{i}", text)
    assert nearest(reader, "redis cache stampede")[0] == "n0"  # its index is loaded

    writer = Store.open(tmp_path / "s", BagOfWordsEmbeddings())
    write(writer, "new", "zorblax flux capacitor")
    write(writer, "n1", "kubernetes liveness probe")  # an edit under the same id
    writer.delete(["n0"])

    assert nearest(reader, "zorblax flux capacitor")[0] == "new"
    assert nearest(reader, "kubernetes liveness probe")[0] == "n1"
    assert "n0" not in nearest(reader, "redis cache stampede")
    assert sorted(reader.all_ids()) == ["n1", "n2", "new"]
    # And back: the writer follows what the reader writes.
    write(reader, "late", "quindle lamp glows amber")
    assert nearest(writer, "quindle lamp glows amber")[0] == "late"


def test_nothing_is_reopened_when_nothing_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    write(store, "a", "redis cache")
    reopened: list[str] = []
    real = Store._reopen

    def counted(self: Store) -> None:
        reopened.append(self.location)
        real(self)

    monkeypatch.setattr(Store, "_reopen", counted)
    store.search("redis", 1)
    write(store, "b", "helm deploy")  # its own write
    store.search("helm", 1)
    # Another process opening the folder touches the file's time but writes nothing.
    Store.open(tmp_path / "s", BagOfWordsEmbeddings()).search("redis", 1)
    store.search("redis", 1)
    assert reopened == []
    Store.open(tmp_path / "s", BagOfWordsEmbeddings()).delete(["a"])
    assert nearest(store, "redis cache") == ["b"] and len(reopened) == 1


def test_the_lexical_index_and_the_types_follow_too(tmp_path: Path) -> None:
    reader = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    write(reader, "a", "redis cache")
    lexical = LexicalSearcher(reader)
    writer = Store.open(tmp_path / "s", BagOfWordsEmbeddings())
    text = "zorblax flux capacitor"
    writer.upsert(["z"], [text], [{"type": "gadget"}], writer.embeddings.embed_documents([text]))
    assert "z" in lexical.index.ids
    assert sorted(reader.known_types()) == ["gadget", "note"]
    assert [h["id"] for h in reader.search(text, 2, types=["gadget"])] == ["z"]


def test_a_re_embed_elsewhere_switches_a_store_that_follows_the_recorded_model(
    registered_models: dict[str, Named], notes_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "s"
    ingest(notes_dir, Store.open(folder, create=True))
    follower = Store.open(folder)  # no model chosen: the store's
    chosen = Store.open(folder, registered_models[DEFAULT_EMBEDDING_MODEL])  # chosen by the caller
    assert follower.search("redis cache", 1) and chosen.search("redis cache", 1)

    re_embed(notes_dir, folder, registered_models[E5_SMALL])

    assert model_name_of(follower.embeddings) == DEFAULT_EMBEDDING_MODEL
    # Its next query is embedded with the new model (384 dimensions, as the store now holds).
    hit = follower.search("redis cache stampede", 1)[0]
    stored = follower.hits_by_id("redis cache stampede", [hit["id"]])[0]
    assert hit["distance"] == pytest.approx(stored["distance"], abs=1e-5)
    assert model_name_of(follower.embeddings) == E5_SMALL
    with pytest.raises(StoreMismatchError, match=r"re-embedded with .*multilingual-e5-small"):
        chosen.search("redis cache", 1)
    with pytest.raises(StoreMismatchError, match="re-embedded"):
        write(chosen, "x", "never written with the old model")


def test_a_deleted_folder_is_named_and_used_again_once_back(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    write(store, "a", "redis cache stampede")
    shutil.move(tmp_path / "s", tmp_path / "aside")
    with pytest.raises(StoreNotFoundError, match=r"is gone: .*chroma.sqlite3 is missing"):
        store.search("redis", 1)
    shutil.move(tmp_path / "aside", tmp_path / "s")
    assert nearest(store, "redis cache stampede") == ["a"]


def test_a_folder_replaced_by_another_store_is_read_afresh(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    write(store, "old", "redis cache stampede")
    other = Store.open(tmp_path / "t", BagOfWordsEmbeddings(), create=True)
    write(other, "new", "redis cache stampede")
    del other
    shutil.rmtree(tmp_path / "s")
    shutil.move(tmp_path / "t", tmp_path / "s")
    assert nearest(store, "redis cache stampede") == ["new"]


def test_the_follower_tells_a_touch_from_a_write(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    follower = Follower(tmp_path / "s" / "chroma.sqlite3")
    follower.settle()
    Store.open(tmp_path / "s", BagOfWordsEmbeddings())  # opening touches the file
    assert not follower.changed()
    write(store, "a", "redis")
    assert follower.changed()
    follower.settle()
    store.set_gate_threshold(0.4, "test")  # metadata only
    assert follower.changed()


def test_as_vectorstore_reads_follow_another_writer(tmp_path: Path) -> None:
    vectorstore = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True).as_vectorstore()
    vectorstore.add_texts(["redis cache stampede"], ids=["a"])
    assert vectorstore.similarity_search("redis cache stampede", k=1)[0].id == "a"
    write(Store.open(tmp_path / "s", BagOfWordsEmbeddings()), "z", "zorblax flux capacitor")
    assert vectorstore.similarity_search("zorblax flux capacitor", k=1)[0].id == "z"


def test_a_wrapped_persistent_collection_follows_another_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chromadb
    from chromadb.config import Settings
    from langchain_chroma import Chroma

    from ragbrain.store.processes import fresh_client
    from ragbrain.store.wrapped import ModelNames, wrap_chroma

    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    embeddings = BagOfWordsEmbeddings()
    client = chromadb.PersistentClient(str(tmp_path / "db"), Settings(anonymized_telemetry=False))
    mine = Chroma(
        client=client,
        collection_name="notes",
        embedding_function=embeddings,
        collection_metadata={"hnsw:space": "cosine"},
    )
    mine.add_texts(["redis cache stampede"], ids=["a"])
    store, _ = wrap_chroma(
        mine, embeddings, names=ModelNames(model_name_of(embeddings), model_name_of(embeddings))
    )
    assert nearest(store, "redis cache stampede") == ["a"]
    # Another process writes to the caller's folder with its own client.
    other = fresh_client(tmp_path / "db").get_collection("notes")
    text = "zorblax flux capacitor"
    other.add(ids=["z"], documents=[text], embeddings=embeddings.embed_documents([text]))
    other.delete(ids=["a"])
    assert nearest(store, text)[0] == "z"
    assert "a" not in nearest(store, "redis cache stampede")
