"""BEIR loading: bad folders fail naming the file and line; the eval harness end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragbrain.evaluation.beir import DataSetError, corpus_store, load_split
from ragbrain.evaluation.evaluate import EvalOptions, evaluate
from ragbrain.evaluation.report import write_atomic
from ragbrain.store import Store
from tests.support.beir_folders import CORPUS, QRELS, make_folder
from tests.support.fakes import BagOfWordsEmbeddings, write_behind_its_back


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    return make_folder(tmp_path / "tiny")


def test_load_split(data: Path) -> None:
    split = load_split(data, "test")
    assert set(split.queries) == {"q1", "q2", "q3", "q4"}
    assert split.qrels["q1"] == {"d1": 2}
    assert split.relevant("q4") == {"d4"}  # judged 0 is not relevant
    assert split.corpus["d1"].content.startswith("Backup\n")


BAD_CASES = [
    ("missing-split", {"split": "dev"}, r"qrels/dev\.tsv: missing \(splits here: test\)"),
    (
        "unknown-doc",
        {"qrels": "query-id\tcorpus-id\tscore\nq1\tnope\t1\n"},
        r"test\.tsv:2: 1 corpus ids.*'nope'",
    ),
    (
        "unknown-query",
        {"qrels": "query-id\tcorpus-id\tscore\nq9\td1\t1\n"},
        r"test\.tsv:2: 1 query ids.*'q9'",
    ),
    ("empty-split", {"qrels": "query-id\tcorpus-id\tscore\n"}, r"test\.tsv: the split is empty"),
    ("bad-fields", {"qrels": "query-id\tcorpus-id\tscore\nq1 d1 1\n"}, r"test\.tsv:2: expected 3"),
    ("bad-score", {"qrels": "query-id\tcorpus-id\tscore\nq1\td1\thigh\n"}, r"test\.tsv:2: score"),
    (
        "bad-json",
        {"corpus": '{"_id": "d1", "text": "x"}\n{oops\n'},
        r"corpus\.jsonl:2: not valid JSON",
    ),
    ("no-id", {"corpus": '{"text": "x"}\n'}, r"corpus\.jsonl:1: expected an object with an '_id'"),
]


@pytest.mark.parametrize(("case", "change", "message"), BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_folders_name_file_and_line(
    tmp_path: Path, case: str, change: dict[str, str], message: str
) -> None:
    split = change.pop("split", "test")
    root = make_folder(tmp_path / case, **change)
    with pytest.raises(DataSetError, match=message):
        load_split(root, split)


def test_judgements_of_unknown_documents_can_be_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    qrels = QRELS + "q1\tgone\t1\nq3\tgone\t2\nq9x\tgone\t1\n"
    (tmp_path / "x").mkdir()
    root = make_folder(tmp_path / "x" / "tiny", qrels=qrels)
    with open(root / "queries.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"_id": "q9x", "text": "only an unknown document"}) + "\n")
    with pytest.raises(DataSetError, match="1 corpus ids"):
        load_split(root, "test")  # the default still refuses the split
    split = load_split(root, "test", drop_unknown_docs=True)
    assert split.qrels["q1"] == {"d1": 2} and split.qrels["q3"] == {"d5": 1}
    assert "q9x" not in split.queries  # nothing judged left
    assert "1 corpus ids are not in corpus.jsonl" in caplog.text
    only_unknown = make_folder(tmp_path / "y", qrels="query-id\tcorpus-id\tscore\nq1\tgone\t1\n")
    with pytest.raises(DataSetError, match="no judgement names a document"):
        load_split(only_unknown, "test", drop_unknown_docs=True)


def test_missing_corpus_file(tmp_path: Path) -> None:
    root = make_folder(tmp_path / "x")
    (root / "corpus.jsonl").unlink()
    with pytest.raises(DataSetError, match=r"corpus\.jsonl: missing"):
        load_split(root, "test")


def test_corpus_store_is_cached(data: Path) -> None:
    class Counting(BagOfWordsEmbeddings):
        calls = 0

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            Counting.calls += 1
            return super().embed_documents(texts)

    split = load_split(data, "test")
    first = corpus_store(split, Counting())
    assert first.count() == len(CORPUS)
    calls = Counting.calls
    second = corpus_store(split, Counting())
    assert second.location == first.location
    assert Counting.calls == calls  # nothing embedded again


def test_evaluate_end_to_end(data: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    payload = evaluate(
        data,
        EvalOptions(out=out, n_types=2),
        BagOfWordsEmbeddings(),
        None,
        lambda label: lambda done, total: None,
    )
    summary = payload["summary"]
    assert next(iter(summary)) == "dense"
    assert {"ragbrain-k10", "adaptive", "adaptive+gate"} <= set(summary)
    assert not {"adaptive+gate+critic", "default"} & set(summary)  # no critic available
    for row in summary.values():
        assert 0.0 <= row["ndcg@10"] <= 1.0
        assert row["queries"] == 4
    # Same collection, same depth, no filter: the graph at k=10 returns what dense returns.
    assert summary["ragbrain-k10"]["ndcg@10"] == pytest.approx(summary["dense"]["ndcg@10"])
    assert summary["adaptive"]["poor_share"] == 0.0  # gate off
    # Two queries are longer than 30 characters (medium tier, 7); two are short (5).
    assert summary["adaptive"]["depths"] == {"5": 2, "7": 2}
    written = json.loads((out / "tiny-test.json").read_text(encoding="utf-8"))
    assert written["summary"]["dense"]["ndcg@10"] == summary["dense"]["ndcg@10"]
    assert "| dense |" in (out / "tiny-test.md").read_text(encoding="utf-8")
    assert (out / "tiny-test.png").stat().st_size > 0
    assert "wrong filter" in payload["type_filter"] or "right filter" in payload["type_filter"]
    assert not list(out.glob(".*"))  # no temporary files left behind


def test_interrupted_write_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "r.json"
    target.write_text("old", encoding="utf-8")

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("os.replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, "new")
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def _cosine(a: list[float], b: list[float]) -> float:
    return 1.0 - sum(x * y for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("k", [3, 8], ids=["k3", "k8"])
def test_type_filtered_search_matches_brute_force(tmp_path: Path, k: int) -> None:
    """Store.search over-fetches unfiltered hits for a common type and falls through to
    Chroma's filter for a rare one; both must equal a brute-force filtered top-k."""
    from ragbrain.store import Store

    words = [
        "backup",
        "cache",
        "deploy",
        "redis",
        "timeout",
        "helm",
        "rollback",
        "queue",
        "invoice",
        "index",
        "lock",
    ]
    texts = [
        " ".join(words[(i * 7 + j) % len(words)] for j in range(i % 5 + 2)) + f" n{i}"
        for i in range(120)
    ]
    types = ["rare" if i % 24 == 0 else "common" for i in range(120)]  # 5 rare of 120
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    vectors = store.embeddings.embed_documents(texts)
    store.upsert([f"c{i}" for i in range(120)], texts, [{"type": t} for t in types], vectors)
    query = "redis cache timeout"
    q = store.embeddings.embed_query(query)
    for type_ in ("common", "rare"):
        expected = sorted(_cosine(q, v) for v, t in zip(vectors, types, strict=True) if t == type_)
        hits = store.search(query, k, [type_])
        assert {h["metadata"]["type"] for h in hits} == {type_}
        assert [h["distance"] for h in hits] == pytest.approx(expected[:k], abs=1e-4)


def _rare_store(tmp_path: Path) -> tuple[Store, list[list[float]]]:
    texts = [f"note {i} about {'redis cache' if i % 2 else 'helm deploy'}" for i in range(60)]
    types = ["rare" if i % 20 == 0 else "common" for i in range(60)]  # 3 rare of 60
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    vectors = store.embeddings.embed_documents(texts)
    store.upsert([f"c{i}" for i in range(60)], texts, [{"type": t} for t in types], vectors)
    return store, vectors


def test_rare_type_search_sees_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rare type's in-memory vectors follow this store's writes, and another writer's
    once the collection's count changes."""
    from ragbrain.store import search

    monkeypatch.setattr(search, "LOAD_IN_BACKGROUND", False)
    store, _ = _rare_store(tmp_path)
    assert {h["id"] for h in store.search("redis cache", 5, ["rare"])} == {"c0", "c20", "c40"}
    assert store._type_index._vectors[frozenset({"rare"})] is not None  # searched in memory
    text = "redis cache stampede"
    store.upsert(["new"], [text], [{"type": "rare"}], store.embeddings.embed_documents([text]))
    assert "new" in {h["id"] for h in store.search("redis cache", 5, ["rare"])}
    store.delete(["c20"])
    assert "c20" not in {h["id"] for h in store.search("redis cache", 5, ["rare"])}

    monkeypatch.setattr(search, "RECHECK_SECONDS", 0.0)
    other = "helm deploy rollback"
    write_behind_its_back(store, "other", other, "rare")
    assert "other" in {h["id"] for h in store.search("helm deploy", 5, ["rare"])}


def test_too_common_a_rare_type_asks_chromas_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragbrain.store import search

    monkeypatch.setattr(search, "MAX_CACHED", 2)  # the 3 rare chunks are too many to keep
    monkeypatch.setattr(search, "LOAD_IN_BACKGROUND", False)
    store, vectors = _rare_store(tmp_path)
    q = store.embeddings.embed_query("redis cache")
    hits = store.search("redis cache", 3, ["rare"])
    expected = sorted(_cosine(q, vectors[i]) for i in (0, 20, 40))
    assert [h["distance"] for h in hits] == pytest.approx(expected, abs=1e-4)
    assert store._type_index._vectors == {frozenset({"rare"}): None}


def test_rare_type_vectors_load_in_the_background(tmp_path: Path) -> None:
    """The first rare-type query is answered by Chroma's filter while the vectors load; the
    next ones are searched in memory, with the same results."""
    import threading
    import time

    store, _ = _rare_store(tmp_path)
    first = store.search("redis cache", 5, ["rare"])
    deadline = time.monotonic() + 10
    for thread in threading.enumerate():
        if thread.name == "ragbrain-type-vectors":
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
    assert not store._type_index._loading
    assert store._type_index._vectors[frozenset({"rare"})] is not None
    again = store.search("redis cache", 5, ["rare"])
    assert [h["id"] for h in again] == [h["id"] for h in first]
    assert [h["distance"] for h in again] == pytest.approx([h["distance"] for h in first])


def test_percent_keeps_a_decimal_where_the_share_is_not_whole() -> None:
    from ragbrain.evaluation import percent

    assert percent(1 / 40) == "2.5%"  # one question of 40: not "2%"
    assert percent(0.975) == "97.5%"
    assert percent(1.0) == "100%"
    assert percent(0.0) == "0%"
    assert percent(None) == "-"
