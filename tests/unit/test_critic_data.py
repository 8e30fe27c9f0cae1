"""Critic training data: BEIR mining with the project's store, pseudo-queries, metrics, reports."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import math
from pathlib import Path

import pytest

from ragbrain.critic.training.critic_report import markdown, plot, write_json
from ragbrain.critic.training.data import NoTrainingDataError, groups, is_dev
from ragbrain.critic.training.keep_metrics import keep_stats, roc_auc, threshold_for_recall
from ragbrain.critic.training.recipe import Recipe
from ragbrain.critic.training.sources import data_folder, from_beir, from_corpus, pseudo_query
from ragbrain.errors import InvalidInputError
from tests.support.fakes import BagOfWordsEmbeddings

DOCS = {
    "d1": "redis cache stampede after deploy",
    "d2": "nightly backup failed silently disk full",
    "d3": "jwt signing key rotation broke login",
    "d4": "pdf export worker memory leak",
    "d5": "csv export garbled names in excel",
    "d6": "connection pool exhaustion month end",
}
QUERIES = {
    "q1": "redis stampede",
    "q2": "backup failed",
    "q3": "jwt login",
    "q4": "pdf leak",
    "q5": "csv excel",
    "q6": "pool exhaustion",
}


def beir(folder: Path, qrels: dict[str, dict[str, int]]) -> Path:
    (folder / "qrels").mkdir(parents=True)
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as handle:
        for id_, text in DOCS.items():
            handle.write(json.dumps({"_id": id_, "title": "", "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for id_, text in QUERIES.items():
            handle.write(json.dumps({"_id": id_, "text": text}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{s}" for q, docs in qrels.items() for d, s in docs.items()]
    (folder / "qrels" / "train.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


TINY = Recipe(max_queries=10, dev_fraction=0.5, mine_k=4, eval_k=3, hard_negatives=2)


def test_mining_labels_candidates_from_qrels(tmp_path: Path, cache: Path) -> None:
    qrels = {q: {f"d{q[1]}": 1} for q in QUERIES}
    folder = beir(tmp_path / "toy", qrels)
    found = from_beir([folder], BagOfWordsEmbeddings(), TINY)
    assert found.sources["toy"]["split"] == "train"
    assert found.train and all(g.labels[0] == 1 and set(g.labels[1:]) == {0} for g in found.train)
    for item in found.dev:
        assert {c.doc_id for c in item.candidates if c.relevant} <= {f"d{item.query_id[1]}"}
        distances = [c.distance for c in item.candidates]
        assert distances == sorted(distances)


def test_the_threshold_is_chosen_on_what_the_retriever_hands_the_critic(
    tmp_path: Path, cache: Path
) -> None:
    """dev_seen holds each dev query's candidates exactly as the retriever's hybrid search
    ranks them (BM25 and dense fused), labelled by the qrels; dev keeps the mined ones."""
    from ragbrain.evaluation.beir import corpus_store, load_split
    from ragbrain.hybrid import dense_trusted, hybrid_search
    from ragbrain.settings import model_settings
    from ragbrain.store.lexical import sync_lexical

    qrels = {q: {f"d{q[1]}": 1} for q in QUERIES}
    folder = beir(tmp_path / "toy", qrels)
    embeddings = BagOfWordsEmbeddings()
    found = from_beir([folder], embeddings, TINY)
    assert found.dev_seen and {m.query_id for m in found.dev} <= {
        m.query_id for m in found.dev_seen
    }
    store = corpus_store(load_split(folder, "train"), embeddings)
    index = sync_lexical(store)
    for item in found.dev_seen:
        model = model_settings(store.model)
        trust = dense_trusted(item.query, model.reads)
        hits = hybrid_search(
            store, index, item.query, TINY.eval_k, trust_dense=trust, power=model.bm25_power
        )[0]
        assert [c.doc_id for c in item.candidates] == [h["id"] for h in hits]
        assert [c.relevant for c in item.candidates] == [
            h["id"] == f"d{item.query_id[1]}" for h in hits
        ]


def test_a_set_without_relevant_dev_chunks_does_not_set_the_threshold() -> None:
    from ragbrain.critic.training.layers import choose_threshold

    scores = [0.9, 0.2, 0.1, 0.05]
    labels = [True, False, False, False]
    sets = ["a", "a", "b", "b"]  # set b: its dev queries found nothing relevant
    threshold, report = choose_threshold(scores, labels, sets, recall=0.9)
    assert threshold == 0.9
    assert report["b"]["irrelevant_dropped"] == 1.0


def test_row_weights_in_the_layer_fit() -> None:
    import torch

    from ragbrain.critic.training.layers import fit_combiner

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(60, 2, generator=generator)
    y = (x[:, 0] + 0.5 * torch.randn(60, generator=generator) > 0).float()
    plain = fit_combiner(x, y, ["a", "b"])
    ones = fit_combiner(x, y, ["a", "b"], weights=torch.ones(60))
    assert ones["weights"] == pytest.approx(plain["weights"], abs=1e-4)
    # A row of weight 0 does not count: flipping its label changes nothing.
    first_40 = torch.cat([torch.ones(40), torch.zeros(20)])
    weighted = fit_combiner(x, y, ["a", "b"], weights=first_40)
    flipped = fit_combiner(x, torch.cat([y[:40], 1 - y[40:]]), ["a", "b"], weights=first_40)
    assert flipped["weights"] == pytest.approx(weighted["weights"], abs=1e-5)
    assert flipped["bias"] == pytest.approx(weighted["bias"], abs=1e-5)
    unweighted_flip = fit_combiner(x, torch.cat([y[:40], 1 - y[40:]]), ["a", "b"])
    assert unweighted_flip["weights"] != pytest.approx(plain["weights"], abs=1e-2)


def test_a_folder_without_positives_stops_early(tmp_path: Path, cache: Path) -> None:
    folder = beir(tmp_path / "toy", {q: {"d1": 0} for q in QUERIES})
    with pytest.raises(NoTrainingDataError, match="no positive pairs"):
        from_beir([folder], BagOfWordsEmbeddings(), TINY)


@pytest.mark.parametrize(
    ("given", "expected"),
    [("data/sf", ("data/sf", "train")), ("data/nf@dev", ("data/nf", "dev"))],
    ids=["train", "dev"],
)
def test_data_folder_names_a_split(given: str, expected: tuple[str, str]) -> None:
    folder, split = data_folder(Path(given))
    assert (str(folder), split) == expected


def test_data_folder_refuses_test() -> None:
    with pytest.raises(InvalidInputError, match="never learns from a test split"):
        data_folder(Path("data/sf@test"))


def test_dev_assignment_is_stable() -> None:
    assert is_dev("sf", "q1", 0.3, 13) == is_dev("sf", "q1", 0.3, 13)
    share = sum(is_dev("sf", f"q{i}", 0.3, 13) for i in range(2000)) / 2000
    assert 0.25 < share < 0.35


def test_judged_negatives_without_positive_make_pointwise_groups() -> None:
    from ragbrain.critic.training.data import QueryCandidates

    item = QueryCandidates("cosqa", "q", "sort a list", (), (), ("def f(): pass",))
    made = groups([item], ["x"], hard=2, random_negatives=1, positives_per_query=1, seed=0)
    assert [g.labels for g in made] == [(0,)]


@pytest.mark.parametrize(
    ("text", "title", "expected"),
    [
        ("# Redis stampede\nEvery key expired.", "", "Redis stampede"),
        ("Every key in the cache expired at once after the deploy. Ouch.", "", None),
        (
            "Every key expired at once. Then the database fell over under the load of "
            "all the workers that recomputed the same aggregates at the same moment.",
            "",
            "Every key expired at once.",
        ),
        ("short", "Cache notes", "Cache notes"),
    ],
    ids=["heading", "sentence-too-long", "first-sentence", "title"],
)
def test_pseudo_queries(text: str, title: str, expected: str | None) -> None:
    assert pseudo_query(text, title) == expected


def test_from_corpus_mines_pseudo_queries_from_the_notes(
    notes_dir: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragbrain.critic.training import sources

    # Chunk ids hash the notes' (temporary) folder, so the hashed dev split would change from
    # run to run: every other query, in the order they are assigned, is dev here instead.
    turn = itertools.count()
    monkeypatch.setattr(sources, "is_dev", lambda *_: next(turn) % 2 == 0)
    mined: list[int] = []
    real_mine = sources.mine
    monkeypatch.setattr(
        sources,
        "mine",
        lambda split, store, ids, **kw: (
            mined.append(len(ids)) or real_mine(split, store, ids, **kw)
        ),
    )
    found = from_corpus(notes_dir, BagOfWordsEmbeddings(), TINY)
    assert found.train and all(g.labels[0] == 1 for g in found.train)
    assert found.dev_seen and any(c.relevant for m in found.dev_seen for c in m.candidates)
    for item in found.dev_seen:  # its pseudo-query's own chunk is the one relevant candidate
        assert {c.doc_id for c in item.candidates if c.relevant} <= {item.query_id[2:]}
    with contextlib.suppress(NoTrainingDataError):  # 3 queries may leave no dev query at all
        from_corpus(notes_dir, BagOfWordsEmbeddings(), dataclasses.replace(TINY, max_queries=3))
    assert mined[1] == 3 < mined[0]  # the recipe's cap on queries holds for notes too


def test_from_corpus_with_too_few_pseudo_queries_stops(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("x", encoding="utf-8")
    with pytest.raises(NoTrainingDataError, match="pseudo-query"):
        from_corpus(notes, BagOfWordsEmbeddings(), TINY)


def test_keep_stats_by_hand() -> None:
    stats = keep_stats([0.9, 0.8, 0.3, 0.1, math.nan], [True, False, True, False, True], 0.5)
    assert stats.relevant_kept == pytest.approx(1 / 3)
    assert stats.irrelevant_dropped == pytest.approx(1 / 2)
    assert stats.precision == pytest.approx(1 / 2)
    assert stats.f1 == pytest.approx(0.4)


def test_roc_auc_by_hand() -> None:
    assert roc_auc([0.9, 0.1, 0.5, 0.5], [True, False, True, False]) == pytest.approx(0.875)
    assert math.isnan(roc_auc([0.1], [True]))


def test_threshold_for_recall_keeps_the_share() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.2]
    labels = [True, True, True, True, False]
    assert threshold_for_recall(scores, labels, 0.75) == 0.7
    assert keep_stats(scores, labels, 0.7).relevant_kept >= 0.75


def test_reports_are_written(tmp_path: Path) -> None:
    row = {
        "scorer": "Tiny-Critic",
        "threshold": 0.5,
        "auc": 0.8,
        **keep_stats([0.9, 0.1], [True, False], 0.5).as_dict(),
    }
    report = {
        "data_set": "toy",
        "split": "test",
        "queries": 1,
        "rows": [row],
        "target_recall": 0.9,
        "latency_ms": {"p50": 10.0, "p95": 12.0, "cpu_p50": 9.0},
        "load_seconds": 1.0,
        "rss_added_mb": 50.0,
        "scores": {"critic": [0.9, 0.1], "labels": [True, False], "neg_distance": [-0.1, -0.5]},
    }
    assert "| toy (test, 1 q) | Tiny-Critic | 100.0% | 100.0%" in markdown([report])
    write_json([report], tmp_path / "r.json")
    assert "scores" not in json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))[0]
    plot([report], tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 1000


class PagedVectors:
    """The part of a Chroma collection ``exact_nearest`` reads: ``get`` by pages."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

        self.reads = 0

    def get(self, include: list[str], limit: int, offset: int) -> dict[str, object]:
        self.reads += 1
        ids = list(self.vectors)[offset : offset + limit]
        return {"ids": ids, "embeddings": [self.vectors[i] for i in ids]}


def test_exact_nearest_is_a_full_scan_in_any_page_size(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy

    from ragbrain.critic.training import data

    rng = numpy.random.default_rng(0)
    vectors = {f"c{i:02d}": rng.standard_normal(8).tolist() for i in range(40)}
    vectors["tie"] = list(vectors["c07"])  # the same vector under a larger id
    queries = [*rng.standard_normal((3, 8)).tolist(), vectors["c07"]]
    unit = {k: numpy.asarray(v) / numpy.linalg.norm(v) for k, v in vectors.items()}
    skip = frozenset({"c03"})
    expected = []
    for q in queries:
        qn = numpy.asarray(q) / numpy.linalg.norm(q)
        ranked = sorted((1 - float(unit[k] @ qn), k) for k in unit if k not in skip)
        expected.append([k for _, k in ranked[:5]])
    for page in (7, 1000):
        monkeypatch.setattr(data, "_PAGE", page)
        found = data.exact_nearest(PagedVectors(vectors), [queries], 5, skip)[0]
        assert [[k for k, _ in row] for row in found] == expected
        assert all(d >= 0 for row in found for _, d in row)
    assert [k for k, _ in found[3][:2]] == ["c07", "tie"]  # equal distances: by id
    # Several batches share one scan, each with the results it gets alone.
    monkeypatch.setattr(data, "_PAGE", 7)
    collection = PagedVectors(vectors)
    batches = [queries[:1], queries[1:]]
    shared = data.exact_nearest(collection, batches, 5, skip)
    assert collection.reads == 7  # 41 vectors in pages of 7, then the empty page: once
    assert shared == [data.exact_nearest(PagedVectors(vectors), [b], 5, skip)[0] for b in batches]
