"""Abstention needs the critic and the gate together; hand_over caps at the depth."""

from __future__ import annotations

import math
import re

import pytest

from ragbrain.errors import InvalidInputError
from ragbrain.refusal.abstain import (
    AbstainThresholds,
    Evidence,
    EvidenceRow,
    fit_thresholds,
    hand_over,
    should_abstain,
)

T = AbstainThresholds(critic_below=0.2, distance_above=0.5, source="test")


@pytest.mark.parametrize(
    ("evidence", "abstains", "reason"),
    [
        (Evidence(None, None, 0), True, "found no chunk"),
        (Evidence(0.9, None, 5), False, None),  # critic off: the gate alone never abstains
        (Evidence(0.9, [0.1, 0.05], 2), True, r"best score \(0.100\) is below 0.200"),
        (Evidence(0.4, [0.1, 0.05], 2), False, None),  # the gate says it fits
        (Evidence(0.9, [0.1, 0.3], 2), False, None),  # the critic says it fits
        (Evidence(0.9, [math.nan], 1), True, "none finite"),
    ],
    ids=["no-hits", "critic-off", "both-agree", "gate-disagrees", "critic-disagrees", "nan"],
)
def test_should_abstain(evidence: Evidence, abstains: bool, reason: str | None) -> None:
    decided, why = should_abstain(evidence, T)
    assert decided is abstains
    if reason is None:
        assert why is None
    else:
        assert why is not None
        assert re.search(reason, why)


LEXICAL = AbstainThresholds(critic_below=0.2, distance_above=0.5, coverage_below=0.3)


@pytest.mark.parametrize(
    ("coverage", "abstains"),
    [(0.1, True), (0.3, False), (0.8, False), (None, False)],
    ids=["covers-little", "at-the-cut", "covers-most", "no-lexical-search"],
)
def test_coverage_must_agree_when_the_thresholds_use_it(
    coverage: float | None, abstains: bool
) -> None:
    """Critic and gate say nothing fits; BM25's coverage of the query has the last word, and
    with no lexical search it cannot agree."""
    decided, why = should_abstain(Evidence(0.9, [0.1], 1, bm25_coverage=coverage), LEXICAL)
    assert decided is abstains
    if abstains:
        assert why is not None and "BM25's best hit covers 0.10 < 0.30" in why


def test_coverage_is_ignored_when_the_thresholds_leave_it_out() -> None:
    decided, why = should_abstain(Evidence(0.9, [0.1], 1, bm25_coverage=0.9), T)
    assert decided and why is not None and "covers" not in why


def test_the_reason_names_the_thresholds_origin() -> None:
    _, why = should_abstain(Evidence(0.9, [0.1], 1), T)
    assert why is not None and "(test)" in why and "0.900" in why


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("critic_below", 1.5, r"critic_below must be a probability in \[0, 1\], got 1.5"),
        ("distance_above", -0.1, r"distance_above must be a cosine distance in \[0, 2\]"),
        ("coverage_below", 1.2, r"coverage_below must be a share of the query in \[0, 1\]"),
    ],
    ids=["critic", "distance", "coverage"],
)
def test_bad_thresholds(field: str, value: float, match: str) -> None:
    args = {"critic_below": 0.1, "distance_above": 0.5, field: value}
    with pytest.raises(InvalidInputError, match=match):
        AbstainThresholds(**args)


@pytest.mark.parametrize(
    ("scores", "depth", "abstain", "expected"),
    [
        ([0.9, 0.1, 0.8, 0.7], 2, False, [0, 2]),  # kept ones, capped at the depth
        ([0.9, 0.1, 0.8, 0.7], 10, False, [0, 2, 3]),
        ([0.1, 0.3, 0.2], 5, False, [1]),  # none kept, not abstaining: the best one
        ([0.1, 0.3, 0.2], 5, True, []),
        ([math.nan, 0.9], 5, False, [1]),
        ([math.nan], 5, False, []),
        ([], 5, False, []),
    ],
    ids=["cap", "all-kept", "keep-best", "abstain", "nan-dropped", "only-nan", "empty"],
)
def test_hand_over(scores: list[float], depth: int, abstain: bool, expected: list[int]) -> None:
    assert hand_over(scores, 0.5, depth, abstain=abstain) == expected


def _rows(
    n: int, answerable: bool, critic: float, distance: float, coverage: float
) -> list[EvidenceRow]:
    return [(answerable, critic, distance, coverage)] * n


def test_fit_thresholds_refuses_the_answerless_within_the_false_refusal_bound() -> None:
    # Answerless queries: a low critic score, a far best hit, a BM25 hit covering little.
    per_set = {
        "a": _rows(20, True, 0.9, 0.2, 0.8) + _rows(20, False, 0.1, 0.6, 0.1),
        "b": _rows(20, True, 0.8, 0.3, 0.7) + _rows(20, False, 0.2, 0.5, 0.2),
    }
    cuts = fit_thresholds(per_set)
    assert cuts["refusal_recall"] == 1.0 and cuts["false_refusal_worst"] == 0.0
    thresholds = AbstainThresholds.from_record(cuts, "test")
    for rows in per_set.values():
        for answerable, critic, distance, coverage in rows:
            evidence = Evidence(distance, [critic], 1, bm25_coverage=coverage)
            assert should_abstain(evidence, thresholds)[0] is (not answerable)


def test_fit_thresholds_keeps_every_set_within_the_bound() -> None:
    # Set "hard": its answerable queries look like the answerless ones of "easy" on the critic;
    # only the coverage tells them apart, so the rule must lean on the coverage.
    per_set = {
        "easy": _rows(20, True, 0.9, 0.2, 0.9) + _rows(20, False, 0.1, 0.6, 0.1),
        "hard": _rows(20, True, 0.1, 0.6, 0.9) + _rows(20, False, 0.1, 0.6, 0.1),
    }
    cuts = fit_thresholds(per_set)
    assert cuts["false_refusal_worst"] <= 0.05
    assert cuts["coverage_below"] is not None and 0.1 < cuts["coverage_below"] <= 0.9
    assert fit_thresholds(per_set, lexical=False)["refusal_recall"] == 0.0  # nothing else works


def test_fit_thresholds_without_a_safe_cut_never_refuses() -> None:
    per_set = {"same": _rows(10, True, 0.5, 0.4, 0.5) + _rows(10, False, 0.5, 0.4, 0.5)}
    cuts = fit_thresholds(per_set)
    assert cuts["refusal_recall"] == 0.0
    thresholds = AbstainThresholds.from_record(cuts, "test")
    assert not should_abstain(Evidence(0.4, [0.5], 1, bm25_coverage=0.5), thresholds)[0]


def test_fit_thresholds_refuses_no_rows() -> None:
    with pytest.raises(InvalidInputError, match="No scenario queries"):
        fit_thresholds({"empty": []})
