"""A LangChain RAG app's store, built the documented way (a splitter, ``Chroma.from_documents``
with ``HuggingFaceEmbeddings``, default settings: the l2 space), under the whole pipeline with
the real model and the shipped critic; and LangChain's standard retriever suite on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_tests.integration_tests import RetrieversIntegrationTests
from langchain_text_splitters import RecursiveCharacterTextSplitter

from ragbrain import CorrectiveRetriever
from ragbrain.models.embeddings import minilm_path, set_offline
from ragbrain.paths import sample_notes
from tests.support.fakes import NOTES, BagOfWordsEmbeddings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def huggingface() -> Embeddings:
    """all-MiniLM-L6-v2 as a LangChain app loads it (torch, sentence-transformers), once."""
    from langchain_huggingface import HuggingFaceEmbeddings

    set_offline()
    return HuggingFaceEmbeddings(model_name=str(minilm_path()))


@pytest.fixture(scope="session")
def app_store(
    tmp_path_factory: pytest.TempPathFactory, huggingface: Embeddings
) -> Iterator[Chroma]:
    """The sample notes split and stored the way a LangChain tutorial does it."""
    cache = tmp_path_factory.mktemp("wrapped-cache")
    patch = pytest.MonkeyPatch()
    patch.setenv("RAGBRAIN_CACHE", str(cache))
    notes = sorted(sample_notes().rglob("*.md"))
    docs = [
        Document(
            page_content=path.read_text(encoding="utf-8"),
            metadata={"source": str(path.relative_to(sample_notes())), "type": path.parent.name},
        )
        for path in notes
    ]
    chunks = RecursiveCharacterTextSplitter(chunk_size=800, chunk_overlap=80).split_documents(docs)
    yield Chroma.from_documents(
        chunks,
        huggingface,
        collection_name="langchain-app",
        persist_directory=str(tmp_path_factory.mktemp("app") / "chroma"),
    )
    patch.undo()


@pytest.fixture(scope="session")
def wrapped(app_store: Chroma) -> CorrectiveRetriever:
    return CorrectiveRetriever.from_vectorstore(app_store)


def test_the_known_model_gets_its_gate_and_its_critic(wrapped: CorrectiveRetriever) -> None:
    out = wrapped.run("Why did the nightly backup fail?")
    assert any("l2 space, unit vectors" in n for n in out["notes"])
    assert any("gate 0.455, shipped for all-MiniLM-L6-v2" in n for n in out["notes"])
    # all-MiniLM-L6-v2: the evidence critic, reading the BM25 index built from the collection
    assert out["critic"].startswith("on (evidence, threshold"), out["critic"]
    assert all(doc.metadata["retrieval"]["critic_score"] is not None for doc in out["documents"])
    assert out["documents"][0].metadata["source"].endswith("nightly-backup-job-failed-silently.md")


def test_every_distance_in_the_trace_is_one_minus_the_cosine(
    wrapped: CorrectiveRetriever, app_store: Chroma, huggingface: Embeddings
) -> None:
    worst = 0.0
    for query in ("redis cache stampede", "how do we roll back a deploy", "coffee machine budget"):
        docs = wrapped.invoke(query)
        assert docs, query
        stored = app_store._collection.get(ids=[d.id for d in docs], include=["embeddings"])
        vectors = dict(zip(stored["ids"], np.asarray(stored["embeddings"]), strict=True))
        q = np.asarray(huggingface.embed_query(query))
        for doc in docs:
            v = vectors[doc.id]
            cosine = float(v @ q / (np.linalg.norm(v) * np.linalg.norm(q)))
            worst = max(worst, abs(doc.metadata["retrieval"]["distance"] - (1 - cosine)))
    assert worst <= 1e-3


def test_an_unknown_model_gets_the_plain_critic_layer(tmp_path: Path) -> None:
    vectorstore = Chroma.from_documents(
        [Document(page_content=t, metadata={"source": p}) for p, t in NOTES.items()],
        BagOfWordsEmbeddings(),
        collection_name="fake-model",
        persist_directory=str(tmp_path / "chroma"),
    )
    out = CorrectiveRetriever.from_vectorstore(vectorstore).run("nightly backup")
    assert out["critic"].startswith("on (") and "with distance" not in out["critic"]


class TestWrappedChromaStandard(RetrieversIntegrationTests):
    """LangChain's standard retriever suite over the wrapped store, with the defaults."""

    @pytest.fixture(autouse=True)
    def _graph(self, wrapped: CorrectiveRetriever) -> None:
        type(self).wrapped = wrapped

    @property
    def retriever_constructor(self) -> type[CorrectiveRetriever]:
        return CorrectiveRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"graph": type(self).wrapped.graph}

    @property
    def retriever_query_example(self) -> str:
        return "What caused the Redis cache stampede after the deploy and how was it fixed?"


def test_a_query_model_of_the_same_dimension_that_did_not_build_it_is_refused(
    app_store: Chroma, e5: Embeddings, minilm: Embeddings
) -> None:
    """multilingual-e5-small makes 384-dimensional vectors as all-MiniLM-L6-v2 does: only
    the model check tells them apart, naming both."""
    from ragbrain import WrongModelError

    with pytest.raises(WrongModelError) as info:
        CorrectiveRetriever.from_vectorstore(app_store, embeddings=e5)
    assert "'all-MiniLM-L6-v2'" in str(info.value)
    assert "'multilingual-e5-small'" in str(info.value)
    assert info.value.agreement is not None and info.value.agreement < 0.5
    # ragbrain's own int8 MiniLM agrees with the app's fp32 one.
    assert CorrectiveRetriever.from_vectorstore(app_store, embeddings=minilm)


@pytest.mark.parametrize("model", ["minilm", "e5"])
def test_batched_queries_are_the_queries_embedded_one_by_one(
    model: str, request: pytest.FixtureRequest
) -> None:
    from ragbrain.models.batch import embed_queries
    from ragbrain.refusal.offtopic import bank

    embeddings: Embeddings = request.getfixturevalue(model)
    questions = list(bank())[:40]
    batched = np.asarray(embed_queries(embeddings, questions))
    single = np.asarray([embeddings.embed_query(q) for q in questions])
    cosines = (batched * single).sum(axis=1)
    # On ONNX Runtime int8 the activations are quantized per batch: a question embedded in a
    # batch moves by up to 0.006 of cosine (all-MiniLM-L6-v2), on torch fp32 by float noise.
    assert cosines.min() > 0.99
