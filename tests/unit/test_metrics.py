"""Metric functions against hand-computed cases and against reference implementations."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from sklearn.metrics import ndcg_score, roc_auc_score

from ragbrain.evaluation.calibrate import operating_point, roc_auc
from ragbrain.evaluation.metrics import (
    mrr_at_k,
    ndcg_at_k,
    paired_difference,
    percentile,
    recall_at_k,
    set_precision,
    set_recall,
)

GRADED = {"a": 2, "b": 1, "c": 0}


def test_ndcg_graded_hand_computed() -> None:
    # DCG = 1/log2(2) + 0 + 2/log2(4) = 2; ideal = 2/log2(2) + 1/log2(3).
    expected = 2 / (2 + 1 / math.log2(3))
    assert ndcg_at_k(["b", "x", "a"], GRADED) == pytest.approx(expected)
    assert ndcg_at_k(["b", "x", "a"], GRADED) == pytest.approx(0.76018, abs=1e-5)


def test_ndcg_grade_order_matters() -> None:
    assert ndcg_at_k(["a", "b"], GRADED) == pytest.approx(1.0)
    assert ndcg_at_k(["b", "a"], GRADED) < 1.0


def test_ndcg_zero_judged_and_cutoff() -> None:
    assert ndcg_at_k(["c"], GRADED) == 0.0  # judged 0 is not relevant
    assert ndcg_at_k(["a"], {"a": 0}) == 0.0  # nothing relevant at all
    ranked = [f"x{i}" for i in range(10)] + ["a"]
    assert ndcg_at_k(ranked, GRADED, k=10) == 0.0
    assert ndcg_at_k(ranked, GRADED, k=11) > 0.0


def test_ndcg_matches_sklearn_on_random_cases() -> None:
    rng = random.Random(7)
    for _ in range(50):
        docs = [f"d{i}" for i in range(15)]
        grades = {d: rng.choice([0, 0, 1, 2, 3]) for d in docs}
        if not any(grades.values()):
            grades["d0"] = 1
        scores = {d: rng.random() for d in docs}
        ranked = sorted(docs, key=lambda d: -scores[d])
        reference = ndcg_score(
            np.array([[grades[d] for d in docs]]), np.array([[scores[d] for d in docs]]), k=10
        )
        assert ndcg_at_k(ranked, grades, k=10) == pytest.approx(reference)


def test_recall_and_mrr() -> None:
    qrels = {"a": 1, "b": 1, "c": 1, "d": 0}
    assert recall_at_k(["a", "d", "x", "b"], qrels) == pytest.approx(2 / 3)
    assert recall_at_k(["a", "b", "c"], qrels, k=2) == pytest.approx(2 / 3)
    assert mrr_at_k(["d", "x", "c"], qrels) == pytest.approx(1 / 3)
    assert mrr_at_k(["d", "x"], qrels) == 0.0
    assert mrr_at_k(["x"] * 10 + ["a"], qrels, k=10) == 0.0
    assert recall_at_k(["a"], {"a": 0}) == 0.0


def test_set_metrics() -> None:
    qrels = {"a": 2, "b": 1, "c": 0}
    assert set_precision(["a", "c", "x", "y"], qrels) == pytest.approx(0.25)
    assert set_precision(["a", "a"], qrels) == pytest.approx(1.0)  # a set: duplicates once
    assert set_precision([], qrels) is None
    assert set_recall(["x", "b"], qrels) == pytest.approx(0.5)
    assert set_recall([], qrels) == 0.0


@pytest.mark.parametrize("q", [0, 10, 50, 95, 100])
def test_percentile_matches_numpy(q: float) -> None:
    values = [5.0, 1.0, 9.0, 2.0, 7.0, 3.0]
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


@pytest.mark.parametrize(("values", "q"), [([], 50), ([1.0], 101)], ids=["empty", "q>100"])
def test_percentile_bad_input(values: list[float], q: float) -> None:
    with pytest.raises(ValueError, match=r"percentile|q must"):
        percentile(values, q)


def test_roc_auc_hand_computed_with_ties() -> None:
    # Pairs (pos, neg): (0.9>0.5), (0.9>0.3), (0.5=0.5: half), (0.5>0.3) -> 3.5 / 4.
    assert roc_auc([0.9, 0.5, 0.5, 0.3], [True, True, False, False]) == pytest.approx(0.875)
    assert roc_auc([0.1, 0.9], [True, False]) == 0.0


def test_roc_auc_matches_sklearn() -> None:
    rng = random.Random(3)
    scores = [round(rng.random(), 1) for _ in range(200)]
    labels = [rng.random() < s for s in scores]
    assert roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))


def test_operating_point_separable() -> None:
    point = operating_point([0.2, 0.3, 0.6, 0.7], [False, False, True, True], "hand")
    assert point.threshold == pytest.approx(0.45)
    assert (point.precision, point.recall, point.auc) == (1.0, 1.0, 1.0)
    assert (point.poor_searches, point.good_searches, point.source) == (2, 2, "hand")


def test_operating_point_overlap() -> None:
    # Flagging d > 0.45 catches 0.5 (positive) and 0.6 (negative): precision 1/2, recall 1/2,
    # F1 0.5; flagging d > 0.3 adds a positive: precision 2/3, recall 1, F1 0.8 (best).
    point = operating_point([0.2, 0.4, 0.5, 0.6], [False, True, True, False])
    assert point.threshold == pytest.approx(0.3)
    assert point.f1 == pytest.approx(0.8)


def test_paired_difference_mean_and_interval_match_a_numpy_bootstrap() -> None:
    rng = random.Random(3)
    a = [rng.random() for _ in range(80)]
    b = [x - 0.05 + rng.gauss(0, 0.1) for x in a]
    got = paired_difference(a, b, resamples=4000, seed=1)
    diffs = np.array(a) - np.array(b)
    assert got.mean == pytest.approx(diffs.mean())
    assert got.queries == 80
    # The interval of an independent bootstrap (numpy's generator) agrees to sampling noise.
    draws = np.random.default_rng(0).choice(diffs, size=(4000, 80)).mean(1)
    low, high = np.percentile(draws, [2.5, 97.5])
    assert got.low == pytest.approx(low, abs=0.006)
    assert got.high == pytest.approx(high, abs=0.006)
    assert got.low < got.mean < got.high


def test_paired_difference_tells_noise_from_a_real_gap() -> None:
    rng = random.Random(5)
    base = [rng.random() for _ in range(100)]
    noise = [x + rng.gauss(0, 0.2) for x in base]
    better = [x + 0.1 for x in base]
    assert not paired_difference(noise, base).significant
    assert paired_difference(better, base).significant
    assert paired_difference(base, better).high < 0  # the other way round: significantly worse
    # Seeded: the same inputs give the same interval.
    assert paired_difference(noise, base, seed=7) == paired_difference(noise, base, seed=7)


def test_paired_difference_identical_systems_is_exactly_zero() -> None:
    scores = [0.1, 0.5, 0.9]
    got = paired_difference(scores, scores)
    assert (got.mean, got.low, got.high) == (0.0, 0.0, 0.0)
    assert not got.significant


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "message"),
    [
        ([0.1], [0.1, 0.2], {}, "one per query"),
        ([], [], {}, "no queries"),
        ([0.1], [0.2], {"level": 1.0}, "level"),
        ([0.1], [0.2], {"resamples": 0}, "resamples"),
    ],
)
def test_paired_difference_refuses_bad_input(
    a: list[float], b: list[float], kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        paired_difference(a, b, **kwargs)  # type: ignore[arg-type]
