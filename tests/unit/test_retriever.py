"""CorrectiveRetriever end to end on a real Chroma store with a fake embedding model."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document

from ragbrain import (
    RETRIEVAL_KEY,
    CorrectiveRetriever,
    InvalidInputError,
    RetrievalContext,
    StoreMismatchError,
    StoreNotFoundError,
    build_graph,
)
from ragbrain.store import Store
from tests.support.fakes import BagOfWordsEmbeddings, OverlapCritic

TRACE_KEYS = {
    "distance",
    "critic_score",
    "depth",
    "complexity",
    "verdict",
    "fallback",
    "from_fallback",
}


@pytest.fixture
def retriever(fake_store: Store) -> CorrectiveRetriever:
    return CorrectiveRetriever(graph=build_graph(fake_store))


def test_documents_carry_the_trace(retriever: CorrectiveRetriever) -> None:
    docs = retriever.invoke("redis cache stampede after deploy")
    assert 0 < len(docs) <= 7
    assert docs[0].metadata["source"] == "bug/cache.md"
    for doc in docs:
        trace = doc.metadata[RETRIEVAL_KEY]
        assert set(trace) >= TRACE_KEYS
        assert trace["critic_score"] is None and trace["critic"].startswith("off")
        assert {"source", "type", "chunk"} <= set(doc.metadata)
        assert doc.id
    distances = [d.metadata[RETRIEVAL_KEY]["distance"] for d in docs]
    assert distances == sorted(distances)


def test_fallback_rescues_a_wrong_type_filter(retriever: CorrectiveRetriever) -> None:
    context = RetrievalContext(gate_threshold=0.5)
    tight = retriever.model_copy(update={"context": context})
    out = tight.run("nightly backup s3 credentials expired", type_filter="lesson")
    assert out["verdict"] == "poor" and out["fallback"] is True
    top = out["documents"][0]
    assert top.metadata["source"] == "bug/backup.md"
    assert top.metadata[RETRIEVAL_KEY]["from_fallback"] is True
    assert len({d.id for d in out["documents"]}) == len(out["documents"])  # no duplicates
    assert len(out["documents"]) <= out["depth"]


def test_good_search_skips_the_fallback(retriever: CorrectiveRetriever) -> None:
    out = retriever.run("nightly backup s3 credentials expired", type_filter=["bug"])
    assert out["verdict"] == "good" and out["fallback"] is False
    assert {d.metadata["type"] for d in out["documents"]} == {"bug"}


FIVE_STEPS = ["choose_depth", "vector_search", "assess_quality", "fallback_search", "critic_filter"]


@pytest.mark.parametrize("critic", [None, OverlapCritic()], ids=["critic-off", "critic-on"])
def test_graph_never_loops(fake_store: Store, critic: OverlapCritic | None) -> None:
    graph = build_graph(fake_store, critic)
    context = RetrievalContext(gate_threshold=0.0)  # everything is poor
    steps = [
        next(iter(chunk))
        for chunk in graph.stream(
            {"query": "zebra", "type_filter": ["bug"]}, context=context, stream_mode="updates"
        )
    ]
    assert steps == FIVE_STEPS


@pytest.mark.parametrize("type_filter", [None, ["lesson"]])
def test_without_a_critic_critic_filter_keeps_every_hit(
    fake_store: Store, type_filter: list[str] | None
) -> None:
    """The critic-off graph has the same five nodes; critic_filter returns every hit, in
    order, and the notes come in the order things ran."""
    graph = build_graph(fake_store, critic_off_reason="not wanted here")
    assert set(FIVE_STEPS) <= set(graph.get_graph().nodes)
    context = RetrievalContext(gate_threshold=0.5)  # the lesson filter is poor, so it widens
    query = "nightly backup s3 credentials expired"
    out = graph.invoke({"query": query, "type_filter": type_filter}, context=context)
    assert out["fallback"] is (type_filter is not None)
    assert out["critic"] == "off: not wanted here"
    assert out["answerable"] is True and out["abstain_reason"] is None
    hits = fake_store.search(query, out["depth"], None)
    if type_filter is None:
        assert [d.id for d in out["documents"]] == [h["id"] for h in hits]
    assert out["documents"] and all(
        d.metadata[RETRIEVAL_KEY]["critic"] == "off: not wanted here" for d in out["documents"]
    )
    steps = ["depth", "vector search", "verdict", "fallback search", "critic off"]
    if type_filter is None:
        steps.remove("fallback search")
    assert [next(s for s in steps if note.startswith(s)) for note in out["notes"]] == steps
    assert out["notes"][-1].startswith(
        f"critic off: not wanted here; kept all {len(out['documents'])}"
    )


def test_critic_drops_irrelevant_chunks(fake_store: Store) -> None:
    critic = OverlapCritic()
    retriever = CorrectiveRetriever(graph=build_graph(fake_store, critic))
    out = retriever.run("redis cache stampede")
    judged = min(out["candidates"], fake_store.count())  # the store holds fewer than 10
    assert out["candidates"] == 10 and out["depth"] == 5
    assert critic.calls == [("redis cache stampede", judged)]  # one batch
    assert out["documents"], out["notes"]
    # the critic gets every hit's cosine distance beside its text, in the same order
    (distances,) = critic.distances
    assert distances is not None and len(distances) == judged
    assert {d.metadata[RETRIEVAL_KEY]["distance"] for d in out["documents"]} <= set(distances)
    for doc in out["documents"]:
        assert doc.metadata[RETRIEVAL_KEY]["critic_score"] >= 0.5
    assert "dropped" in out["notes"][-1]
    assert len(out["documents"]) < judged


class _KeepAll:
    """A critic that keeps every chunk it is shown."""

    threshold = 0.5

    def score(self, query: str, passages: Any, distances: Any = None) -> list[float]:
        return [1.0] * len(passages)


def test_what_the_critic_keeps_may_raise_the_depth(fake_store: Store) -> None:
    """Every candidate the critic keeps is handed over, up to the number judged; with the
    critic off the depth caps the list; a caller's k caps both."""
    query = "redis cache stampede"  # short: depth 5
    kept = CorrectiveRetriever(graph=build_graph(fake_store, _KeepAll())).run(query)
    assert kept["depth"] == 5 and len(kept["documents"]) == fake_store.count() == 6
    assert "more than the depth, 5" in kept["notes"][-1]
    off = CorrectiveRetriever(graph=build_graph(fake_store)).run(query)
    assert len(off["documents"]) == 5
    assert [d.id for d in off["documents"]] == [d.id for d in kept["documents"]][:5]
    fixed = CorrectiveRetriever(graph=build_graph(fake_store, _KeepAll())).run(query, k=3)
    assert (fixed["candidates"], len(fixed["documents"])) == (3, 3)


class _AtTheCut:
    """A critic that passes every chunk exactly at its threshold: kept, with no evidence."""

    threshold = 0.5

    def score(self, query: str, passages: Any, distances: Any = None) -> list[float]:
        return [self.threshold] * len(passages)


def test_a_pass_at_the_cut_never_raises_the_depth(fake_store: Store) -> None:
    out = CorrectiveRetriever(graph=build_graph(fake_store, _AtTheCut())).run("redis cache")
    assert out["depth"] == 5 and len(out["documents"]) == 5
    assert out["answerable"] is True


class NaNCritic:
    threshold = 0.0

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        return [math.nan] * len(passages)


def test_all_dropped_is_an_empty_list_and_the_trace_says_why(fake_store: Store) -> None:
    retriever = CorrectiveRetriever(graph=build_graph(fake_store, NaNCritic()))
    assert retriever.invoke("redis cache") == []  # NaN never counts as relevant
    out = retriever.run("redis cache")
    assert "nothing is returned" in out["notes"][-1]
    assert out["answerable"] is False
    assert out["abstain_reason"] is not None and "every chunk irrelevant" in out["abstain_reason"]


class _Low:
    """A critic that scores every chunk below its threshold, the second best of all."""

    threshold = 0.9

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        return [0.2 if i != 1 else 0.4 for i in range(len(passages))]


def test_a_critic_that_keeps_none_still_hands_over_its_best_chunk(fake_store: Store) -> None:
    retriever = CorrectiveRetriever(graph=build_graph(fake_store, _Low()))
    out = retriever.run("redis cache")
    assert len(out["documents"]) == 1 and out["answerable"] is True
    assert out["abstain_reason"] is None
    best = out["documents"][0].metadata[RETRIEVAL_KEY]
    assert best["critic_score"] == 0.4  # the best-scored chunk, not the first-ranked
    assert "kept 0" in out["notes"][-1] and "none reached the cut" in out["notes"][-1]


class _OneAbove:
    """A critic that scores one chunk, the second, above its threshold."""

    threshold = 0.5

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        return [0.2 if i != 1 else 0.8 for i in range(len(passages))]


def test_a_critic_that_keeps_only_its_best_chunk_says_so(fake_store: Store) -> None:
    out = CorrectiveRetriever(graph=build_graph(fake_store, _OneAbove())).run("redis cache")
    assert len(out["documents"]) == 1
    assert out["documents"][0].metadata[RETRIEVAL_KEY]["critic_score"] == 0.8
    assert "kept only its best-scored chunk (0.800), dropped" in out["notes"][-1]
    several = CorrectiveRetriever(
        graph=build_graph(fake_store, _Low()), context=RetrievalContext(critic_threshold=0.2)
    ).run("redis cache")
    assert len(several["documents"]) > 1
    assert "only its best-scored" not in several["notes"][-1]


def test_only_abstention_empties_what_the_critic_kept_none_of(fake_store: Store) -> None:
    from ragbrain.refusal.abstain import AbstainThresholds

    cuts = AbstainThresholds(critic_below=0.5, distance_above=0.0, source="test")
    context = RetrievalContext(abstain=True, abstain_thresholds=cuts)
    out = CorrectiveRetriever(graph=build_graph(fake_store, _Low()), context=context).run(
        "redis cache"
    )
    assert out["documents"] == [] and out["answerable"] is False
    assert "nothing fits" in (out["abstain_reason"] or "")


def test_critic_threshold_in_context_overrides_the_critic(fake_store: Store) -> None:
    graph = build_graph(fake_store, OverlapCritic())
    strict = CorrectiveRetriever(graph=graph, context=RetrievalContext(critic_threshold=1.0))
    lenient = CorrectiveRetriever(graph=graph, context=RetrievalContext(critic_threshold=0.0))
    assert len(strict.invoke("redis cache stampede")) < len(lenient.invoke("redis cache stampede"))


def test_per_call_k_and_type_filter(retriever: CorrectiveRetriever) -> None:
    assert len(retriever.invoke("redis", k=2)) == 2
    docs = retriever.invoke("redis", type_filter="decision", k=1)
    assert [d.metadata["type"] for d in docs] == ["decision"]
    fixed = CorrectiveRetriever(graph=retriever.graph, k=3)
    assert len(fixed.invoke("Compare redis and postgres and alembic, versus last time")) == 3


async def test_async_and_batch(retriever: CorrectiveRetriever) -> None:
    queries = ["redis cache", "alembic migrations", "helm rollback"]
    sync = [[d.id for d in docs] for docs in retriever.batch(queries)]
    both = await retriever.abatch(queries)
    assert [[d.id for d in docs] for docs in both] == sync
    single = await retriever.ainvoke("redis cache", k=2)
    assert [d.id for d in single] == sync[0][:2]


def test_returned_documents_are_copies(retriever: CorrectiveRetriever) -> None:
    first = retriever.invoke("redis cache")
    first[0].metadata["source"] = "changed"
    assert retriever.invoke("redis cache")[0].metadata["source"] != "changed"


class RunRecorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.parents: dict[UUID, UUID | None] = {}
        self.names: dict[UUID, str] = {}

    def on_retriever_start(
        self,
        serialized: Any,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kw: Any,
    ) -> None:
        self.parents[run_id], self.names[run_id] = parent_run_id, "retriever"

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kw: Any,
    ) -> None:
        self.parents[run_id], self.names[run_id] = parent_run_id, kw.get("name") or ""


def test_graph_runs_nest_under_the_retriever_run(fake_store: Store) -> None:
    retriever = CorrectiveRetriever(graph=build_graph(fake_store, OverlapCritic()))
    recorder = RunRecorder()
    retriever.invoke("redis cache", config={"callbacks": [recorder]})
    (root,) = [r for r, name in recorder.names.items() if name == "retriever"]
    (graph_run,) = [r for r, parent in recorder.parents.items() if parent == root]
    nodes = {recorder.names[r] for r, parent in recorder.parents.items() if parent == graph_run}
    assert {"vector_search", "critic_filter"} <= nodes


@pytest.mark.parametrize(
    ("query", "kwargs", "match"),
    [
        (42, {}, "query must be a string, got int"),
        ("redis", {"k": 0}, r"k must be in 1..100, got 0"),
        ("redis", {"k": -1}, r"k must be in 1..100"),
        ("redis", {"k": 101}, r"k must be in 1..100"),
        ("redis", {"k": True}, "k must be an integer"),
        ("redis", {"k": "3"}, "k must be an integer"),
        ("redis", {"type_filter": 3}, "type_filter must be"),
        ("redis", {"top_k": 3}, r"unknown keyword argument 'top_k'.*Accepted: filters, k, "),
        ("redis \ud800 cache", {}, r"lone surrogate \(U\+D800\) at position 6"),
        ("redis", {"k": 10**6}, r"k must be in 1..100, got 1000000"),
        ("redis", {"k": 2.5}, "k must be an integer"),
        ("redis", {"type_filter": ["bug", ""]}, "type_filter must be"),
    ],
    ids=[
        "not-a-string",
        "k0",
        "k-negative",
        "k-absurd",
        "k-bool",
        "k-string",
        "bad-type-filter",
        "unknown-kwarg",
        "lone-surrogate",
        "k-million",
        "k-float",
        "empty-type",
    ],
)
def test_bad_input_is_a_clear_value_error(
    retriever: CorrectiveRetriever, query: Any, kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(InvalidInputError, match=match) as info:
        retriever.invoke(query, **kwargs)
    assert isinstance(info.value, ValueError)


def test_bad_constructor_settings_fail_at_construction(retriever: CorrectiveRetriever) -> None:
    with pytest.raises(InvalidInputError, match="k must be in") as info:
        CorrectiveRetriever(graph=retriever.graph, k=0)
    assert "graph" not in str(info.value)  # one line, not a dump of the fields
    with pytest.raises(ValueError, match="type_filter must be"):
        CorrectiveRetriever(graph=retriever.graph, type_filter=[" "])


def test_from_store_errors(tmp_path: Path, fake_store: Store) -> None:
    with pytest.raises(StoreNotFoundError, match="No ragbrain store"):
        CorrectiveRetriever.from_store(tmp_path / "missing", embeddings=BagOfWordsEmbeddings())
    with pytest.raises(StoreMismatchError, match="dimension"):
        CorrectiveRetriever.from_store(fake_store.location, embeddings=BagOfWordsEmbeddings(16))


def test_from_store_in_one_line(fake_store: Store) -> None:
    retriever = CorrectiveRetriever.from_store(
        fake_store.location, embeddings=BagOfWordsEmbeddings(), critic=None, type_filter="bug"
    )
    docs = retriever.invoke("redis cache")
    assert docs and {d.metadata["type"] for d in docs} <= {"bug"} | {
        d.metadata["type"] for d in docs if d.metadata[RETRIEVAL_KEY]["from_fallback"]
    }
    assert docs[0].metadata[RETRIEVAL_KEY]["critic"] == "off: disabled by the caller"


def test_works_inside_an_lcel_chain(retriever: CorrectiveRetriever) -> None:
    from langchain_core.runnables import RunnableLambda

    def format_docs(docs: list[Document]) -> str:
        return "\n".join(d.metadata["source"] for d in docs)

    chain = retriever | RunnableLambda(format_docs)
    assert chain.invoke("stampede after a deploy").splitlines()[0] == "bug/cache.md"


class BrokenEmbeddings(BagOfWordsEmbeddings):
    """Embeds documents well but turns some queries into vectors that cannot be searched."""

    def embed_query(self, text: str) -> list[float]:
        if text == "dimension probe":
            return super().embed_query(text)
        if "nan" in text:
            return [math.nan] * self.size
        if "zero" in text:
            return [0.0] * self.size
        return [*super().embed_query(text), 1.0, 1.0]  # the wrong dimension


@pytest.mark.parametrize(
    ("query", "error", "match"),
    [
        ("nan please", InvalidInputError, "zero or not finite"),
        ("zero please", InvalidInputError, "zero or not finite"),
        ("short vector", StoreMismatchError, "dimension"),
    ],
    ids=["nan-vector", "zero-vector", "wrong-dimension"],
)
def test_unsearchable_query_vectors_are_clear_errors(
    fake_store: Store, query: str, error: type[Exception], match: str
) -> None:
    broken = Store.open(fake_store.location, BrokenEmbeddings())
    retriever = CorrectiveRetriever(graph=build_graph(broken))
    with pytest.raises(error, match=match):
        retriever.invoke(query)
    assert broken.count() == fake_store.count()  # nothing written


def test_control_characters_are_searched_not_refused(retriever: CorrectiveRetriever) -> None:
    dirty = retriever.invoke("\x00\x07redis\x1b cache\r\n\tstampede\u200b\x7f")
    clean = retriever.invoke("redis cache stampede")
    assert dirty and [d.id for d in dirty] == [d.id for d in clean]


@pytest.mark.parametrize(
    "vectors",
    [[[math.nan] * 64], [[0.0] * 64], [[1.0] * 16], []],
    ids=["nan", "zero", "wrong-dimension", "missing"],
)
def test_bad_vectors_are_never_written(fake_store: Store, vectors: list[list[float]]) -> None:
    before = fake_store.count()
    with pytest.raises(InvalidInputError, match=r"vector|as many"):
        fake_store.upsert(["x"], ["text"], [{"source": "x.md"}], vectors)
    assert fake_store.count() == before


class _Doubtful:
    """A critic that keeps every chunk with a low score, and ships abstention thresholds."""

    threshold = 0.1

    def __init__(self, coverage_below: float | None = None) -> None:
        from ragbrain.refusal.abstain import AbstainThresholds

        self.abstain_thresholds = AbstainThresholds(
            critic_below=0.5, distance_above=0.0, source="test", coverage_below=coverage_below
        )

    def score(self, query: str, passages: Any, distances: Any = None) -> list[float]:
        return [0.2] * len(passages)


def test_abstention_is_asked_for_and_says_why(fake_store: Store) -> None:
    """With ``abstain`` the run hands over nothing when the evidence agrees nothing fits, and
    the trace says why; without it the same run answers."""
    graph = build_graph(fake_store, _Doubtful())
    answered = CorrectiveRetriever(graph=graph).run("redis cache stampede")
    assert answered["documents"] and answered["answerable"] is True
    strict = CorrectiveRetriever(graph=graph, context=RetrievalContext(abstain=True))
    out = strict.run("redis cache stampede")
    assert out["documents"] == [] and out["answerable"] is False
    assert out["abstain_reason"] is not None
    assert "critic's best score (0.200) is below 0.500" in out["abstain_reason"]
    assert "nothing is returned" in out["notes"][-1]
    assert strict.invoke("redis cache stampede") == []


def test_abstention_needs_bm25_to_agree_when_its_thresholds_use_coverage(
    fake_store: Store,
) -> None:
    """A query whose words a note holds is covered by BM25: the run answers; one whose words
    no note holds is not, and it abstains. Dense search has no coverage to give."""
    from ragbrain.store.lexical import LexicalSearcher

    graph = build_graph(
        fake_store, _Doubtful(coverage_below=0.3), lexical=LexicalSearcher(fake_store)
    )
    strict = CorrectiveRetriever(graph=graph, context=RetrievalContext(abstain=True))
    covered = strict.run("redis cache stampede")
    assert covered["bm25_coverage"] is not None and covered["bm25_coverage"] >= 0.3
    assert covered["answerable"] is True and covered["documents"]
    assert "the evidence does not agree that nothing fits" in covered["notes"][-1]
    missed = strict.run("quantum chromodynamics lattice")
    assert missed["bm25_coverage"] == 0.0
    assert missed["answerable"] is False and missed["documents"] == []
    assert missed["abstain_reason"] is not None and "covers 0.00 < 0.30" in missed["abstain_reason"]
    dense = CorrectiveRetriever(graph=build_graph(fake_store, _Doubtful(coverage_below=0.3)))
    out = dense.run("quantum chromodynamics lattice")  # no lexical index: no coverage, no say
    assert out.get("bm25_coverage") is None and out["answerable"] is True


def test_abstention_without_thresholds_or_critic_is_said(fake_store: Store) -> None:
    context = RetrievalContext(abstain=True)
    judged = CorrectiveRetriever(graph=build_graph(fake_store, _KeepAll()), context=context)
    out = judged.run("redis cache stampede")
    assert out["answerable"] is True and out["documents"]
    assert "no abstention thresholds" in out["notes"][-1]
    off = CorrectiveRetriever(graph=build_graph(fake_store), context=context).run("redis cache")
    assert off["answerable"] is True and "evidence rule needs the critic" in off["notes"][-1]


def test_the_run_may_bring_its_own_abstention_cuts(fake_store: Store) -> None:
    """``RetrievalContext.abstain_thresholds`` replaces the critic's shipped cuts, both ways:
    a critic without any then abstains, and looser cuts let a doubtful critic's run answer."""
    from ragbrain.refusal.abstain import AbstainThresholds

    class LowScores:
        threshold = 0.1

        def score(self, query: str, passages: Any, distances: Any = None) -> list[float]:
            return [0.2] * len(passages)

    cuts = AbstainThresholds(critic_below=0.5, distance_above=0.0, source="the run's")
    strict = RetrievalContext(abstain=True, abstain_thresholds=cuts)
    out = CorrectiveRetriever(graph=build_graph(fake_store, LowScores()), context=strict).run(
        "redis cache stampede"
    )
    assert out["answerable"] is False and out["documents"] == []
    assert out["abstain_reason"] is not None and "below 0.500" in out["abstain_reason"]
    loose = RetrievalContext(
        abstain=True, abstain_thresholds=AbstainThresholds(0.1, 0.0, "the run's")
    )
    out = CorrectiveRetriever(graph=build_graph(fake_store, _Doubtful()), context=loose).run(
        "redis cache stampede"
    )
    assert out["answerable"] is True and out["documents"]


def test_abstention_cuts_given_as_json_are_read_and_checked() -> None:
    from ragbrain.refusal.abstain import AbstainThresholds

    record = {"critic_below": 0.6, "distance_above": 0.4, "coverage_below": None}
    cuts = RetrievalContext(abstain_thresholds=record).abstain_thresholds  # type: ignore[arg-type]
    assert cuts == AbstainThresholds(0.6, 0.4, "abstain_thresholds")
    with pytest.raises(InvalidInputError, match="abstain_thresholds: abstention cuts need"):
        RetrievalContext(abstain_thresholds={"critic_below": 0.6})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="critic_below must be a probability"):
        RetrievalContext(abstain_thresholds={**record, "critic_below": 3})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="must be AbstainThresholds or None"):
        RetrievalContext(abstain_thresholds=0.5)  # type: ignore[arg-type]
