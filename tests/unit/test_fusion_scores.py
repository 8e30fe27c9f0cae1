"""Score fusion of hybrid search: hand-made lists where BM25 is weak or strong, the dense side
left out, the query's maximum BM25 score, the weights a query got and the trace notes."""

from __future__ import annotations

import math

import pytest

from ragbrain.context import RetrievalContext
from ragbrain.errors import InvalidInputError
from ragbrain.graph import build_graph
from ragbrain.hybrid import (
    DENSE_SHARE,
    FusionWeights,
    bm25_power,
    fuse_scores,
    hybrid_fusion,
    hybrid_search,
)
from ragbrain.lexical.index import LexicalIndex
from ragbrain.lexical.tokens import tokenize
from ragbrain.store import Store
from ragbrain.store.lexical import LexicalSearcher

DENSE = [("a", 0.1), ("b", 0.2), ("c", 0.3)]


@pytest.mark.parametrize(
    ("dense", "lexical", "mass", "share", "expected"),
    [
        # c: 0.7 x 1/10 against a's 0.3 and b's 0.15: a weak BM25 hit stays last.
        (DENSE, [("c", 1.0)], 10.0, 0.3, ["a", "b", "c"]),
        # c: 0.7 x 9/10 = 0.63 beats a's 0.3: a BM25 hit matching most of the query leads.
        (DENSE, [("c", 9.0)], 10.0, 0.3, ["c", "a", "b"]),
        # A BM25-only id joins after the ids it scores below.
        (DENSE, [("d", 4.0)], 10.0, 0.3, ["a", "d", "b", "c"]),
        # Dense share 0: BM25's order stands, dense-only ids follow in dense order.
        ([("a", 0.1), ("b", 0.2)], [("c", 2.0), ("b", 5.0)], 10.0, 0.0, ["b", "c", "a"]),
        # Dense share 1: the dense order, BM25-only ids after it.
        (DENSE, [("d", 9.0), ("c", 5.0)], 10.0, 1.0, ["a", "b", "c", "d"]),
        # A repeated query term can score past the mass: the share stops at 1.
        ([("a", 0.1), ("b", 0.2)], [("b", 30.0), ("c", 10.0)], 10.0, 0.3, ["b", "c", "a"]),
        # Equal distances all scale to 1; a tie keeps the order of first appearance.
        ([("a", 0.4), ("b", 0.4)], [], 10.0, 0.3, ["a", "b"]),
        # No mass (no query term the index knows): the dense order.
        (DENSE, [], 0.0, 0.3, ["a", "b", "c"]),
        ([], [("x", 1.0), ("y", 3.0)], 4.0, 0.3, ["y", "x"]),
        ([], [], 1.0, 0.3, []),
    ],
    ids=[
        "weak-bm25",
        "strong-bm25",
        "bm25-only-id",
        "dense-left-out",
        "dense-only-share",
        "share-capped",
        "equal-distances",
        "no-mass",
        "bm25-only",
        "empty",
    ],
)
def test_fuse_scores_on_hand_made_lists(
    dense: list[tuple[str, float]],
    lexical: list[tuple[str, float]],
    mass: float,
    share: float,
    expected: list[str],
) -> None:
    assert fuse_scores(dense, lexical, mass, share) == expected


@pytest.mark.parametrize(
    ("power", "expected"),
    # c: 0.7 x 0.6 = 0.42 beats a's 0.3; squared, 0.7 x 0.36 = 0.25 falls behind it, still
    # ahead of b's 0.15.
    [(1.0, ["c", "a", "b"]), (2.0, ["a", "c", "b"])],
    ids=["plain", "squared"],
)
def test_a_power_above_one_weighs_a_partial_bm25_match_less(
    power: float, expected: list[str]
) -> None:
    assert fuse_scores(DENSE, [("c", 6.0)], 10.0, 0.3, power) == expected


@pytest.mark.parametrize("power", [0.0, -1.0, math.nan], ids=["zero", "negative", "nan"])
def test_fuse_scores_refuses_a_power_that_is_not_positive(power: float) -> None:
    with pytest.raises(InvalidInputError, match="power must be above 0"):
        fuse_scores(DENSE, [("c", 1.0)], 1.0, 0.3, power)


@pytest.mark.parametrize(
    ("model", "power"),
    [("all-MiniLM-L6-v2", 2.0), ("multilingual-e5-small", 1.0), ("someone-elses-model", 1.0)],
    ids=["minilm", "e5", "unlisted"],
)
def test_the_bm25_power_is_the_store_models(model: str, power: float) -> None:
    assert bm25_power(model) == power


@pytest.mark.parametrize("share", [-0.1, 1.5, math.nan], ids=["negative", "above-one", "nan"])
def test_fuse_scores_refuses_a_share_outside_zero_and_one(share: float) -> None:
    with pytest.raises(InvalidInputError, match="dense_share must be within 0 and 1"):
        fuse_scores(DENSE, [], 1.0, share)


@pytest.mark.parametrize(
    ("weights", "expected"),
    [
        (FusionWeights(0.3, 0.37), "dense 0.30 and BM25 up to 0.26 (its best hit scores 37%"),
        (FusionWeights(0.3, 1.0), "dense 0.30 and BM25 up to 0.70 (its best hit scores 100%"),
        (FusionWeights(0.3, 0.5, 2.0), "dense 0.30 and BM25 up to 0.17 (its best hit scores 50%"),
        (FusionWeights(0.0, 0.9), "BM25's order stands"),
    ],
    ids=["weak", "full", "squared", "dense-left-out"],
)
def test_weights_describe_what_each_side_got(weights: FusionWeights, expected: str) -> None:
    assert expected in weights.describe()


DOCS = {"a": "expired credentials broke the backup", "b": "cache warmup", "c": "backup cache"}


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("backup", ["backup"]),
        ("backup backup cache", ["backup", "cache"]),
        ("expired zebra", ["expired"]),
        ("zebra", []),
    ],
    ids=["one-term", "repeated-term-once", "unknown-term-ignored", "nothing-known"],
)
def test_query_mass_is_the_idf_sum_of_distinct_known_terms(query: str, words: list[str]) -> None:
    index = LexicalIndex.build(list(DOCS), list(DOCS.values()), ["note"] * len(DOCS))
    held = [set(tokenize(text)) for text in DOCS.values()]
    expected = 0.0
    for term in [t for w in words for t in tokenize(w)]:
        df = sum(term in own for own in held)
        expected += math.log(1 + (len(DOCS) - df + 0.5) / (df + 0.5))
    assert index.query_mass(query) == pytest.approx(expected)
    assert (index.query_mass(query) > 0) is bool(words)


def test_a_top_bm25_hit_scores_below_the_query_mass() -> None:
    index = LexicalIndex.build(list(DOCS), list(DOCS.values()), ["note"] * len(DOCS))
    for query in ("backup", "expired credentials", "backup cache"):
        assert 0 < index.search(query, 1)[0].score < index.query_mass(query)


@pytest.mark.parametrize(("trust", "share"), [(True, DENSE_SHARE), (False, 0.0)], ids=str)
def test_hybrid_fusion_reports_the_weights_it_used(
    fake_store: Store, trust: bool, share: float
) -> None:
    index = LexicalSearcher(fake_store).index
    query = "backup credentials expired"
    fused = hybrid_fusion(fake_store, index, query, 5, trust_dense=trust)
    assert fused.weights.dense == share
    assert 0 < fused.weights.bm25_best <= 1
    hits, only = hybrid_search(fake_store, index, query, 5, trust_dense=trust)
    assert [h["id"] for h in hits] == [h["id"] for h in fused.hits] and only == fused.lexical_only


def test_the_trace_says_which_weights_the_query_got(fake_store: Store) -> None:
    graph = build_graph(fake_store, lexical=LexicalSearcher(fake_store))
    out = graph.invoke({"query": "backup credentials expired"}, context=RetrievalContext(k=3))
    note = next(n for n in out["notes"] if n.startswith("hybrid search"))
    assert "fused by score, dense 0.30 and BM25 up to" in note


def test_a_question_naming_an_identifier_counts_bm25_linearly(fake_store: Store) -> None:
    from ragbrain.hybrid import IDENTIFIER_POWER

    index = LexicalSearcher(fake_store).index
    named = hybrid_fusion(fake_store, index, "what does statement_timeout do", 5, power=2.0)
    assert named.weights.named and named.weights.power == IDENTIFIER_POWER
    assert named.hits[0]["metadata"]["source"] == "lesson/timeout.md"
    assert "names an identifier the notes use" in named.weights.describe()
    plain = hybrid_fusion(fake_store, index, "backup credentials expired", 5, power=2.0)
    assert not plain.weights.named and plain.weights.power == 2.0
