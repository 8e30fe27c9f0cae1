"""One way to build: ``open_graph``, ``from_store``, ``from_vectorstore`` and the MCP server
hand their opened store to ``factory.assemble`` with the shared options in one ``BuildOptions``;
``assemble`` readies the critic beside the store's lexical index."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_core.documents import Document

from ragbrain import CorrectiveRetriever, Store, factory, open_graph
from ragbrain.errors import CriticLoadError, StoreUnavailableError
from ragbrain.factory import BuildOptions, Built, assemble
from ragbrain.mcp_server.service import RagbrainService
from ragbrain.store.lexical import LexicalSearcher
from tests.support.fakes import BagOfWordsEmbeddings, OverlapCritic


@pytest.fixture
def assembled(monkeypatch: pytest.MonkeyPatch) -> list[BuildOptions]:
    """The options of every ``assemble`` call from now on."""
    calls: list[BuildOptions] = []
    real = factory.assemble

    def record(
        store: Store, options: BuildOptions, prepare: Callable[[], LexicalSearcher | None]
    ) -> Built:
        calls.append(options)
        return real(store, options, prepare)

    monkeypatch.setattr(factory, "assemble", record)
    return calls


def test_every_entry_point_builds_through_assemble(
    fake_store: Store,
    fake_embeddings: BagOfWordsEmbeddings,
    assembled: list[BuildOptions],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    location = fake_store.location
    open_graph(location, embeddings=fake_embeddings, critic=None)
    CorrectiveRetriever.from_store(
        location, embeddings=fake_embeddings, critic=None, check_model=False, k=2
    )
    RagbrainService(location, critic=None, embeddings=fake_embeddings).load()
    client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
    docs = [Document(page_content="the nightly backup failed", metadata={"source": "a.md"})]
    vectorstore = Chroma.from_documents(docs, fake_embeddings, client=client)
    try:
        wrapped = CorrectiveRetriever.from_vectorstore(vectorstore, critic=None)
    finally:
        client.delete_collection(vectorstore._collection.name)

    assert assembled == [
        BuildOptions(embeddings=fake_embeddings, critic=None),
        BuildOptions(embeddings=fake_embeddings, critic=None, check_model=False),
        BuildOptions(
            embeddings=fake_embeddings, critic=None, on_critic_error="disable", check_model=False
        ),
        BuildOptions(critic=None),
    ]
    assert callable(wrapped.store_notes)  # as of each run: the record count follows writes
    notes = wrapped.store_notes()
    assert notes and notes[-1].startswith("store: ")


def test_build_options_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        BuildOptions().critic = None  # type: ignore[misc]


def test_a_store_without_a_lexical_index_gets_no_critic(fake_store: Store) -> None:
    built = assemble(fake_store, BuildOptions(critic=OverlapCritic()), lambda: None)

    assert built.critic is None and built.lexical is None
    assert built.critic_off_reason == "the collection stores no texts to judge"
    out = built.graph.invoke({"query": "backup", "type_filter": None})
    assert out["critic"] == "off: the collection stores no texts to judge"


def test_a_critic_that_fails_to_load_is_reported_before_what_the_store_raised(
    fake_store: Store, tmp_path: Path
) -> None:
    def unavailable() -> LexicalSearcher | None:
        raise StoreUnavailableError("the server is down")

    missing = BuildOptions(critic=tmp_path / "no-critic")
    with pytest.raises(CriticLoadError, match="no such critic folder"):
        assemble(fake_store, missing, unavailable)
    with pytest.raises(StoreUnavailableError, match="down"):
        assemble(fake_store, BuildOptions(critic=None), unavailable)

    disabled = dataclasses.replace(missing, on_critic_error="disable")
    built = assemble(fake_store, disabled, lambda: LexicalSearcher(fake_store))
    assert built.critic is None and built.critic_off_reason.startswith("failed to load")
