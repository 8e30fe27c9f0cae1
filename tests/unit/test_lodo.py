"""LODO folds: the held-apart set (and its domain) is never fit on, nor any test split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragbrain.errors import InvalidInputError
from ragbrain.evaluation.lodo import Fold, check_unseen, folds, root_folds

SETS = {
    "a": ["test", "train"],
    "b": ["dev", "test", "train"],
    "c": ["test"],
    "zh1": ["test", "train"],
    "zh2": ["test", "train"],
}
DOMAINS = {"zh1": "zh", "zh2": "zh"}


def test_each_set_is_held_apart_once() -> None:
    result = folds(SETS, domains=DOMAINS)
    assert [f.held_out for f in result] == sorted(SETS)
    for fold in result:
        assert fold.test == (fold.held_out, "test")
        assert fold.held_out not in fold.fit_sets
        assert all(split in ("train", "dev") for _, split in fold.fit_on)


def test_fit_splits_of_the_others() -> None:
    by_name = {f.held_out: f for f in folds(SETS, domains=DOMAINS)}
    assert by_name["a"].fit_on == (
        ("b", "train"),
        ("b", "dev"),
        ("zh1", "train"),
        ("zh2", "train"),
    )
    assert by_name["c"].fit_sets == ("a", "b", "zh1", "zh2")  # c itself has nothing to give


def test_a_shared_domain_is_held_apart_together() -> None:
    by_name = {f.held_out: f for f in folds(SETS, domains=DOMAINS)}
    assert by_name["zh1"].fit_sets == ("a", "b")
    assert by_name["zh2"].fit_sets == ("a", "b")
    # without the grouping each would fit on the other
    assert "zh2" in {f.held_out: f for f in folds(SETS, domains={})}["zh1"].fit_sets


@pytest.mark.parametrize(
    ("sets", "only", "match"),
    [
        (SETS, ["nope"], r"Unknown data set\(s\) \['nope'\]"),
        ({"a": ["train"], "b": ["test", "train"]}, ["a"], "a has no test split"),
        ({"a": ["test"], "b": ["test"]}, ["a"], "Nothing to fit on when a is held apart"),
    ],
    ids=["unknown", "no-test", "nothing-to-fit"],
)
def test_bad_folds(sets: dict[str, list[str]], only: list[str], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        folds(sets, only=only, domains=DOMAINS)


@pytest.mark.parametrize(
    ("held_out", "fitted"),
    [
        ("a", [("b", "test")]),
        ("a", [("a", "train")]),
        ("cmrc2018_ret", [("b", "train"), ("drcd_ret", "train")]),
    ],
    ids=["a-test-split", "the-held-out-set", "same-domain"],
)
def test_check_unseen_refuses(held_out: str, fitted: list[tuple[str, str]]) -> None:
    with pytest.raises(InvalidInputError, match="a LODO figure may only use"):
        check_unseen(Fold(held_out, (), (held_out, "test")), fitted)


def test_check_unseen_accepts_other_domains() -> None:
    check_unseen(Fold("a", (), ("a", "test")), [("b", "train"), ("b", "dev")])


def _data_set(folder: Path, splits: list[str]) -> None:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(json.dumps({"_id": "d", "text": "x"}) + "\n")
    for split in splits:
        (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\nq\td\t1\n")


def test_root_folds_reads_the_folders(tmp_path: Path) -> None:
    _data_set(tmp_path / "one", ["test", "train"])
    _data_set(tmp_path / "two", ["dev", "test"])
    (tmp_path / "not-a-set").mkdir()
    result = root_folds(tmp_path)
    assert [(f.held_out, f.fit_on) for f in result] == [
        ("one", (("two", "dev"),)),
        ("two", (("one", "train"),)),
    ]
    with pytest.raises(InvalidInputError, match="no data set here"):
        root_folds(tmp_path / "not-a-set")


def test_fold_params(tmp_path: Path) -> None:
    from ragbrain.evaluation.lodo import fold_params

    path = tmp_path / "lodo.json"
    folds_ = {
        "a": {"fit_on": [["b", "train"]], "shipped_layer_threshold": 0.2},
        "b": {"fit_on": [["b", "train"]]},  # leaked: fit on itself
    }
    path.write_text(json.dumps({"folds": folds_}), encoding="utf-8")
    assert fold_params(path, "a")["shipped_layer_threshold"] == 0.2
    with pytest.raises(InvalidInputError, match="a LODO figure may only use"):
        fold_params(path, "b")
    with pytest.raises(InvalidInputError, match=r"no fold holds 'c' apart; folds: \['a', 'b'\]"):
        fold_params(path, "c")
    (tmp_path / "bad.json").write_text("[]", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="no 'folds'"):
        fold_params(tmp_path / "bad.json", "a")
    with pytest.raises(InvalidInputError, match="not a readable LODO result"):
        fold_params(tmp_path / "missing.json", "a")
    fitted_on = tmp_path / "lodo-minilm.json"
    fitted_on.write_text(json.dumps({"embedding_model": "m1", "folds": folds_}), encoding="utf-8")
    assert fold_params(fitted_on, "a", "m1")["shipped_layer_threshold"] == 0.2
    with pytest.raises(InvalidInputError, match="was fit on m1 stores, and this evaluation runs"):
        fold_params(fitted_on, "a", "m2")


def test_fold_context_carries_what_the_fold_fit() -> None:
    from ragbrain.context import RetrievalContext
    from ragbrain.evaluation.lodo import fold_context
    from ragbrain.refusal.abstain import AbstainThresholds

    cuts = {"critic_below": 0.7, "distance_above": 0.43, "coverage_below": 0.25}
    params = {"shipped_layer_threshold": 0.03, "dense_share": 0.2, "abstention_shipped": cuts}
    base = RetrievalContext(abstain=True, gate_threshold=0.4)
    context = fold_context(params, "lodo.json (fold a)", base)
    assert context == RetrievalContext(
        abstain=True,
        gate_threshold=0.4,  # the caller's settings stay
        critic_threshold=0.03,
        dense_share=0.2,
        abstain_thresholds=AbstainThresholds(0.7, 0.43, "lodo.json (fold a)", 0.25),
    )
    assert fold_context({"fit_on": []}, "old.json") == RetrievalContext()  # older results
    with pytest.raises(InvalidInputError, match=r"bad.json: abstention cuts need critic_below"):
        fold_context({"abstention_shipped": {"critic_below": 0.7}}, "bad.json")
    with pytest.raises(InvalidInputError, match="distance_above must be a cosine distance"):
        fold_context({"abstention_shipped": {**cuts, "distance_above": 3.0}}, "bad.json")
