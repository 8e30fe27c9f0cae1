"""Off-topic refusal: the store's cut, the script rule, the trace, the levels, the scenario."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragbrain.context import RetrievalContext
from ragbrain.errors import InvalidInputError
from ragbrain.evaluation.offtopic import (
    Question,
    evaluation_bank,
    judged_queries,
    offtopic_questions,
    offtopic_sources,
    offtopic_stats,
)
from ragbrain.graph import build_graph
from ragbrain.models.embeddings import model_name_of
from ragbrain.models.profiles import ModelProfile, profile
from ragbrain.refusal import offtopic
from ragbrain.refusal.offtopic import OffTopicCut, refusal_reason, script_of
from ragbrain.state import RETRIEVAL_KEY
from ragbrain.store import Store
from tests.support.beir_folders import make_folder
from tests.support.fakes import BagOfWordsEmbeddings, OverlapCritic

MINILM = "all-MiniLM-L6-v2"
E5 = "multilingual-e5-small"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))


class NamedBagOfWords(BagOfWordsEmbeddings):
    """The fake embedding under a real model's name (its shipped cut, its script rule)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.model_name = name


def store_of(
    tmp_path: Path, texts: list[str], embeddings: BagOfWordsEmbeddings, per_source: int = 1
) -> Store:
    """A store of ``texts``, ``per_source`` chunks a note."""
    store = Store.open(tmp_path / "store", embeddings, create=True)
    if texts:
        ids = [f"n{i}" for i in range(len(texts))]
        metadatas = [
            {"source": f"n{i // per_source}.md", "type": "note", "chunk": i % per_source}
            for i in range(len(texts))
        ]
        store.upsert(ids, texts, metadatas, embeddings.embed_documents(texts))
    return store


NOTE_WORDS = [
    "postgres",
    "vacuum",
    "index",
    "backup",
    "replica",
    "kubernetes",
    "helm",
    "rollback",
    "redis",
    "cache",
]


def notes(n: int) -> list[str]:
    return [
        f"{NOTE_WORDS[i % 10]} {NOTE_WORDS[(i * 3 + 1) % 10]} note number {i}" for i in range(n)
    ]


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("How do I vacuum a postgres table?", "latin"),
        ("getUserById", "latin"),
        ("README.md", "latin"),
        ("ทำไมการสำรองข้อมูลล้มเหลว", "thai"),
        ("バックアップが失敗した理由", "cjk"),
        ("为什么备份失败", "cjk"),
        ("لماذا فشل النسخ الاحتياطي", "arabic"),
        ("12345 ?!", "none"),
        ("ab 한국", "latin"),
        ("한국 ab", "hangul"),
        ("Power BI ของรายงานนี้", "thai"),
        ("été 東京", "latin"),
    ],
    ids=[
        *("english", "identifier", "file-name", "thai", "japanese", "chinese", "arabic", "none"),
        *("tie-latin-first", "tie-hangul-first", "most-letters", "accented-latin"),
    ],
)
def test_script_of_names_the_script_most_letters_use(text: str, script: str) -> None:
    assert script_of(text) == script


def cut(model: str = MINILM, scripts: dict[str, float] | None = None) -> OffTopicCut:
    return OffTopicCut(0.5, 0.4, "test cut", model, scripts or {"latin": 1.0})


def test_a_question_farther_than_the_cut_is_refused_with_the_numbers() -> None:
    reason = refusal_reason("capital of Mongolia", 0.6, cut())
    assert reason is not None and reason.startswith("off-topic")
    assert "0.600" in reason and "0.500" in reason and "test cut" in reason
    assert refusal_reason("vacuum a table", 0.45, cut()) is None


def test_the_strict_level_uses_its_lower_cut() -> None:
    assert refusal_reason("vacuum a table", 0.45, cut(), strict=True) is not None
    assert refusal_reason("vacuum a table", 0.35, cut(), strict=True) is None


def test_an_english_only_store_refuses_a_script_its_notes_do_not_use() -> None:
    reason = refusal_reason("ทำไมการสำรองข้อมูลล้มเหลว", 0.1, cut())
    assert reason is not None and "thai script" in reason and "e5-small" in reason
    # Notes in that script: the distance decides, as for any question.
    assert refusal_reason("ทำไมการสำรองข้อมูลล้มเหลว", 0.1, cut(scripts={"thai": 0.6})) is None
    # A multilingual model reads it: no script rule.
    assert refusal_reason("ทำไมการสำรองข้อมูลล้มเหลว", 0.1, cut(model=E5)) is None


def test_nothing_found_is_said_as_such() -> None:
    assert refusal_reason("anything", None, cut()) == "the search found no chunk to judge"


@pytest.mark.parametrize("size", [0, 1, 3, 10], ids=["empty", "one", "three", "ten"])
def test_a_store_too_small_to_calibrate_gets_the_shipped_cut_and_says_so(
    tmp_path: Path, size: int
) -> None:
    store = store_of(tmp_path, notes(size), NamedBagOfWords(MINILM))
    got = offtopic.calibrate(store)
    assert got is not None
    assert got.distance == profile(MINILM).offtopic.cut
    assert got.strict == pytest.approx(got.distance * offtopic.levels(MINILM)[1], abs=1e-4)
    assert "too few to calibrate" in got.source and f"holds {size} chunks" in got.source


def test_a_small_store_of_an_unknown_model_has_no_cut(tmp_path: Path) -> None:
    assert offtopic.calibrate(store_of(tmp_path, notes(5), BagOfWordsEmbeddings())) is None


def test_calibration_is_a_quantile_of_the_banks_nearest_distances(tmp_path: Path) -> None:
    embeddings = BagOfWordsEmbeddings()
    texts = notes(40)
    store = store_of(tmp_path, texts, embeddings)
    got = offtopic.calibrate(store)
    assert got is not None and got.chunks == 40 and "calibrated on 360" in got.source
    # Brute force: each bank question's nearest note by cosine over the same vectors.
    bank = np.array([embeddings.embed_query(q) for q in offtopic.bank()])
    vectors = np.array(embeddings.embed_documents(texts))
    nearest = 1.0 - (bank @ vectors.T).max(axis=1)
    expected = float(np.quantile(nearest, offtopic.levels("bag-of-words-64")[0]))
    assert got.distance == pytest.approx(expected, abs=1e-3)
    assert got.strict <= got.distance
    # Calibration never refuses the store's own notes.
    assert all(refusal_reason(t, 0.0, got) is None for t in texts)
    assert got.scripts == {"latin": 1.0}


def test_an_english_only_model_calibrates_on_the_english_questions(tmp_path: Path) -> None:
    store = store_of(tmp_path, notes(30), NamedBagOfWords(MINILM))
    got = offtopic.calibrate(store)
    assert got is not None
    english = sum(json.loads(line)["lang"] == "en" for line in offtopic.BANK.open())
    assert f"calibrated on {english} general" in got.source


def test_the_cut_is_recorded_reused_and_learnt_again_when_the_store_grows(
    tmp_path: Path,
) -> None:
    embeddings = BagOfWordsEmbeddings()
    store = store_of(tmp_path, notes(30), embeddings)
    first = offtopic.store_cut(store)
    assert first is not None and store.offtopic_record() == first.to_json()
    assert OffTopicCut.from_json(first.to_json()) == first
    assert offtopic.store_cut(store) == first  # reused while the store keeps its size
    more = notes(60)[30:]
    ids = [f"m{i}" for i in range(len(more))]
    metadatas = [{"source": f"m{i}.md", "type": "note", "chunk": 0} for i in range(len(more))]
    store.upsert(ids, more, metadatas, embeddings.embed_documents(more))
    again = offtopic.store_cut(store)
    assert again is not None and again.chunks == 60


def test_ingest_records_the_cut(tmp_path: Path, write_notes: object) -> None:
    from ragbrain.ingest import ingest

    folder = tmp_path / "notes"
    folder.mkdir()
    for i, text in enumerate(notes(25)):
        (folder / f"n{i}.md").write_text(text, encoding="utf-8")
    store = Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)
    ingest(folder, store)
    record = store.offtopic_record()
    assert record is not None
    got = OffTopicCut.from_json(record)
    assert got is not None and got.chunks == 25


def run(
    store: Store,
    query: str,
    level: str,
    critic: object | None = None,
    cut: OffTopicCut | None = None,
) -> dict[str, object]:
    cut = cut or OffTopicCut(0.5, 0.3, "test cut", "fake")
    graph = build_graph(store, critic, offtopic=cut)  # type: ignore[arg-type]
    return graph.invoke(
        {"query": query, "type_filter": None},
        context=RetrievalContext(abstain=level, gate_threshold=0.5),  # type: ignore[arg-type]
    )


def test_an_off_topic_question_gets_an_empty_answer_and_a_reason(fake_store: Store) -> None:
    out = run(fake_store, "sourdough bread recipe with rye flour", "on")
    assert out["documents"] == [] and out["answerable"] is False
    reason = str(out["abstain_reason"])
    assert reason.startswith("off-topic") and "test cut" in reason
    assert reason in out["notes"][-1]  # type: ignore[index]


def test_the_off_switch_hands_over_the_chunks(fake_store: Store) -> None:
    out = run(fake_store, "sourdough bread recipe with rye flour", "off")
    assert out["documents"] and out["answerable"] is True and out["abstain_reason"] is None


def test_an_on_topic_question_is_answered_and_the_trace_says_why(fake_store: Store) -> None:
    out = run(fake_store, "nightly backup s3 credentials expired", "on")
    assert out["documents"] and out["answerable"] is True
    assert "on topic: nearest distance" in out["notes"][-1]  # type: ignore[index]
    for doc in out["documents"]:  # type: ignore[attr-defined]
        assert RETRIEVAL_KEY in doc.metadata


def test_the_strict_level_refuses_what_only_its_lower_cut_catches(fake_store: Store) -> None:
    query = "nightly backup rotation policy for the archive"
    nearest = float(run(fake_store, query, "off")["nearest_distance"])  # type: ignore[arg-type]
    cut = OffTopicCut(nearest + 0.05, nearest - 0.05, "test cut", "fake")
    on = run(fake_store, query, "on", OverlapCritic(), cut)
    strict = run(fake_store, query, "strict", OverlapCritic(), cut)
    assert on["answerable"] is True and on["documents"]
    assert strict["answerable"] is False and "strict cut" in str(strict["abstain_reason"])
    assert strict["documents"] == []


@pytest.mark.parametrize(
    ("given", "level"), [(True, "strict"), (False, "off"), ("on", "on"), ("strict", "strict")]
)
def test_the_context_reads_levels_and_bools(given: object, level: str) -> None:
    assert RetrievalContext(abstain=given).abstain == level  # type: ignore[arg-type]


def test_the_context_refuses_an_unknown_level() -> None:
    with pytest.raises(InvalidInputError, match="abstain must be one of off, on, strict"):
        RetrievalContext(abstain="sometimes")  # type: ignore[arg-type]


def test_related_sets_are_never_each_others_off_topic_questions() -> None:
    names = ["cmrc2018_ret", "cosqa", "drcd_ret", "nfcorpus", "scifact"]
    assert offtopic_sources("scifact", names) == ["cmrc2018_ret", "cosqa", "drcd_ret"]
    assert "cmrc2018_ret" not in offtopic_sources("drcd_ret", names)
    assert offtopic_sources("cosqa", names) == ["cmrc2018_ret", "drcd_ret", "nfcorpus", "scifact"]


def test_the_scenario_samples_each_set_and_adds_the_evaluation_bank() -> None:
    queries = {"scifact": {f"s{i}": f"claim {i}" for i in range(10)}, "cosqa": {"c1": "sort"}}
    questions = offtopic_questions("nfcorpus", queries, per_set=4, seed=1)
    origins = [q.origin for q in questions]
    assert origins.count("scifact") == 0  # related to nfcorpus
    assert origins.count("cosqa") == 1 and origins.count("bank") == len(evaluation_bank())
    again = offtopic_questions("arcd_ret", queries, per_set=4, seed=1)
    assert [q.origin for q in again].count("scifact") == 4
    assert again == offtopic_questions("arcd_ret", queries, per_set=4, seed=1)


def test_the_evaluation_bank_is_apart_from_the_calibration_bank() -> None:
    bank = evaluation_bank()
    assert len(bank) >= 200
    assert {q["lang"] for q in bank} >= {"en", "ja", "th", "zh-Hans", "zh-Hant", "ar"}
    assert not {q["text"] for q in bank} & set(offtopic.bank())


def test_offtopic_stats_counts_refusals_by_origin() -> None:
    a, b, c = Question("1", "x", "bank"), Question("2", "y", "bank"), Question("3", "z", "cosqa")
    stats = offtopic_stats({a: True, b: False, c: True}, {"q1": False, "q2": True})
    assert stats.refused == pytest.approx(2 / 3)
    assert stats.refused_by_origin == {"bank": 0.5, "cosqa": 1.0}
    assert stats.false_refusal == 0.5 and (stats.offtopic, stats.answerable) == (3, 2)


def test_test_queries_reads_only_the_judged_queries(tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "set")
    assert sorted(judged_queries(folder)) == ["q1", "q2", "q3", "q4"]


def test_lexical_support_weighs_rare_words_and_counts_unseen_ones_as_rarest(
    fake_store: Store,
) -> None:
    from ragbrain.lexical.support import lexical_support
    from ragbrain.store.lexical import sync_lexical

    index = sync_lexical(fake_store)
    query = "nightly backup credentials"
    hits = [h.id for h in index.search(query, 10)]
    full = lexical_support(index, query, hits)
    assert full is not None and full > 0.9  # one note holds every word
    # A word no note holds weighs as the rarest: it takes most of the share away.
    diluted = lexical_support(index, f"{query} mongolia", hits)
    assert diluted is not None and diluted < full * 0.8
    assert lexical_support(index, "zebra mongolia", []) == 0.0
    assert lexical_support(index, "?!", hits) is None


def test_the_words_that_make_a_question_do_not_count_against_its_support(
    fake_store: Store,
) -> None:
    """Notes that never write "what" or "how" would otherwise count them among the question's
    rarest words: asked about a name they use, the question held too little of itself."""
    from ragbrain.lexical.support import lexical_support
    from ragbrain.store.lexical import sync_lexical

    index = sync_lexical(fake_store)
    bare = "backup credentials"
    hits = [h.id for h in index.search(bare, 10)]
    alone = lexical_support(index, bare, hits)
    assert alone is not None and alone > 0.9
    for asked in (f"what are the {bare} for", f"where do we have our {bare}", f"why {bare}?"):
        held = lexical_support(index, asked, [h.id for h in index.search(asked, 10)])
        assert held == pytest.approx(alone), asked
    # A content word the notes lack still counts.
    missing = lexical_support(index, f"what are the {bare} for mongolia", hits)
    assert missing is not None and missing < alone * 0.8
    assert lexical_support(index, "what is it", hits) is None  # nothing but question words


def test_a_compound_question_is_supported_whole_or_in_every_part() -> None:
    from ragbrain.lexical.support import question_support

    assert question_support(0.4) == 0.4  # a simple question: its own
    assert question_support(0.3, [1.0, 0.0]) == 0.3  # one part held: not the question
    assert question_support(0.3, [0.9, 0.8]) == 0.8  # every part held, in different notes
    assert question_support(0.9, [1.0, 0.0]) == 0.9  # one chunk holds the whole
    assert question_support(None, [0.7, None]) is None  # a part without terms
    assert question_support(None) is None


def test_one_part_of_a_compound_question_does_not_rescue_it(fake_store: Store) -> None:
    """ "X vs Y" where the notes hold X only: the parts are searched, but refusal's support
    is the whole question's, or what every part finds."""
    from ragbrain.store.lexical import LexicalSearcher

    query = "nightly backup vs sourdough rye bread"
    probe = run(fake_store, query, "off")
    nearest = float(probe["nearest_distance"])  # type: ignore[arg-type]
    cut = OffTopicCut(nearest - 0.05, nearest - 0.1, "test cut", "fake", support=0.6)
    graph = build_graph(fake_store, offtopic=cut, lexical=LexicalSearcher(fake_store))
    out = graph.invoke(
        {"query": query, "type_filter": None}, context=RetrievalContext(gate_threshold=0.5)
    )
    assert any("compound question" in note for note in out["notes"]), out["notes"]
    assert out["documents"] == [] and str(out["abstain_reason"]).startswith("off-topic")
    assert float(out["lexical_support"]) < 0.6  # type: ignore[arg-type]
    # The part the notes hold, asked alone, is answered by its rare words.
    alone = graph.invoke(
        {"query": "nightly backup", "type_filter": None},
        context=RetrievalContext(gate_threshold=0.5),
    )
    assert float(alone["lexical_support"]) >= 0.6  # type: ignore[arg-type]


def test_a_far_question_whose_rare_words_one_chunk_holds_is_answered() -> None:
    cut = OffTopicCut(0.5, 0.4, "test cut", MINILM, {"latin": 1.0}, support=0.6)
    assert refusal_reason("breast cancer", 0.7, cut, support=0.9) is None
    reason = refusal_reason("breast cancer", 0.7, cut, support=0.3)
    assert reason is not None and "rare words (0.30)" in reason
    assert refusal_reason("breast cancer", 0.7, cut) is not None  # no lexical search: no rescue


def test_a_type_filter_does_not_make_an_answerable_question_off_topic(fake_store: Store) -> None:
    """The filtered first search finds only far chunks; the type-free fallback finds the
    note: refusal reads the nearest chunk of every search the run made."""
    query = "nightly backup s3 credentials expired"
    unfiltered = run(fake_store, query, "off")
    nearest = float(unfiltered["nearest_distance"])  # type: ignore[arg-type]
    cut = OffTopicCut(nearest + 0.05, nearest, "test cut", "fake")
    graph = build_graph(fake_store, offtopic=cut)
    out = graph.invoke(
        {"query": query, "type_filter": ["decision"]},
        context=RetrievalContext(gate_threshold=nearest + 0.01),
    )
    assert out["fallback"] is True and out["answerable"] is True and out["documents"]
    assert out["nearest_distance"] == pytest.approx(nearest, abs=1e-6)


def test_a_multilingual_store_is_measured_across_scripts(tmp_path: Path) -> None:
    """Notes in two scripts: the cut is how close the bank's questions come to the notes in a
    script other than their own (a question finds a note in another script from farther)."""
    embeddings = BagOfWordsEmbeddings()
    thai = [f"บันทึก การสำรองข้อมูล ฐานข้อมูล หมายเลข {i}" for i in range(15)]
    texts = notes(15) + thai
    store = store_of(tmp_path, texts, embeddings)
    got = offtopic.calibrate(store)
    assert got is not None and "in 2 scripts, measured across scripts" in got.source
    questions = offtopic.bank()
    bank = np.array([embeddings.embed_query(q) for q in questions])
    vectors = np.array(embeddings.embed_documents(texts))
    distance = 1.0 - bank @ vectors.T
    other = (
        np.array([script_of(t) for t in texts])[None, :]
        != np.array([script_of(q) for q in questions])[:, None]
    )
    nearest = np.where(other, distance, np.inf).min(axis=1)
    expected = float(np.quantile(nearest[np.isfinite(nearest)], offtopic.levels("x")[0]))
    assert got.distance == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize(
    "query", ["kubernetes", "pg_stat_statements", "restore_database()"], ids=str
)
def test_a_one_word_or_identifier_question_the_notes_hold_is_answered(
    tmp_path: Path, query: str
) -> None:
    """A bare word or a code identifier that a note holds is answered (near enough, or
    rescued by the chunk holding its rare words); a word no note holds is refused."""
    from ragbrain.retriever import CorrectiveRetriever

    folder = tmp_path / "notes"
    folder.mkdir()
    for i, text in enumerate(notes(24)):
        (folder / f"n{i}.md").write_text(text, encoding="utf-8")
    (folder / "ops.md").write_text(
        "Slow queries: read pg_stat_statements, then call restore_database() on the replica.",
        encoding="utf-8",
    )
    from ragbrain.ingest import ingest

    ingest(folder, Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True))
    retriever = CorrectiveRetriever.from_store(
        tmp_path / "store", embeddings=BagOfWordsEmbeddings(), critic=None
    )
    out = retriever.run(query)
    assert out["answerable"] is True and out["documents"], out["notes"]
    assert "on topic: nearest distance" in out["notes"][-1]
    unknown = retriever.run("zanzibar")  # a word no note holds, far from every note
    assert unknown["answerable"] is False and "off-topic" in str(unknown["abstain_reason"])


def test_a_question_in_a_script_the_notes_do_not_use_gets_the_cut_across_scripts() -> None:
    """On a multilingual model's store of Thai notes, an English question finds its note only
    from farther away: it is judged against the cut learnt from the bank's questions in other
    scripts, a Thai question against the store-wide one."""
    thai = OffTopicCut(0.2, 0.16, "test cut", E5, {"thai": 1.0}, across=0.3)
    assert refusal_reason("Who directed Bad Boys II?", 0.25, thai) is None
    reason = refusal_reason("Who directed Bad Boys II?", 0.35, thai)
    assert reason is not None and "for a question in latin script" in reason and "0.300" in reason
    assert refusal_reason("แบดบอยส์ คู่หูขวางนรก 2 กำกับโดยใคร", 0.25, thai) is not None
    # Across scripts the distance cannot tell a missing answer: the strict level keeps the cut.
    assert offtopic.limit_for("Who directed it?", thai, strict=True) == (0.3, True)
    assert offtopic.limit_for("ใครกำกับ", thai, strict=True) == (0.16, False)
    # A record without the field (an older store) keeps the store-wide cut for every script.
    old = OffTopicCut.from_json(
        json.dumps({k: v for k, v in json.loads(thai.to_json()).items() if k != "across"})
    )
    assert old is not None and old.across is None
    assert refusal_reason("Who directed Bad Boys II?", 0.25, old) is not None
    assert OffTopicCut.from_json(thai.to_json()) == thai


def test_a_one_script_store_of_a_multilingual_model_learns_a_cut_across_scripts(
    tmp_path: Path,
) -> None:
    embeddings = BagOfWordsEmbeddings()  # reads every script, as multilingual-e5-small does
    store = store_of(tmp_path, notes(40), embeddings)
    got = offtopic.calibrate(store)
    assert got is not None and got.across is not None and got.across >= got.distance
    questions = offtopic.bank()
    bank = np.array([embeddings.embed_query(q) for q in questions])
    vectors = np.array(embeddings.embed_documents(notes(40)))
    nearest = 1.0 - (bank @ vectors.T).max(axis=1)
    foreign = [d for q, d in zip(questions, nearest, strict=True) if script_of(q) != "latin"]
    setting = offtopic.across_of(model_name_of(embeddings))
    assert setting is not None and setting.cut == 0.0  # a model without a profile: no shipped cut
    assert got.across == pytest.approx(
        max(float(np.quantile(foreign, setting.level)), got.distance), abs=1e-3
    )
    # An English-only model never gets one: other scripts are refused by script.
    english = offtopic.calibrate(store_of(tmp_path / "en", notes(40), NamedBagOfWords(MINILM)))
    assert english is not None and english.across is None


def test_a_multilingual_profile_without_a_cut_across_scripts_means_the_store_wide_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    e5 = profile(E5)
    assert e5 is not None and e5.offtopic.across is not None
    without = replace(e5, offtopic=replace(e5.offtopic, across=None))
    monkeypatch.setattr(offtopic, "profile", lambda model: without if model == E5 else None)
    thai = [f"บันทึก การสำรองข้อมูล ฐานข้อมูล หมายเลข {i}" for i in range(30)]
    got = offtopic.calibrate(store_of(tmp_path, thai, NamedBagOfWords(E5)))
    assert got is not None and got.across is None and got.margin is None


@pytest.mark.parametrize(
    "across",
    [{"level": 3, "margin": 0.1, "cut": 0.2, "by": "x"}, {"level": 0.9, "cut": 0.2, "by": "x"}],
)
def test_a_malformed_cut_across_scripts_in_a_profile_is_an_error(across: dict[str, Any]) -> None:
    e5 = profile(E5)
    assert e5 is not None
    raw = json.loads(e5.to_json())
    raw["offtopic"]["across"] = across
    with pytest.raises(InvalidInputError, match=r"multilingual-e5-small\.json is malformed"):
        ModelProfile.from_json(raw, "multilingual-e5-small.json")
    assert ModelProfile.from_json(json.loads(e5.to_json()), "e5") == e5


def test_a_small_one_script_store_of_a_multilingual_model_gets_the_shipped_cut_across(
    tmp_path: Path,
) -> None:
    setting = offtopic.across_of(E5)
    assert setting is not None and setting.cut > 0
    thai = [f"บันทึก การสำรองข้อมูล หมายเลข {i}" for i in range(5)]
    got = offtopic.calibrate(store_of(tmp_path, thai, NamedBagOfWords(E5)))
    assert got is not None and got.across == setting.cut and got.scripts == {"thai": 1.0}
    assert "too few to calibrate" in got.source
    limit, across = offtopic.limit_for("Why did the backup fail?", got)
    assert across and limit == setting.cut


def test_a_question_across_scripts_closer_to_a_general_question_than_to_the_notes_is_refused() -> (
    None
):
    thai = OffTopicCut(0.2, 0.16, "test cut", E5, {"thai": 1.0}, across=0.3, margin=0.05)
    # Past the store-wide cut, within the cut across scripts: the margin decides.
    reason = refusal_reason("How do I bake bread?", 0.25, thai, general=0.15)
    assert reason is not None and "closer to a general question (0.150)" in reason
    assert refusal_reason("Who directed Bad Boys II?", 0.25, thai, general=0.22) is None
    # Not measured, within the store-wide cut, or a question in the notes' script: no say.
    assert refusal_reason("How do I bake bread?", 0.25, thai) is None
    assert refusal_reason("How do I bake bread?", 0.18, thai, general=0.05) is None
    assert refusal_reason("ทำขนมปังอย่างไร", 0.18, thai, general=0.05) is None
    assert OffTopicCut.from_json(thai.to_json()) == thai


def test_the_graph_measures_the_general_distance_only_across_scripts(tmp_path: Path) -> None:
    embeddings = NamedBagOfWords(E5)
    thai = [f"บันทึก การสำรองข้อมูล ฐานข้อมูล หมายเลข {i}" for i in range(30)]
    store = store_of(tmp_path, thai, embeddings)
    got = offtopic.store_cut(store)
    setting = offtopic.across_of(E5)
    assert got is not None and setting is not None
    assert got.across is not None and got.margin == setting.margin
    distance = offtopic.general_distance(store)
    # A question of the bank itself is at distance 0 from it.
    assert distance(offtopic.bank()[0]) == pytest.approx(0.0, abs=1e-5)
    graph = build_graph(store, OverlapCritic())
    run = graph.invoke(
        {"query": offtopic.bank()[0], "type_filter": None}, context=RetrievalContext()
    )
    assert run["answerable"] is False


def test_prose_share_counts_english_function_words() -> None:
    assert offtopic.prose_share(["The backup of the database failed in the night."]) > 0.3
    assert offtopic.prose_share(["backup database failed night disk full"]) == 0.0
    assert offtopic.prose_share(["บันทึก การสำรองข้อมูล"]) == 0.0


def test_a_store_of_notes_takes_the_prose_quantile_and_other_stores_the_shipped_one(
    tmp_path: Path,
) -> None:
    found = profile(MINILM)
    assert found is not None and found.offtopic.prose_level is not None
    embeddings = NamedBagOfWords(MINILM)
    prose = [
        f"The {w} of the note is in the folder and it is {i}" for i, w in enumerate(NOTE_WORDS * 3)
    ]
    got = offtopic.calibrate(store_of(tmp_path / "a", prose, embeddings, per_source=3))
    assert got is not None and got.prose >= offtopic.PROSE_SHARE and got.per_source == 3.0
    assert got.level == found.offtopic.prose_level and "store of notes" in got.source
    # Text stripped of function words, or prose one chunk a document (passages): the level.
    stripped = offtopic.calibrate(store_of(tmp_path / "b", notes(30), embeddings, per_source=3))
    assert stripped is not None and stripped.prose < offtopic.PROSE_SHARE
    assert stripped.level == offtopic.levels(MINILM)[0]
    passages = offtopic.calibrate(store_of(tmp_path / "c", prose, embeddings))
    assert passages is not None and passages.per_source == 1.0
    assert passages.level == offtopic.levels(MINILM)[0] and "store of notes" not in passages.source


def test_a_model_without_a_prose_quantile_keeps_its_level_on_a_store_of_prose(
    tmp_path: Path,
) -> None:
    found = profile(E5)
    assert found is not None and found.offtopic.prose_level is None
    prose = [
        f"The {w} of the note is in the folder and it is {i}" for i, w in enumerate(NOTE_WORDS * 3)
    ]
    got = offtopic.calibrate(store_of(tmp_path, prose, NamedBagOfWords(E5), per_source=3))
    assert got is not None and got.prose >= offtopic.PROSE_SHARE
    assert got.level == offtopic.levels(E5)[0] and "store of notes" not in got.source


PROSE = [
    f"The {w} of the note is in the folder and it is {i}" for i, w in enumerate(NOTE_WORDS * 3)
]


def with_offtopic(monkeypatch: pytest.MonkeyPatch, **values: Any) -> None:
    """MiniLM's profile with other shipped off-topic values."""
    minilm = profile(MINILM)
    assert minilm is not None
    changed = replace(minilm, offtopic=replace(minilm.offtopic, **values))
    monkeypatch.setattr(offtopic, "profile", lambda model: changed if model == MINILM else None)


def test_a_store_of_notes_holds_its_cut_to_the_models_notes_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_offtopic(monkeypatch, notes_cap=0.05)
    embeddings = NamedBagOfWords(MINILM)
    got = offtopic.calibrate(store_of(tmp_path / "notes", PROSE, embeddings, per_source=3))
    assert got is not None and got.per_source >= offtopic.NOTES_SPAN
    assert got.distance == 0.05 and "notes cap 0.05" in got.source
    assert got.strict == round(0.05 * offtopic.levels(MINILM)[1], 4)
    # One chunk a note (a collection of passages), or text that is not prose: no cap.
    passages = offtopic.calibrate(store_of(tmp_path / "passages", PROSE, embeddings))
    assert passages is not None and passages.distance > 0.05
    assert "notes cap" not in passages.source
    stripped = offtopic.calibrate(store_of(tmp_path / "ids", notes(30), embeddings, per_source=3))
    assert stripped is not None and stripped.distance > 0.05


def test_a_cap_above_the_banks_cut_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embeddings = NamedBagOfWords(MINILM)
    with_offtopic(monkeypatch, notes_cap=None)
    free = offtopic.calibrate(store_of(tmp_path / "a", PROSE, embeddings, per_source=3))
    with_offtopic(monkeypatch, notes_cap=2.0)
    loose = offtopic.calibrate(store_of(tmp_path / "b", PROSE, embeddings, per_source=3))
    assert free is not None and loose is not None and loose.distance == free.distance


def test_a_cut_recorded_under_other_shipped_values_is_learnt_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_of(tmp_path, notes(30), NamedBagOfWords(MINILM))
    first = offtopic.store_cut(store)
    assert first is not None and first.rules == offtopic.shipped_rules(MINILM) != ""
    assert offtopic.store_cut(store) == first
    with_offtopic(monkeypatch, level=0.5)
    again = offtopic.store_cut(store)
    assert again is not None and again.rules != first.rules and again.level == 0.5
    assert store.offtopic_record() == again.to_json()
    # A record from before the fingerprint (no "rules") is learnt again too.
    old = json.loads(first.to_json())
    del old["rules"]
    assert OffTopicCut.from_json(json.dumps(old)) == replace(first, rules="")


@pytest.mark.parametrize("cap", [0.0, -0.1, 2.5])
def test_a_notes_cap_out_of_range_in_a_profile_is_an_error(cap: float) -> None:
    minilm = profile(MINILM)
    assert minilm is not None
    raw = json.loads(minilm.to_json())
    raw["offtopic"]["notes_cap"] = cap
    with pytest.raises(InvalidInputError, match=r"all-minilm-l6-v2\.json is malformed"):
        ModelProfile.from_json(raw, "all-minilm-l6-v2.json")
    del raw["offtopic"]["notes_cap"]  # a profile file from before the cap: no cap
    assert ModelProfile.from_json(raw, "x").offtopic.notes_cap is None


def test_a_store_of_notes_in_two_scripts_judges_each_question_by_its_own_scripts_cut(
    tmp_path: Path,
) -> None:
    """Japanese notes with English code (a multilingual model's store in two scripts): the
    store-wide cut is measured across scripts; a question gets the cut of the bank's
    questions written in its own script, a script the bank hardly has keeps the store-wide."""
    embeddings = NamedBagOfWords(E5)
    japanese = [f"型の推論 ジェネリクス 引数 の 説明 その{i}" for i in range(20)]
    code = [f"const value{i} = identity<string>(input) function generic type" for i in range(20)]
    got = offtopic.calibrate(store_of(tmp_path, japanese + code, embeddings))
    assert got is not None and set(got.scripts) >= {"cjk", "latin"} and got.across is None
    questions = offtopic.bank()
    nearest = offtopic.nearest_distances(
        store_of(tmp_path / "again", japanese + code, embeddings),
        offtopic.query_vectors(embeddings, questions, E5),
    )
    expected = offtopic.script_cuts(questions, nearest, got.level, ["cjk", "latin"], got.distance)
    assert got.by_script == expected and set(expected) == {"cjk", "latin"}
    cjk = [d for q, d in zip(questions, nearest, strict=True) if script_of(q) == "cjk"]
    assert expected["cjk"] == pytest.approx(offtopic.quantile(cjk, got.level), abs=1e-4)
    assert expected["latin"] >= got.distance  # an English question: never tighter
    # Notes in two languages besides English: a question is meant to find the other's notes.
    assert offtopic.script_cuts(questions, nearest, 0.02, ["cjk", "thai", "latin"], 0.1) == {}
    assert offtopic.script_cuts(questions, nearest, 0.02, ["cjk"], 0.1) == {}
    assert "per script of the question" in got.source
    # Each question is judged by its script's cut, at both levels; others by the store-wide.
    assert offtopic.limit_for("型の推論とは", got) == (got.by_script["cjk"], False)
    strict = round(got.by_script["latin"] * got.strict / got.distance, 4)
    assert offtopic.limit_for("what is type inference", got, strict=True) == (strict, False)
    assert offtopic.limit_for("Что такое вывод типов", got) == (got.distance, False)
    assert offtopic.limit_for("การอนุมานชนิดคืออะไร", got) == (got.distance, False)
    over = got.by_script["cjk"] + 0.01
    reason = refusal_reason("糠漬けの作り方", over, got)
    assert reason is not None and "for a question in cjk script" in reason
    assert OffTopicCut.from_json(got.to_json()) == got


def test_a_one_script_store_has_no_cut_per_script(tmp_path: Path) -> None:
    thai = [f"บันทึก การสำรองข้อมูล ฐานข้อมูล หมายเลข {i}" for i in range(30)]
    got = offtopic.calibrate(store_of(tmp_path, thai, NamedBagOfWords(E5)))
    assert got is not None and got.by_script == {} and got.across is not None
    english = offtopic.calibrate(store_of(tmp_path / "en", notes(40), NamedBagOfWords(MINILM)))
    assert english is not None and english.by_script == {}


def test_an_english_question_about_japanese_notes_with_code_is_answered_by_its_scripts_cut() -> (
    None
):
    """Japanese notes with English code: the store-wide cut (measured across scripts) is
    tighter than how far an English question about the notes comes, looser than how near a
    Japanese general question comes; each script's own cut answers the first, refuses the
    second."""
    cut = OffTopicCut(
        0.146,
        0.13,
        "test cut",
        E5,
        {"cjk": 0.45, "latin": 0.55},
        by_script={"latin": 0.152, "cjk": 0.143},
    )
    assert refusal_reason("narrow a union type with a type guard", 0.150, cut) is None
    reason = refusal_reason("ぬか漬けのぬか床が酸っぱくなりすぎたときの対処法", 0.145, cut)
    assert reason is not None and "(0.143, test cut)" in reason
    without = replace(cut, by_script={})
    assert refusal_reason("narrow a union type with a type guard", 0.150, without) is not None
    assert (
        refusal_reason("ぬか漬けのぬか床が酸っぱくなりすぎたときの対処法", 0.145, without) is None
    )


def with_e5_offtopic(monkeypatch: pytest.MonkeyPatch, **values: Any) -> None:
    """multilingual-e5-small's profile with other shipped off-topic values."""
    e5 = profile(E5)
    assert e5 is not None
    changed = replace(e5, offtopic=replace(e5.offtopic, **values))
    real = offtopic.profile
    monkeypatch.setattr(offtopic, "profile", lambda model: changed if model == E5 else real(model))


JAPANESE_NOTES = [f"型の推論 ジェネリクス 引数 の 説明 その{i}" for i in range(20)]
CODE = [f"const value{i} = identity<string>(input) function generic type" for i in range(20)]


def test_notes_in_a_script_without_english_function_words_read_as_notes() -> None:
    assert offtopic.reads_as_notes(0.0, 3.0, {"thai": 0.9, "latin": 0.1})
    assert offtopic.reads_as_notes(0.2, 3.0)  # English prose
    assert not offtopic.reads_as_notes(0.0, 3.0, {"latin": 0.98, "none": 0.02})
    assert not offtopic.reads_as_notes(0.0, 3.0, {"latin": 0.97, "thai": 0.03})
    assert not offtopic.reads_as_notes(0.0, 1.0, {"thai": 1.0})  # one chunk a passage
    assert not offtopic.reads_as_notes(0.0, 3.0)  # no scripts given: function words alone


def test_a_store_of_notes_in_two_scripts_holds_its_own_scripts_cut_to_the_notes_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Japanese notes with English code, three chunks a note, under a cap tighter than the
    bank's Japanese cut: the cap holds the Japanese cut at both levels; English questions
    about the notes keep the Latin cut, a question in a third script the store-wide one."""
    embeddings = NamedBagOfWords(E5)
    texts = JAPANESE_NOTES + CODE
    with_e5_offtopic(monkeypatch, notes_cap=None)
    free = offtopic.calibrate(store_of(tmp_path / "a", texts, embeddings, per_source=3))
    assert free is not None and set(free.by_script) == {"cjk", "latin"}
    assert free.prose < offtopic.PROSE_SHARE  # notes by their script, not by English words
    cap = round(free.by_script["cjk"] - 0.01, 4)
    with_e5_offtopic(monkeypatch, notes_cap=cap)
    got = offtopic.calibrate(store_of(tmp_path / "b", texts, embeddings, per_source=3))
    assert got is not None and got.by_script == {**free.by_script, "cjk": cap}
    assert got.distance == free.distance and f"cjk cut held to the notes cap {cap}" in got.source
    strict = round(cap * got.strict / got.distance, 4)
    assert offtopic.limit_for("型の推論とは", got, strict=True) == (strict, False)
    assert offtopic.limit_for("what is type inference", got)[0] == free.by_script["latin"]
    assert offtopic.limit_for("การอนุมานชนิดคืออะไร", got)[0] == free.distance
    reason = refusal_reason("糠漬けの作り方", cap + 0.005, got)
    assert reason is not None and f"({cap:.3f}," in reason
    # Uncapped on request (to fit the cap on), and on a collection of one-chunk passages.
    uncapped = offtopic.calibrate(
        store_of(tmp_path / "c", texts, embeddings, per_source=3), capped=False
    )
    assert uncapped is not None and uncapped.by_script == free.by_script
    passages = offtopic.calibrate(store_of(tmp_path / "d", texts, embeddings))
    assert passages is not None and passages.by_script == free.by_script


def test_a_multilingual_store_of_notes_in_one_script_keeps_its_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thai notes alone: no cut of their own script beside Latin, so no cap holds the
    store-wide cut (measured on passages in one script, it refused questions they answer)."""
    embeddings = NamedBagOfWords(E5)
    thai = [f"บันทึก การสำรองข้อมูล ฐานข้อมูล หมายเลข {i}" for i in range(30)]
    with_e5_offtopic(monkeypatch, notes_cap=None)
    free = offtopic.calibrate(store_of(tmp_path / "a", thai, embeddings, per_source=3))
    assert free is not None and free.by_script == {} and free.across is not None
    with_e5_offtopic(monkeypatch, notes_cap=round(free.distance - 0.01, 4))
    got = offtopic.calibrate(store_of(tmp_path / "b", thai, embeddings, per_source=3))
    assert got is not None and got.distance == free.distance and "notes cap" not in got.source


def test_a_store_of_notes_in_several_languages_keeps_its_cut_across_scripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Notes in Japanese, Thai and English: the store-wide cut is measured across scripts
    and is every question's (a question is meant to find another language's notes), so no
    notes cap holds it."""
    embeddings = NamedBagOfWords(E5)
    thai = [f"บันทึก การสำรองข้อมูล ฐานข้อมูล หมายเลข {i}" for i in range(20)]
    texts = JAPANESE_NOTES + thai + CODE
    with_e5_offtopic(monkeypatch, notes_cap=None)
    free = offtopic.calibrate(store_of(tmp_path / "a", texts, embeddings, per_source=3))
    assert free is not None and free.by_script == {}
    with_e5_offtopic(monkeypatch, notes_cap=round(free.distance - 0.01, 4))
    got = offtopic.calibrate(store_of(tmp_path / "b", texts, embeddings, per_source=3))
    assert got is not None and got.distance == free.distance and "notes cap" not in got.source
