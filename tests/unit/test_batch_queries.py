"""Many queries embedded in batches, each as ``embed_query`` would embed it."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

from ragbrain.models.batch import embed_queries
from tests.support.fakes import BagOfWordsEmbeddings


class Counting(BagOfWordsEmbeddings):
    """Counts calls; with ``prefix`` a query is embedded with it (as e5's ``query: ``)."""

    def __init__(self, prefix: str = "") -> None:
        super().__init__()
        self.prefix = prefix
        self.calls: list[tuple[str, int]] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(("documents", len(texts)))
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls.append(("query", 1))
        return self._embed(self.prefix + text)


class OwnBatch(Counting):
    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(("queries", len(texts)))
        return [self._embed(self.prefix + t) for t in texts]


QUESTIONS = [f"how do I cook dish number {i} with rice" for i in range(50)]


def reference(embeddings: Embeddings, texts: list[str]) -> list[list[float]]:
    return [embeddings.embed_query(t) for t in texts]


def test_a_model_whose_documents_are_its_queries_is_batched() -> None:
    model = Counting()
    assert embed_queries(model, QUESTIONS) == reference(Counting(), QUESTIONS)
    assert model.calls == [("query", 1), ("documents", 1), ("documents", 49)]


def test_a_model_with_a_query_prefix_is_embedded_one_query_at_a_time() -> None:
    model = Counting(prefix="query: zebra ")
    assert embed_queries(model, QUESTIONS) == reference(Counting("query: zebra "), QUESTIONS)
    assert [c for c in model.calls if c[0] == "documents"] == [("documents", 1)]


def test_a_models_own_batch_is_used_with_its_prefix() -> None:
    model: Any = OwnBatch(prefix="query: zebra ")
    assert embed_queries(model, QUESTIONS) == reference(Counting("query: zebra "), QUESTIONS)
    assert model.calls == [("queries", 50)]
    assert embed_queries(model, []) == []


def test_the_gates_pseudo_searches_embed_their_questions_in_one_batch(fake_store: Any) -> None:
    from ragbrain.gates import pseudo_searches
    from ragbrain.store import Store

    model = Counting()
    store = Store.open(fake_store.location, model)
    records = store.rows(store.all_ids())
    model.calls.clear()
    distances, flags = pseudo_searches(store, records, 5)
    assert distances and len(distances) == len(flags)
    assert model.calls == [("query", 1), ("documents", 1), ("documents", len(records) - 1)]
    # The same best distances as searching each question by its text.
    from ragbrain.gates import pseudo_query

    by_text = [
        store.search(q, 5)[0]["distance"]
        for _, text, meta in records
        if (q := pseudo_query(text or "", str((meta or {}).get("title") or "")))
    ]
    assert [d for d, other in zip(distances, flags, strict=True) if not other] == by_text
