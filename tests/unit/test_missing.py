"""The missing-answer scenario: removal is exact, neighbours stay, the split is seeded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragbrain.errors import InvalidInputError
from ragbrain.evaluation.beir import corpus_store, load_split
from ragbrain.evaluation.missing import (
    MissingAnswer,
    gate_refuses,
    pruned_store,
    refusal_stats,
    split_missing,
)
from tests.support.beir_folders import make_folder
from tests.support.fakes import BagOfWordsEmbeddings

# q1/q2 share d2; q3's only document d3 is also q4's; q5..q8 have documents of their own.
QRELS = {
    "q1": {"d1": 1, "d2": 1},
    "q2": {"d2": 2},
    "q3": {"d3": 1},
    "q4": {"d3": 1, "d4": 1},
    "q5": {"d5": 1},
    "q6": {"d6": 1, "d60": 0},
    "q7": {"d7": 1},
    "q8": {"d8": 1},
    "q9": {"d9": 0},  # nothing relevant: left out
}


def _relevant(query: str) -> set[str]:
    return {d for d, s in QRELS[query].items() if s > 0}


@pytest.mark.parametrize("seed", range(12))
def test_removal_is_exact(seed: int) -> None:
    split = split_missing(QRELS, list(QRELS), seed=seed)
    assert "q9" not in split.unanswerable | split.answerable
    assert split.unanswerable | split.answerable == {f"q{i}" for i in range(1, 9)}
    assert not split.unanswerable & split.answerable
    for query in split.unanswerable:  # every relevant document is gone
        assert _relevant(query) <= split.removed
    for query in split.answerable:  # at least one stays
        assert _relevant(query) - split.removed
    # nothing else is removed: only relevant documents of answerless queries
    assert split.removed == set().union(*(_relevant(q) for q in split.unanswerable))
    assert "d60" not in split.removed  # judged 0 is a neighbour, not an answer


def test_split_is_seeded_and_about_half() -> None:
    first = split_missing(QRELS, list(QRELS), seed=3)
    assert split_missing(QRELS, list(reversed(QRELS)), seed=3) == first
    draws = {split_missing(QRELS, list(QRELS), seed=s).unanswerable for s in range(12)}
    assert len(draws) > 1
    assert all(3 <= len(d) <= 5 for d in draws)


def test_a_shared_document_is_kept_for_the_answerable_query() -> None:
    qrels = {"a": {"x": 1}, "b": {"x": 1, "y": 1}}
    for seed in range(8):
        split = split_missing(qrels, ["a", "b"], seed=seed)
        if "a" in split.answerable:
            assert "x" not in split.removed
        if "b" in split.answerable:
            assert {"x", "y"} - split.removed


@pytest.mark.parametrize(
    ("qrels", "share", "match"),
    [
        ({"q": {"d": 1}}, 0.0, r"share must be in \(0, 1\), got 0.0"),
        ({"q": {"d": 1}}, 1.0, r"share must be in \(0, 1\), got 1.0"),
        ({"q": {"d": 0}}, 0.5, "No query of the scenario has a relevant document"),
    ],
    ids=["share-zero", "share-one", "nothing-relevant"],
)
def test_bad_input(qrels: dict[str, dict[str, int]], share: float, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        split_missing(qrels, list(qrels), share=share)


def test_pruned_store_drops_exactly_the_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    split = load_split(make_folder(tmp_path / "tiny"), "test")
    store = corpus_store(split, BagOfWordsEmbeddings())
    scenario = MissingAnswer(frozenset({"q1"}), frozenset({"q2"}), frozenset({"d1"}), seed=0)
    pruned = pruned_store(store, scenario)
    assert set(pruned.all_ids()) == set(split.corpus) - {"d1"}
    assert set(store.all_ids()) == set(split.corpus)  # the original is untouched
    # the neighbours keep their vectors: the same distances as in the original
    before = {h["id"]: h["distance"] for h in store.search("nightly backup", 6)}
    after = {h["id"]: h["distance"] for h in pruned.search("nightly backup", 5)}
    assert after == pytest.approx({k: v for k, v in before.items() if k != "d1"})
    again = pruned_store(store, scenario)  # the cached copy is reused
    assert again.location == pruned.location
    assert again.count() == len(split.corpus) - 1


def test_refusal_stats() -> None:
    scenario = MissingAnswer(frozenset({"a", "b"}), frozenset({"c", "d"}), frozenset(), seed=0)
    stats = refusal_stats({"a": [], "b": ["x", "y"], "c": ["z"], "d": [], "other": []}, scenario)
    assert stats.refusal_recall == 0.5
    assert stats.false_refusal == 0.5
    assert stats.chunks_when_unanswerable == 1.0
    assert stats.chunks_when_answerable == 0.5
    assert (stats.unanswerable, stats.answerable) == (2, 2)


@pytest.mark.parametrize(
    ("best", "refused"), [(None, True), (0.56, True), (0.55, False), (0.1, False)]
)
def test_gate_baseline(best: float | None, refused: bool) -> None:
    assert gate_refuses(best) is refused


def test_eval_runs_the_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragbrain.evaluation.evaluate import EvalOptions, evaluate

    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "results"
    options = EvalOptions(
        configs=["dense", "hybrid"], type_scenario=False, missing_answer=True, out=out
    )
    payload = evaluate(
        make_folder(tmp_path / "tiny"),
        options,
        BagOfWordsEmbeddings(),
        None,
        lambda label: lambda done, total: None,
    )
    scenario = payload["missing_answer"]
    assert scenario["unanswerable"] == scenario["answerable"] == 2
    assert scenario["removed_documents"] == 2
    dense = scenario["configs"]["dense"]
    # LangChain's dense search never refuses: it hands over what is left of the tiny corpus
    assert dense["refusal_recall"] == 0.0
    assert dense["chunks_when_unanswerable"] == 4.0
    assert set(scenario["baseline_gate"]) >= {"threshold", "refusal_recall", "false_refusal"}
    assert "## Missing answer" in (out / "tiny-test.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (
            ["--scenario", "nope"],
            r"Unknown scenario\(s\) \['nope'\]; known: \['missing-answer', 'off-topic'\]",
        ),
        (["--lodo", "missing.json"], "not a readable LODO result"),
        (["--embedding", "bert"], r"Unknown --embedding 'bert'; known: minilm\|e5-small"),
    ],
    ids=["unknown-scenario", "missing-lodo-file", "unknown-embedding"],
)
def test_eval_cli_refuses(tmp_path: Path, args: list[str], match: str) -> None:
    import re

    from typer.testing import CliRunner

    from ragbrain.cli import app

    folder = make_folder(tmp_path / "tiny")
    args = [a if a != "missing.json" else str(tmp_path / a) for a in args]
    result = CliRunner().invoke(app, ["eval", "--data", str(folder), *args])
    assert result.exit_code == 2
    assert re.search(match, " ".join(result.output.split()))


@pytest.mark.parametrize("seed", range(6))
def test_questions_on_one_passage_count_towards_the_share(seed: int) -> None:
    # a reading-comprehension set: five questions on each of four passages
    qrels = {f"q{p}{i}": {f"p{p}": 1} for p in range(4) for i in range(5)}
    split = split_missing(qrels, list(qrels), seed=seed)
    assert len(split.unanswerable) == len(split.answerable) == 10
    assert len(split.removed) == 2


def test_eval_lodo_runs_with_what_the_fold_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``eval --lodo`` hands the fold's critic threshold, dense share and abstention cuts to
    the evaluated runs (the stub stands for the evaluation: no model loads)."""
    import json

    from typer.testing import CliRunner

    import ragbrain.evaluation.evaluate as evaluation
    import ragbrain.models.embeddings
    from ragbrain.cli import app
    from ragbrain.refusal.abstain import AbstainThresholds

    seen: dict[str, Any] = {}

    def stub(
        data: Path, options: Any, embeddings: Any, critic: Any, reporter: Any, base: Any
    ) -> dict[str, Any]:
        seen["base"] = base
        return {"summary": {}, "dataset": data.name, "split": "test"}

    monkeypatch.setattr(evaluation, "evaluate", stub)
    monkeypatch.setattr(evaluation, "eval_critic", lambda folder: None)
    monkeypatch.setattr(
        ragbrain.models.embeddings, "embeddings_for", lambda name: BagOfWordsEmbeddings()
    )
    folder = make_folder(tmp_path / "tiny")
    cuts = {"critic_below": 0.7, "distance_above": 0.43, "coverage_below": 0.25}
    fold = {
        "fit_on": [["other", "train"]],
        "shipped_layer_threshold": 0.03,
        "dense_share": 0.2,
        "abstention_shipped": cuts,
    }
    result_file = tmp_path / "lodo.json"
    result_file.write_text(json.dumps({"folds": {"tiny": fold}}), encoding="utf-8")
    args = ["eval", "--data", str(folder), "--lodo", str(result_file), "--out", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    base = seen["base"]
    assert base.critic_threshold == 0.03 and base.dense_share == 0.2
    assert base.abstain_thresholds == AbstainThresholds(
        0.7, 0.43, f"{result_file} (fold tiny)", 0.25
    )
