"""Compound questions in the pipeline: each part searched besides the whole, fused by RRF,
and each part's best chunk kept in what is handed over."""

from __future__ import annotations

import pytest

from ragbrain.context import RetrievalContext
from ragbrain.graph import build_graph
from ragbrain.parts import represented, search_parts
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.store import Store


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


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_the_graph_splits_and_says_so(fake_store: Store, mode: str) -> None:
    from ragbrain.lexical.sync import LexicalSearcher

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
