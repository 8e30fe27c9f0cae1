"""Gate calibration: pseudo-queries, samples from a store, the threshold reaching the retriever."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragbrain.context import DEFAULT_GATE_THRESHOLD, RetrievalContext
from ragbrain.errors import InvalidInputError
from ragbrain.evaluation.beir import corpus_store, load_split
from ragbrain.evaluation.calibrate import labelled_samples, pseudo_samples
from ragbrain.evaluation.calibrate_run import run_calibration
from ragbrain.gates import pseudo_query
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.store import Store
from tests.support.beir_folders import make_folder
from tests.support.fakes import BagOfWordsEmbeddings


def test_pseudo_query_title_and_first_sentence() -> None:
    text = "Nightly backup\nThe backup failed. Credentials had expired."
    assert pseudo_query(text, "Nightly backup") == "Nightly backup. The backup failed."
    assert pseudo_query("One sentence only") == "One sentence only"
    assert pseudo_query("データが消えた。原因は期限切れ。") == "データが消えた。"
    assert len(pseudo_query("word " * 100).split()) == 30


def test_pseudo_samples_separate_own_source(fake_store: Store) -> None:
    distances, no_relevant = pseudo_samples(fake_store, n=50)
    positives = [d for d, y in zip(distances, no_relevant, strict=True) if not y]
    negatives = [d for d, y in zip(distances, no_relevant, strict=True) if y]
    assert positives and negatives
    # With its own note present, a pseudo-query finds a closer chunk than without it.
    assert sum(positives) / len(positives) < sum(negatives) / len(negatives)


def test_pseudo_samples_need_two_sources(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    vector = store.embeddings.embed_documents(["only note"])
    store.upsert(["a"], ["only note"], [{"source": "a.md", "type": "x"}], vector)
    with pytest.raises(InvalidInputError, match="needs at least 2"):
        pseudo_samples(store)


def _nothing(label: str) -> object:
    return lambda done, total: None


def test_self_supervised_calibration_reaches_the_retriever(
    fake_store: Store, tmp_path: Path
) -> None:
    path = Path(fake_store.location)
    result = run_calibration(
        [],
        "train",
        path,
        fake_store.embeddings,
        samples=20,
        out=tmp_path / "out",
        reporter=_nothing,  # type: ignore[arg-type]
    )
    threshold = result.calibration.threshold
    assert result.written_to == str(path)
    assert Store.read_gate_threshold(path) == pytest.approx(threshold)
    report = json.loads(result.report.read_text(encoding="utf-8"))
    assert report["threshold"] == threshold and 0.0 <= report["auc"] <= 1.0
    assert result.plot.stat().st_size > 0

    retriever = CorrectiveRetriever.from_store(path, embeddings=fake_store.embeddings, critic=None)
    assert retriever.run("nightly backup")["gate"] == pytest.approx(threshold)
    # An explicit gate from the caller wins over the calibrated one.
    explicit = RetrievalContext(gate_threshold=0.123)
    kept = CorrectiveRetriever.from_store(
        path, embeddings=fake_store.embeddings, critic=None, context=explicit
    )
    assert kept.run("nightly backup")["gate"] == 0.123


def test_uncalibrated_store_keeps_the_default(fake_store: Store) -> None:
    path = Path(fake_store.location)
    assert Store.read_gate_threshold(path) is None
    retriever = CorrectiveRetriever.from_store(path, embeddings=fake_store.embeddings, critic=None)
    # The fake embedding model has no shipped calibration.
    assert retriever.run("nightly backup")["gate"] == DEFAULT_GATE_THRESHOLD


def test_labelled_calibration_needs_both_outcomes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    data = make_folder(tmp_path / "tiny")
    # Six documents, top 10: every search holds its relevant document, so nothing to contrast.
    with pytest.raises(InvalidInputError, match="both with and without a relevant chunk"):
        run_calibration(
            [data],
            "test",
            None,
            BagOfWordsEmbeddings(),
            samples=10,
            out=tmp_path / "out",
            reporter=_nothing,  # type: ignore[arg-type]
        )


def test_labelled_samples_flag_searches_without_a_relevant_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    data = make_folder(tmp_path / "tiny")
    (data / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n", encoding="utf-8"
    )
    split = load_split(data, "test")
    store = corpus_store(split, BagOfWordsEmbeddings())
    distances, no_relevant = labelled_samples(split, store, k=1)
    # "why did the nightly backup fail" finds the backup document first; "redis cache
    # stampede" does not find the alembic document judged relevant here.
    assert no_relevant == [False, True]
    assert len(distances) == 2 and all(0.0 <= d <= 2.0 for d in distances)


@pytest.mark.parametrize("bad", [-0.1, 2.5], ids=["negative", "above-2"])
def test_set_gate_threshold_refuses_non_distances(fake_store: Store, bad: float) -> None:
    with pytest.raises(InvalidInputError, match="cosine distance"):
        fake_store.set_gate_threshold(bad, "test")
