"""The retriever as a LangChain app uses it: strict keyword arguments, ``search_kwargs``, a
refusal a chain can see without documents (the run, ``arun``, a callback event), empty and
over-long queries, the model check at open, and the trace's field names."""

from __future__ import annotations

import hashlib
import logging
import math
import uuid
from operator import itemgetter
from pathlib import Path
from typing import Any
from uuid import UUID

import chromadb
import pytest
from chromadb.config import Settings
from langchain_chroma import Chroma
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableBranch, RunnableLambda, RunnablePassthrough

from ragbrain import (
    RETRIEVAL_KEY,
    CorrectiveRetriever,
    InvalidInputError,
    RetrievalContext,
    WrongModelError,
    build_graph,
)
from ragbrain.errors import StoreMismatchError, WrongTypeError
from ragbrain.refusal.offtopic import OffTopicCut
from ragbrain.retriever import EMPTY_QUERY, REFUSAL_EVENT
from ragbrain.store import Store
from tests.support.fakes import NOTES, WORD, BagOfWordsEmbeddings


class OtherBagOfWords(BagOfWordsEmbeddings):
    """Another model of the same dimension: words hashed into other slots."""

    def __init__(self) -> None:
        super().__init__()
        self.model_name = "other-bag-of-words-64"

    def _embed(self, text: str) -> list[float]:
        vector = [0.0] * self.size
        for word in WORD.findall(text.lower()):
            slot = int(hashlib.sha1(word.encode()).hexdigest(), 16) % self.size
            vector[slot] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector] if any(vector) else [1.0] + [0.0] * (self.size - 1)


def refusing(store: Store) -> CorrectiveRetriever:
    """A retriever whose off-topic cut refuses every question (a cut at distance 0)."""
    cut = OffTopicCut(0.0, 0.0, "a cut that refuses everything", "bag-of-words-64")
    return CorrectiveRetriever(graph=build_graph(store, offtopic=cut))


@pytest.fixture
def client() -> chromadb.ClientAPI:
    return chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))


@pytest.fixture
def vectorstore(client: chromadb.ClientAPI) -> Chroma:
    docs = [
        Document(page_content=text, metadata={"source": path, "kind": path.split("/")[0]})
        for path, text in NOTES.items()
    ]
    return Chroma.from_documents(
        docs, BagOfWordsEmbeddings(), client=client, collection_name=f"app-{uuid.uuid4().hex[:8]}"
    )


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))


# --- strict keyword arguments


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"type_fitler": "bug"}, InvalidInputError, r"'type_fitler'\. Did you mean 'type_filter'"),
        ({"top_k": 3}, InvalidInputError, r"unknown keyword argument 'top_k'.*Accepted: .*k, "),
        ({"k": 0}, InvalidInputError, r"from_vectorstore: k must be in 1\.\.100, got 0\.$"),
        ({"k": "3"}, InvalidInputError, "k must be an integer"),
        ({"context": {"k": 3}}, WrongTypeError, r"RetrievalContext\(\*\*that_dict\)"),
        ({"search_kwargs": {"score_threshold": 0.5}}, InvalidInputError, "reads only k, filter"),
        ({"search_kwargs": {"filter": {"source": "x"}}}, InvalidInputError, "type_filter="),
        ({"search_kwargs": {"k": 4}, "k": 5}, InvalidInputError, "k is given twice"),
        ({"search_kwargs": "k=4"}, WrongTypeError, "search_kwargs must be a dict"),
        ({"check_model": "no"}, WrongTypeError, "check_model"),
    ],
    ids=[
        "misspelt",
        "unknown",
        "k0",
        "k-string",
        "context-dict",
        "score-threshold",
        "filter-on-another-key",
        "k-twice",
        "search-kwargs-type",
        "check-model-type",
    ],
)
def test_from_vectorstore_refuses_what_it_would_ignore(
    vectorstore: Chroma, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match) as info:
        CorrectiveRetriever.from_vectorstore(vectorstore, critic=None, **kwargs)
    assert "\n" not in str(info.value) and "graph" not in str(info.value).split("Accepted")[0]


def test_search_kwargs_k_and_a_type_filter_are_honoured(vectorstore: Chroma) -> None:
    plain = CorrectiveRetriever.from_vectorstore(
        vectorstore, critic=None, type_key="kind", search_kwargs={"k": 2}
    )
    assert plain.k == 2 and len(plain.invoke("redis cache backup deploy")) == 2
    typed = CorrectiveRetriever.from_vectorstore(
        vectorstore, critic=None, type_key="kind", search_kwargs={"filter": {"kind": "bug"}}
    )
    assert typed.filter == ["bug"] and typed.type_filter is None
    many = CorrectiveRetriever.from_vectorstore(
        vectorstore,
        critic=None,
        type_key="kind",
        search_kwargs={"k": 3, "filter": {"kind": {"$in": ["bug", "howto"]}}},
    )
    assert many.k == 3 and many.filter == ["bug", "howto"]
    direct = CorrectiveRetriever.from_vectorstore(
        vectorstore, critic=None, type_key="kind", filter={"kind": {"$eq": "howto"}}
    )
    assert direct.filter == ["howto"]


def test_from_store_and_the_constructor_are_strict_too(fake_store: Store) -> None:
    with pytest.raises(InvalidInputError, match="Did you mean 'on_critic_error'"):
        CorrectiveRetriever.from_store(
            fake_store.location, embeddings=BagOfWordsEmbeddings(), on_critic_eror="disable"
        )
    retriever = CorrectiveRetriever.from_store(
        fake_store.location, embeddings=BagOfWordsEmbeddings(), search_kwargs={"k": 2}
    )
    assert retriever.k == 2
    with pytest.raises(InvalidInputError, match="filters= for paths"):
        CorrectiveRetriever(graph=retriever.graph, filter={"path": "bug"})


def test_as_vectorstore_is_strict_and_reads_the_apps_type_key(fake_store: Store) -> None:
    with pytest.raises(InvalidInputError, match="Did you mean 'type_key'"):
        fake_store.as_vectorstore(typekey="kind")
    with pytest.raises(WrongTypeError, match="type_key must be a metadata key"):
        fake_store.as_vectorstore(type_key=3)
    vectorstore = fake_store.as_vectorstore(type_key="kind", source_key="url")
    (id_,) = vectorstore.add_texts(["a manual page on rsync"], [{"kind": "manpage", "url": "m/r"}])
    (got,) = vectorstore.get_by_ids([id_])
    assert got.metadata == {"kind": "manpage", "type": "manpage", "url": "m/r", "source": "m/r"}
    assert "manpage" in fake_store.known_types()


# --- a refusal a chain can see


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.custom: list[tuple[str, Any]] = []
        self.retrievers: list[str] = []

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        tags: Any = None,
        metadata: Any = None,
        **kw: Any,
    ) -> None:
        self.custom.append((name, data))

    def on_retriever_start(self, serialized: Any, query: str, **kwargs: Any) -> None:
        self.retrievers.append(query)


def test_run_takes_a_config_with_callbacks_and_a_refusal_is_an_event(fake_store: Store) -> None:
    retriever = refusing(fake_store)
    events = Events()
    out = retriever.run("pasta recipe", config={"callbacks": [events]})
    assert out["answerable"] is False and out["documents"] == []
    assert events.retrievers == ["pasta recipe"]
    ((name, data),) = events.custom
    assert name == REFUSAL_EVENT
    assert data == {"query": "pasta recipe", "reason": out["abstain_reason"]}
    # invoke sends it too: a chain of `retriever | format_docs` can listen for it.
    events.custom.clear()
    assert retriever.invoke("pasta recipe", config={"callbacks": [events]}) == []
    assert [n for n, _ in events.custom] == [REFUSAL_EVENT]


async def test_arun_matches_run_and_sends_the_event(fake_store: Store) -> None:
    answering = CorrectiveRetriever(graph=build_graph(fake_store, offtopic=None))
    sync = answering.run("redis cache stampede")
    done = await answering.arun("redis cache stampede")
    assert [d.id for d in done["documents"]] == [d.id for d in sync["documents"]]
    assert done["answerable"] and done["notes"] == sync["notes"]
    events = Events()
    out = await refusing(fake_store).arun("pasta recipe", config={"callbacks": [events]})
    assert not out["answerable"] and [n for n, _ in events.custom] == [REFUSAL_EVENT]
    async_events = [
        e async for e in refusing(fake_store).astream_events("pasta recipe", version="v2")
    ]
    assert any(e["event"] == "on_custom_event" and e["name"] == REFUSAL_EVENT for e in async_events)


def chain_over(retriever: CorrectiveRetriever, llm: FakeListChatModel) -> Any:
    """The documented LCEL chain: the run decides whether the LLM is asked at all."""

    def format_docs(docs: list[Document]) -> str:
        return "\n\n".join(f"[{d.metadata['source']}] {d.page_content}" for d in docs)

    prompt = ChatPromptTemplate.from_template("Notes:\n{context}\n\nQ: {question}")
    answer = (
        {
            "context": lambda x: format_docs(x["run"]["documents"]),
            "question": itemgetter("question"),
        }
        | prompt
        | llm
        | StrOutputParser()
    )
    return {
        "run": RunnableLambda(retriever.run, afunc=retriever.arun),
        "question": RunnablePassthrough(),
    } | RunnableBranch(
        (
            lambda x: not x["run"]["answerable"],
            lambda x: f"The notes do not cover this ({x['run']['abstain_reason']}).",
        ),
        answer,
    )


async def test_an_lcel_chain_answers_a_refusal_without_calling_the_llm(fake_store: Store) -> None:
    llm = FakeListChatModel(responses=["The cache stampeded after a deploy."] * 3)
    refused = chain_over(refusing(fake_store), llm).invoke("pasta recipe")
    assert refused.startswith("The notes do not cover this (off-topic:")
    assert await chain_over(refusing(fake_store), llm).ainvoke("pasta recipe") != llm.responses[0]
    assert llm.i == 0  # the LLM was never called
    answering = CorrectiveRetriever(graph=build_graph(fake_store, offtopic=None))
    events = Events()
    answered = chain_over(answering, llm).invoke(
        "redis cache stampede", config={"callbacks": [events]}
    )
    assert answered == "The cache stampeded after a deploy." and llm.i == 1
    assert events.retrievers == ["redis cache stampede"]  # the run is traced under the chain


# --- empty and over-long queries


def test_an_empty_query_answers_nothing_and_says_why(fake_store: Store) -> None:
    retriever = CorrectiveRetriever(graph=build_graph(fake_store))
    for query in ("", "   \n"):
        assert retriever.invoke(query) == []
        out = retriever.run(query)
        assert out["documents"] == [] and out["answerable"] is False
        assert out["abstain_reason"] == EMPTY_QUERY
        assert out["notes"] == [f"query: {EMPTY_QUERY}; nothing searched"]
    with pytest.raises(InvalidInputError, match="query must be a string, got NoneType"):
        retriever.invoke(None)  # type: ignore[arg-type]


def test_an_over_long_query_is_cut_with_a_warning_in_the_trace(
    fake_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    retriever = CorrectiveRetriever(graph=build_graph(fake_store, offtopic=None))
    query = "redis cache stampede " * 1000  # 21,000 characters
    with caplog.at_level(logging.WARNING, logger="ragbrain.retriever"):
        out = retriever.run(query)
    assert out["documents"]
    assert out["notes"][0].startswith("query: 21,000 characters, cut to the first 10,000")
    assert "cut to the first 10,000" in caplog.text
    assert retriever.invoke(query)[0].id == out["documents"][0].id


# --- the trace's names


def test_first_search_quality_names_the_gate_and_answerable_the_decision(
    fake_store: Store,
) -> None:
    retriever = CorrectiveRetriever(
        graph=build_graph(fake_store, offtopic=None),
        context=RetrievalContext(gate_threshold=0.0),  # every first search is poor
    )
    out = retriever.run("redis cache stampede")
    assert out["first_search_quality"] == out["verdict"] == "poor"
    assert out["answerable"] is True and out["documents"]
    trace = out["documents"][0].metadata[RETRIEVAL_KEY]
    assert trace["first_search_quality"] == trace["verdict"] == "poor"


# --- the model check at open


def test_a_wrong_query_model_of_the_same_dimension_is_refused(vectorstore: Chroma) -> None:
    with pytest.raises(WrongModelError) as info:
        CorrectiveRetriever.from_vectorstore(vectorstore, embeddings=OtherBagOfWords())
    message = str(info.value)
    assert "'bag-of-words-64'" in message and "'other-bag-of-words-64'" in message
    assert "check_model=False" in message
    assert isinstance(info.value, StoreMismatchError)
    assert info.value.agreement is not None and info.value.agreement < 0.9
    assert CorrectiveRetriever.from_vectorstore(
        vectorstore, embeddings=OtherBagOfWords(), critic=None, check_model=False
    )
    assert CorrectiveRetriever.from_vectorstore(vectorstore, embeddings=BagOfWordsEmbeddings())


def test_a_vector_stores_own_model_that_did_not_build_it_is_refused(
    client: chromadb.ClientAPI, vectorstore: Chroma
) -> None:
    other = Chroma(vectorstore._collection.name, OtherBagOfWords(), client=client)
    with pytest.raises(WrongModelError, match=r"made by another model.*'other-bag-of-words-64'"):
        CorrectiveRetriever.from_vectorstore(other)


def test_a_ragbrain_store_checks_the_model_it_is_given(fake_store: Store) -> None:
    with pytest.raises(WrongModelError, match=r"'bag-of-words-64'.*'other-bag-of-words-64'"):
        CorrectiveRetriever.from_store(fake_store.location, embeddings=OtherBagOfWords())
    assert CorrectiveRetriever.from_store(
        fake_store.location, embeddings=OtherBagOfWords(), check_model=False
    )
