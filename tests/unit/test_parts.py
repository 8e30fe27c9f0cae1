"""Compound questions in the pipeline: each part searched besides the whole, fused by RRF,
each part's best chunk kept among the candidates, and each chunk judged against its part."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from ragbrain.context import RetrievalContext
from ragbrain.graph import build_graph
from ragbrain.nodes.parts import judge_parts, represented, search_parts
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.state import RETRIEVAL_KEY, Hit
from ragbrain.store import Store
from tests.support.fakes import OverlapCritic


@pytest.mark.parametrize(
    ("fused", "bests", "depth", "expected"),
    [
        (["a", "b", "c", "d"], ["a", "b"], 2, ["a", "b"]),
        (["a", "b", "c", "d"], ["a", "d"], 2, ["a", "d"]),
        (["a", "b", "c", "d"], ["c", "d"], 2, ["c", "d"]),
        (["a", "b", "c", "d"], ["d", None], 3, ["a", "b", "d"]),
        (["a", "b"], ["c", "a"], 3, ["a", "b", "c"]),
        (["a", "b", "c"], ["c", "c"], 1, ["c"]),
        ([], [None, None], 5, []),
    ],
    ids=[
        "already-there",
        "last-replaced",
        "both-replaced",
        "a-part-found-nothing",
        "room-left",
        "same-best",
        "nothing",
    ],
)
def test_represented(
    fused: list[str], bests: list[str | None], depth: int, expected: list[str]
) -> None:
    assert represented(fused, bests, depth) == expected


QUESTION = "What is the difference between the redis cache stampede and alembic?"


def test_each_part_is_handed_over(fake_store: Store) -> None:
    search = fake_store.search
    alone = [h["metadata"]["source"] for h in fake_store.search(QUESTION, 2)]
    assert "decision/alembic.md" not in alone  # the whole question finds only Redis notes
    hits = search_parts(fake_store, QUESTION, ["the redis cache stampede", "alembic"], 2, search)
    assert {h["metadata"]["source"] for h in hits} == {"bug/cache.md", "decision/alembic.md"}
    # every distance is to the whole question, as for any other hit
    again = {
        h["id"]: h["distance"] for h in fake_store.hits_by_id(QUESTION, [h["id"] for h in hits])
    }
    assert all(abs(h["distance"] - again[h["id"]]) < 1e-6 for h in hits)
    # ... and to each part, in part_distances
    for j, part in enumerate(["the redis cache stampede", "alembic"]):
        to_part = {h["id"]: h["distance"] for h in fake_store.hits_by_id(part, list(again))}
        assert all(abs(h["part_distances"][j] - to_part[h["id"]]) < 1e-6 for h in hits)


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_the_graph_splits_and_says_so(fake_store: Store, mode: str) -> None:
    from ragbrain.store.lexical import LexicalSearcher

    graph = build_graph(fake_store, None, lexical=LexicalSearcher(fake_store))
    on = CorrectiveRetriever(graph=graph, context=RetrievalContext(search_mode=mode))
    output = on.run(QUESTION, k=2)
    sources = {d.metadata["source"] for d in output["documents"]}
    assert "decision/alembic.md" in sources and len(output["documents"]) <= 2
    assert any("parts ['the redis cache stampede', 'alembic']" in n for n in output["notes"])
    off = CorrectiveRetriever(
        graph=graph, context=RetrievalContext(search_mode=mode, split_compound=False)
    )
    assert not any("compound" in n for n in off.run(QUESTION, k=2)["notes"])
    single = on.run("why did the nightly backup fail", k=2)
    assert not any("compound" in n for n in single["notes"])


def _hit(id_: str, text: str, to_parts: list[float] | None) -> Hit:
    hit = Hit(id=id_, text=text, metadata={}, distance=0.5, from_fallback=False)
    if to_parts is not None:
        hit["part_distances"] = to_parts
    return hit


class WordCritic:
    """Scores a passage 1.0 when it holds every word of the query, else 0.1 (NaN for 'nan')."""

    threshold = 0.5

    def __init__(self) -> None:
        self.orders: dict[str, list[str]] = {}

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        self.orders[query] = list(passages)
        return [
            math.nan if p == "nan" else 1.0 if set(query.split()) <= set(p.split()) else 0.1
            for p in passages
        ]


@pytest.mark.parametrize(
    ("hits", "whole", "expected"),
    [
        (
            [_hit("a", "redis", [0.1, 0.9]), _hit("b", "alembic", [0.9, 0.1])],
            [0.1, 0.1],
            ([1.0, 1.0], ["redis", "alembic"], [0, 1]),
        ),
        (
            [_hit("a", "redis alembic", [0.1, 0.2])],
            [0.9],
            ([1.0], ["redis"], [0, 0]),
        ),
        (
            [_hit("a", "redis", [0.1, 0.9]), _hit("b", "alembic", None)],
            [0.1, 0.7],
            ([1.0, 0.7], ["redis", None], [0, 0]),
        ),
        (
            [_hit("a", "nan", [0.1, 0.9]), _hit("b", "other", [0.2, 0.2])],
            [math.nan, 0.6],
            ([math.nan, 0.6], [None, None], [1, 1]),
        ),
        ([], [], ([], [], [-1, -1])),
    ],
    ids=["each-half-its-part", "whole-lower-than-part", "fallback-hit-whole-only", "nan", "none"],
)
def test_judge_parts(
    hits: list[Hit],
    whole: list[float],
    expected: tuple[list[float], list[str | None], list[int]],
) -> None:
    scores, answers, bests = judge_parts(WordCritic(), ["redis", "alembic"], hits, whole)
    assert [str(s) for s in scores] == [str(s) for s in expected[0]]
    assert (answers, bests) == (expected[1], expected[2])


def test_a_part_is_judged_in_its_own_distance_order() -> None:
    critic = WordCritic()
    hits = [_hit("a", "x", [0.9, 0.1]), _hit("b", "y", [0.1, 0.9]), _hit("c", "z", [0.5, 0.5])]
    judge_parts(critic, ["p", "q"], hits, [0.0, 0.0, 0.0])
    assert critic.orders == {"p": ["y", "z", "x"], "q": ["x", "z", "y"]}


def test_a_half_answer_is_handed_over_for_its_part(fake_store: Store) -> None:
    """The critic judging against the whole question drops the Alembic note (it holds one
    word of ten); judged against its part, it is kept, and its trace names the part."""
    critic = OverlapCritic()
    graph = build_graph(fake_store, critic)
    on = CorrectiveRetriever(graph=graph, context=RetrievalContext(search_mode="dense"))
    docs = on.invoke(QUESTION)
    parts = {d.metadata["source"]: d.metadata[RETRIEVAL_KEY]["part"] for d in docs}
    assert parts["decision/alembic.md"] == "alembic"
    assert parts["bug/cache.md"] in ("the redis cache stampede", None)
    assert [query for query, _ in critic.calls] == [
        QUESTION,
        "the redis cache stampede",
        "alembic",
    ]
    off = on.model_copy(
        update={"context": RetrievalContext(search_mode="dense", split_compound=False)}
    )
    alone = {d.metadata["source"] for d in off.invoke(QUESTION)}
    assert "decision/alembic.md" not in alone and "bug/cache.md" in alone
    assert all(d.metadata[RETRIEVAL_KEY]["part"] is None for d in off.invoke(QUESTION))


def test_without_a_critic_the_trace_names_the_nearest_part(fake_store: Store) -> None:
    graph = build_graph(fake_store, None)
    output = CorrectiveRetriever(graph=graph).run(QUESTION, k=2)
    parts = {d.metadata["source"]: d.metadata[RETRIEVAL_KEY]["part"] for d in output["documents"]}
    assert parts == {"bug/cache.md": "the redis cache stampede", "decision/alembic.md": "alembic"}
