"""A notes folder as an evaluation domain: its questions file, the cached store, the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragbrain.errors import InvalidInputError
from ragbrain.evaluation.notes import (
    Answer,
    Question,
    broad_scores,
    broad_table,
    cached_store_path,
    evaluate_notes,
    identifier_questions,
    is_notes_domain,
    load_questions,
    notes_table,
    ranking,
    ranking_table,
    summarize_answers,
)
from tests.support.fakes import BagOfWordsEmbeddings

NOTES = {
    "db/postgres-vacuum.md": "# Postgres vacuum\n\nRun VACUUM ANALYZE on bloated postgres tables "
    "after a bulk delete; autovacuum lags on large tables.\n",
    "db/redis-eviction.md": "# Redis eviction\n\nSet maxmemory-policy allkeys-lru so redis evicts "
    "the least recently used keys when memory is full.\n",
    "ops/backup.md": "# Nightly backup\n\nThe nightly backup job writes a pg_dump to the bucket; "
    "it failed when the disk filled up.\n",
}
QUESTIONS = {
    "answerable": [
        {
            "q": "postgres vacuum bloated tables",
            "expect": ["db/postgres-vacuum.md"],
            "split": "fit",
        },
        {
            "q": "redis maxmemory eviction policy",
            "expect": ["db/redis-eviction.md"],
            "split": "test",
        },
    ],
    "offtopic": [
        {"q": "zebra giraffe savanna safari", "kind": "general", "split": "test"},
        {"q": "vacuum cleaner for the carpet", "kind": "trap", "split": "fit"},
    ],
    "missing": [
        {
            "q": "postgres logical replication slots",
            "near": "db/postgres-vacuum.md",
            "split": "test",
        }
    ],
    "broad": [
        {
            "q": "what do the notes say about postgres and redis databases",
            "expect": ["db/postgres-vacuum.md", "db/redis-eviction.md"],
            "split": "test",
        }
    ],
}


@pytest.fixture
def domain(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny"
    for relative, text in NOTES.items():
        path = folder / "notes" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (folder / "questions.json").write_text(json.dumps(QUESTIONS), encoding="utf-8")
    return folder


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))


def test_the_questions_file_is_read_per_group_kind_and_split(domain: Path) -> None:
    assert is_notes_domain(domain) and not is_notes_domain(domain / "notes")
    questions = load_questions(domain)
    assert [q.label for q in questions] == [
        "answerable",
        "answerable",
        "offtopic/general",
        "offtopic/trap",
        "missing",
        "broad",
    ]
    assert questions[-1].expect == ("db/postgres-vacuum.md", "db/redis-eviction.md")
    assert questions[0].expect == ("db/postgres-vacuum.md",) and questions[0].split == "fit"
    assert questions[-2].near == "db/postgres-vacuum.md"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("not json", "not a readable JSON"),
        ('{"answerable": [{"q": "x", "split": "fit"}]}', "'expect'"),
        ('{"offtopic": [{"q": "x", "split": "dev"}]}', "split must be"),
        ('{"others": []}', "must be an object"),
        ('{"missing": [{"near": "a.md"}]}', "non-empty 'q'"),
        ('{"broad": [{"q": "x", "expect": []}]}', "'expect'"),
    ],
)
def test_a_bad_questions_file_is_an_error_naming_the_problem(
    tmp_path: Path, content: str, says: str
) -> None:
    (tmp_path / "questions.json").write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=says):
        load_questions(tmp_path)


def test_a_missing_questions_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="missing"):
        load_questions(tmp_path)
    with pytest.raises(InvalidInputError, match="not a notes folder"):
        evaluate_notes(tmp_path, BagOfWordsEmbeddings())


def answer(question: Question, sources: list[str], refused: bool = False) -> Answer:
    return Answer(question, sources, refused, refused or False)


def test_the_summary_counts_found_first_chunks_share_and_refusals() -> None:
    a1 = Question("q1", "answerable", "test", expect=("a.md",))
    a2 = Question("q2", "answerable", "test", expect=("b.md", "c.md"))
    a3 = Question("q3", "answerable", "fit", expect=("a.md",))
    off = Question("o", "offtopic", "test", kind="trap")
    miss = Question("m", "missing", "test", near="a.md")
    answers = [
        answer(a1, ["a.md", "a.md", "x.md", "y.md"]),  # found, first, 2 of 4 from it
        answer(a2, ["x.md", "c.md"]),  # found, not first, 1 of 2
        answer(a3, [], refused=True),
        answer(off, [], refused=True),
        answer(miss, ["a.md"]),
    ]
    summary = summarize_answers(answers)
    test = summary["test"]["answerable"]
    assert test["questions"] == 2 and test["found"] == 1.0 and test["first"] == 0.5
    assert test["chunks"] == 3.0 and test["from_expected"] == pytest.approx(0.5)
    assert summary["fit"]["answerable"]["refused"] == 1.0
    assert summary["all"]["answerable"]["questions"] == 3
    assert summary["test"]["offtopic/trap"]["refused"] == 1.0
    assert summary["test"]["missing"]["refused"] == 0.0
    assert summary["test"]["missing"]["near_returned"] == 1.0
    table = notes_table(summary, "test")
    assert "| answerable | 2 | 100% / 50% | 3.00 | 50% | 0% | 0% |" in table


def test_the_store_is_built_once_and_the_questions_asked(domain: Path, tmp_path: Path) -> None:
    embeddings = BagOfWordsEmbeddings()
    root = tmp_path / "stores"
    first = evaluate_notes(domain, embeddings, store_root=root)
    path = cached_store_path(domain, embeddings.model_name, root)
    assert (path / "ragbrain-eval-complete.json").is_file()
    assert first["chunks"] == 3 and len(first["answers"]) == 6 + len(identifier_questions(domain))
    assert "identifier" in first["summary"]["test"]
    rows = {a["q"]: a for a in first["answers"]}
    found = rows["postgres vacuum bloated tables"]
    assert found["sources"] and "db/postgres-vacuum.md" in found["sources"]
    # Every judged candidate is kept with its score for fitting a hand-over rule.
    assert {c[0] for c in found["candidates"]} <= set(NOTES)
    assert len(found["candidates"]) >= len(found["sources"])
    # A broad question is asked of a plain dense search of the same store as well.
    broad = rows["what do the notes say about postgres and redis databases"]
    assert len(broad["dense"]) == 3 and set(broad["dense"]) == set(NOTES)
    # The retriever hands over several notes for it, both relevant ones among them.
    assert {"db/postgres-vacuum.md", "db/redis-eviction.md"} <= set(broad["sources"])
    assert first["summary"]["test"]["broad"]["recall"] == 1.0
    entry = first["summary"]["test"]["broad"]
    assert entry["dense"]["10"]["recall"] == 1.0 and entry["dense"]["4"]["notes"] == 3.0
    assert "| dense top 10 | 100% | 66.7% | 3.00 | 0% |" in broad_table(first["summary"])
    # Asked again: the cached store is reused, the answers are the same.
    mtime = (path / "ragbrain-eval-complete.json").stat().st_mtime_ns
    again = evaluate_notes(domain, embeddings, store_root=root)
    assert (path / "ragbrain-eval-complete.json").stat().st_mtime_ns == mtime
    assert [a["sources"] for a in again["answers"]] == [a["sources"] for a in first["answers"]]
    # A changed note is another store.
    (domain / "notes" / "ops" / "backup.md").write_text("# Backup\n\nChanged.\n")
    assert cached_store_path(domain, embeddings.model_name, root) != path


def test_an_unfinished_cached_store_is_built_again(domain: Path, tmp_path: Path) -> None:
    embeddings = BagOfWordsEmbeddings()
    root = tmp_path / "stores"
    path = cached_store_path(domain, embeddings.model_name, root)
    path.mkdir(parents=True)
    (path / "leftover").write_text("half-written")
    payload = evaluate_notes(domain, embeddings, store_root=root, probe=False)
    assert not (path / "leftover").exists() and payload["chunks"] == 3
    assert all(a["candidates"] == [] for a in payload["answers"])


def test_identifier_questions_ask_for_a_rare_name_of_a_note_in_each_form(domain: Path) -> None:
    (domain / "notes" / "ops" / "common.md").write_text("use pg_dump; see pg_dump.\n")
    (domain / "notes" / "ops" / "more.md").write_text("pg_dump again, and config_v2.yaml\n")
    assert identifier_questions(domain, 0) == []
    questions = identifier_questions(domain)
    assert questions == identifier_questions(domain)  # the same draw every time
    assert {q.group for q in questions} == {"identifier"}
    assert {q.split for q in questions} == {"test"}
    names = {
        "maxmemory-policy": ("db/redis-eviction.md",),
        "allkeys-lru": ("db/redis-eviction.md",),
        "VACUUM": ("db/postgres-vacuum.md",),
        "ANALYZE": ("db/postgres-vacuum.md",),
        "config_v2.yaml": ("ops/more.md",),
    }
    # One name a note, at most two notes holding it: pg_dump, in three, is never asked.
    assert all("pg_dump" not in q.text for q in questions)
    for n, question in enumerate(questions):
        name = next(k for k in names if k in question.text)
        assert question.expect == names[name]
        form = ("{}", "what is {} for", "how do I use {}", "{} not working")[n % 4]
        assert question.text == form.format(name)
    assert len(identifier_questions(domain, count=1)) == 1


def test_broad_questions_score_recall_over_every_question_and_precision_over_answers() -> None:
    scores = broad_scores(
        [["a.md", "a.md", "b.md", "x.md"], [], ["c.md"]],
        [("a.md", "b.md", "c.md", "d.md"), ("a.md", "b.md"), ("c.md", "d.md")],
    )
    # recall: 2/4, 0 (refused), 1/2; precision: 2/3 notes, 1/1; notes: 3 and 1.
    assert scores["recall"] == pytest.approx((0.5 + 0 + 0.5) / 3, abs=1e-4)
    assert scores["precision"] == pytest.approx((2 / 3 + 1) / 2, abs=1e-4)
    assert scores["notes"] == 2.0 and scores["refused"] == pytest.approx(1 / 3, abs=1e-4)


def test_the_broad_table_puts_ragbrain_beside_dense_top_10_and_top_4() -> None:
    q = Question("b", "broad", "test", expect=("a.md", "b.md", "c.md"))
    dense = ["a.md", "x.md", "y.md", "z.md", "b.md", "c.md", "w.md", "v.md", "u.md", "t.md"]
    a = Answer(q, ["a.md", "b.md"], False, False, dense=dense)
    summary = summarize_answers([a])
    table = broad_table(summary, "test")
    assert "| ragbrain (1 questions) | 66.7% | 100% | 2.00 | 0% |" in table
    assert "| dense top 10 | 100% | 30% | 10.00 | 0% |" in table
    assert "| dense top 4 | 33.3% | 25% | 4.00 | 0% |" in table
    assert broad_table(summary, "fit") == ""


def test_questions_with_a_language_are_reported_per_language_and_ranked_beside_dense() -> None:
    native = Question("q1", "answerable", "test", expect=("a.md",), lang="ja")
    english = Question("q2", "answerable", "test", expect=("b.md",), lang="en")
    off = Question("o", "offtopic", "test", kind="general", lang="en")
    answers = [
        Answer(native, ["a.md", "x.md"], False, False, dense=["x.md", "a.md"]),
        Answer(english, [], True, True, dense=["y.md", "y.md", "b.md"]),
        Answer(off, [], True, True),
    ]
    test = summarize_answers(answers)["test"]
    assert set(test) == {"answerable [ja]", "answerable [en]", "offtopic/general [en]"}
    assert test["answerable [ja]"]["found"] == 1.0 and test["answerable [ja]"]["ndcg"] == 1.0
    assert test["answerable [en]"]["refused"] == 1.0 and test["answerable [en]"]["ndcg"] == 0.0
    # The dense top 10: its notes, each counted at its first chunk (b.md second).
    assert test["answerable [en]"]["dense"]["found"] == 1.0
    assert test["answerable [en]"]["dense"]["ndcg"] == pytest.approx(
        ranking(["y.md", "b.md"], ["b.md"]), abs=1e-4
    )
    assert test["answerable [ja]"]["dense"]["first"] == 0.0
    table = ranking_table({"test": test})
    assert "| answerable [en] | 0% / 0% / 0.000 | 100% / 0% / 0.631 |" in table
    assert "| answerable [ja] | 100% / 100% / 1.000 | 100% / 0% / 0.631 |" in table


def test_ranking_is_ndcg_of_distinct_notes() -> None:
    assert ranking(["a.md", "a.md", "b.md"], ["b.md"]) == pytest.approx(1 / 1.5849625)
    assert ranking([], ["a.md"]) == 0.0
    assert ranking(["a.md", "b.md"], ["a.md", "b.md"]) == pytest.approx(1.0)
