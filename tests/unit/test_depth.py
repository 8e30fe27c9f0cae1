"""Adaptive depth: complexity from length and markers, tiers, and the caller's k."""

from __future__ import annotations

from typing import Any

import pytest

from ragbrain.context import RetrievalContext
from ragbrain.errors import InvalidInputError
from ragbrain.nodes.depth import complexity, depth_for, plan_depth


def run(query: str, **context: Any) -> dict[str, Any]:
    return plan_depth(query, RetrievalContext(**context))


@pytest.mark.parametrize(
    ("query", "score", "depth"),
    [
        ("redis cache eviction", 0, 5),
        ("why did the nightly backup job fail", 1, 7),  # 35 characters
        ("redis and postgres", 1, 7),
        ("compare redis and postgres", 2, 7),
        (
            "Compare the Redis cache and the materialized views, and what did we decide last time?",
            5,
            10,
        ),
        ("android sandbox handover", 0, 5),  # 'and' inside words is not a marker
        ("バックアップとリストアの違い", 1, 7),  # 違い
        (
            "前回のレトロと今回を比較して、キャッシュの問題がどう変わったかを教えてください。どうしてですか？",
            3,
            10,
        ),
        ("เปรียบเทียบ redis และ postgres", 2, 7),
        ("ครั้งก่อน", 1, 7),
    ],
    ids=[
        "short",
        "long",
        "and",
        "compare-and",
        "compound",
        "no-substring",
        "ja-marker",
        "ja-long",
        "th-markers",
        "th-last-time",
    ],
)
def test_depth_from_complexity(query: str, score: int, depth: int) -> None:
    result = run(query)
    assert (result["complexity"], result["depth"]) == (score, depth)
    assert result["notes"][0].startswith(f"depth {depth}")


def test_length_counts_characters_not_words() -> None:
    japanese = "データベースのバックアップが失敗した理由を知りたいです"  # 27 chars, one "word"
    assert complexity(japanese, RetrievalContext())[0] == 0
    assert complexity(japanese + "お願いします", RetrievalContext())[0] == 1  # 33 chars


def test_tiers_and_markers_are_settings() -> None:
    context = RetrievalContext(depth_tiers=(2, 4, 8), tier_scores=(1, 2), markers=("redis",))
    assert run("redis", depth_tiers=(2, 4, 8), tier_scores=(1, 2), markers=("redis",))["depth"] == 4
    assert depth_for(0, context) == 2
    assert depth_for(2, context) == 8
    assert run("compare and versus", markers=())["complexity"] == 0


def test_explicit_k_overrides_the_tiers() -> None:
    result = run("Compare the Redis cache and the views, and what did we decide last time?", k=3)
    assert result["depth"] == 3
    assert "k set by the caller" in result["notes"][0]


@pytest.mark.parametrize(
    "settings",
    [
        {"k": 0},
        {"k": 101},
        {"k": True},
        {"depth_tiers": (10, 7, 5)},
        {"gate_threshold": -0.1},
        {"critic_threshold": 1.5},
        {"tier_scores": (3, 1)},
    ],
    ids=["k0", "k101", "k-bool", "falling-tiers", "negative-gate", "critic-above-1", "scores"],
)
def test_bad_settings_are_refused(settings: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        RetrievalContext(**settings)


@pytest.mark.parametrize(
    ("query", "context", "candidates", "compound"),
    [
        ("What is the difference between redis and postgres?", {}, 15, True),
        ("redis vs postgres", {"judged_compound": 12}, 12, True),
        ("redis vs postgres", {"judged_compound": 3}, 10, True),  # never fewer than 'judged'
        ("redis vs postgres", {"split_compound": False}, 10, False),
        ("redis vs postgres", {"k": 4}, 4, False),
        ("why did the nightly backup fail", {}, 10, False),
    ],
    ids=["compound", "set", "at-least-judged", "split-off", "k-wins", "single"],
)
def test_a_compound_question_has_more_candidates_judged(
    query: str, context: dict[str, Any], candidates: int, compound: bool
) -> None:
    result = run(query, **context)
    assert result["candidates"] == candidates
    assert ("compound question" in result["notes"][0]) == compound


def test_judged_compound_must_be_a_depth() -> None:
    with pytest.raises(InvalidInputError, match="judged_compound"):
        RetrievalContext(judged_compound=0)
