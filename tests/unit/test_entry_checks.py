"""Every public entry point refuses an argument of the wrong type with a message naming what
was passed and what to pass, before it opens or loads anything; ``critic="default"`` is
accepted by ``build_graph`` as by the other entry points."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from langchain_chroma import Chroma

from ragbrain import CorrectiveRetriever, Store, build_graph, open_graph
from ragbrain.critic import choice
from ragbrain.critic.folder import default_critic_path
from ragbrain.errors import InvalidInputError, WrongTypeError
from ragbrain.factory import resolve_critic
from tests.support.fakes import BagOfWordsEmbeddings, OverlapCritic


def test_wrong_types_are_value_and_type_errors() -> None:
    assert issubclass(WrongTypeError, InvalidInputError)
    assert issubclass(WrongTypeError, ValueError) and issubclass(WrongTypeError, TypeError)


class _LoadedCritic(OverlapCritic):
    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder

    def for_model(self, embedding_model: str | None) -> _LoadedCritic:
        return self


def test_build_graph_loads_the_critic_it_is_named(
    fake_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(choice, "TransformerCritic", _LoadedCritic)
    out = build_graph(fake_store, critic="default").invoke(
        {"query": "redis cache", "type_filter": None}
    )
    assert out["critic"].startswith("on")
    shipped = resolve_critic("default")[0]
    assert isinstance(shipped, choice.ShippedCritic)
    loaded = shipped.critic_for(fake_store.embedding_model)  # not an English store's model
    assert isinstance(loaded, _LoadedCritic) and loaded.folder == default_critic_path()
    off = build_graph(fake_store, critic=None).invoke({"query": "redis", "type_filter": None})
    assert off["critic"] == "off: no critic configured"


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: build_graph(s, critic=0.5), r"critic must be None.*got float 0\.5"),
        (lambda s: build_graph(s, critic=["default"]), "critic must be None.*builtins.list"),
        (lambda s: build_graph(str(s.location)), "opened ragbrain Store.*open_graph"),
        (lambda s: build_graph(s, lexical="bm25"), "LexicalSearcher"),
        (
            lambda s: CorrectiveRetriever.from_store(s.location, embeddings="minilm"),
            r"embeddings must be a LangChain Embeddings.*embeddings_for\('minilm'\)",
        ),
        (CorrectiveRetriever.from_store, "use build_graph"),
        (lambda s: CorrectiveRetriever.from_store(s.location, critic=3), "critic must be None"),
        (
            lambda s: open_graph(s.location, on_critic_error="ignore"),
            "on_critic_error must be one of 'raise', 'disable'; got str 'ignore'",
        ),
        (lambda s: open_graph(s.location, convert_space="yes"), "convert_space must be True"),
        (lambda s: open_graph(None, server=8000), "server must be a URL"),
        (lambda s: open_graph(s.location, policy=5.0), "StorePolicy"),
        (lambda s: Store.open(s.location, "minilm"), "Store.open: embeddings must be"),
        (lambda s: Store.open(42), "Store.open: the store must be a folder"),
        (lambda s: resolve_critic(object()), "critic must be None"),
    ],
    ids=[
        "graph-critic-number",
        "graph-critic-list",
        "graph-store-path",
        "graph-lexical",
        "from-store-embeddings",
        "from-store-store-object",
        "from-store-critic",
        "open-graph-on-error",
        "open-graph-flag",
        "open-graph-server",
        "open-graph-policy",
        "store-open-embeddings",
        "store-open-path",
        "resolve-critic",
    ],
)
def test_wrong_types_are_refused_naming_what_to_pass(
    fake_store: Store, call: Any, match: str
) -> None:
    with pytest.raises(WrongTypeError, match=match):
        call(fake_store)


def test_a_retriever_over_something_else_than_a_graph_is_refused(fake_store: Store) -> None:
    with pytest.raises(
        ValueError, match=r"compiled ragbrain graph.*build_graph"
    ):  # pydantic wraps it
        CorrectiveRetriever(graph=fake_store)


def test_build_graph_points_a_langchain_vector_store_to_from_vectorstore() -> None:
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    vectorstore = Chroma("entry-checks", BagOfWordsEmbeddings(), client=client)
    try:
        with pytest.raises(WrongTypeError, match="from_vectorstore"):
            build_graph(vectorstore)  # type: ignore[arg-type]
        with pytest.raises(WrongTypeError, match="from_vectorstore"):
            CorrectiveRetriever.from_store(vectorstore)  # type: ignore[arg-type]
    finally:
        client.delete_collection("entry-checks")


def test_a_bad_critic_is_refused_before_the_store_is_opened(tmp_path: Path) -> None:
    missing = tmp_path / "no-store"
    with pytest.raises(WrongTypeError, match="critic"):
        CorrectiveRetriever.from_store(missing, critic=1)
    assert not missing.exists()


def test_the_shipped_critic_is_chosen_by_what_the_store_holds() -> None:
    kind = choice.critic_kind_for
    english, e5 = "all-MiniLM-L6-v2", "multilingual-e5-small"
    assert kind(english, None, english) == "evidence"  # its layer's own model: any store
    assert kind(english, 1.0, english) == "evidence"
    assert kind(e5, 3.0, english) == "evidence"  # notes of several chunks a note
    assert kind(e5, 1.0, english) == "cross-encoder"  # one-chunk passages (the BEIR e5 stores)
    assert kind(e5, None, english) == "cross-encoder"  # not measured
    assert kind("some-other-model", 3.0, english) == "cross-encoder"  # nothing fit for it
    assert kind(None, 3.0, english) == "cross-encoder"


def test_the_shipped_critic_reads_the_stores_recorded_chunks_per_note(fake_store: Store) -> None:
    from ragbrain.refusal.offtopic import OffTopicCut

    fake_store.set_offtopic_record(OffTopicCut(0.5, 0.45, "test", "m", per_source=3.5).to_json())
    assert choice.recorded_per_source(fake_store) == 3.5
    fake_store.set_offtopic_record(OffTopicCut(0.5, 0.45, "test", "m").to_json())
    assert choice.recorded_per_source(fake_store) is None  # not measured
