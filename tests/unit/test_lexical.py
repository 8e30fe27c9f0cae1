"""Lexical side: tokenization per language, the BM25 index against a brute-force reference,
its pickle-free file, and staleness/corruption handling against a real store."""

from __future__ import annotations

import logging
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ragbrain.ingest import ingest
from ragbrain.lexical import detect_language, tokenize
from ragbrain.lexical.index import LexicalIndex, LexicalIndexError
from ragbrain.store import Store
from ragbrain.store.lexical import LexicalSearcher, index_path, sync_lexical
from tests.support.fakes import NOTES


# --- tokenization ---
def test_english_stems_and_drops_stop_words() -> None:
    assert tokenize("The backups were failing") == ["backup", "were", "fail"]
    assert tokenize("backup") == tokenize("Backups")


def test_japanese_is_analyzed_into_words_not_characters() -> None:
    tokens = tokenize("東京都の図書館で勉強しています")
    assert {"東京", "図書", "勉強"} <= set(tokens)
    assert "の" not in tokens and "で" not in tokens  # particles carry no content
    # Inflected forms meet at their normalized form: 住んで and 住む are one term.
    assert "住む" in tokenize("住んでいる") and "住む" in tokenize("住む")


def test_japanese_voicing_marks_are_kept() -> None:
    # MiniLM's tokenizer drops dakuten (バ -> ハ); the lexical side must not.
    assert tokenize("バグ") != tokenize("ハク")


def test_thai_is_segmented_into_words_and_tone_marks_kept() -> None:
    tokens = tokenize("ฉันรักภาษาไทยมาก")
    assert "ภาษาไทย" in tokens and "รัก" in tokens
    assert "ฉัน" not in tokens  # a Thai stop word
    assert tokenize("ไก่") != tokenize("ไก")  # the tone mark makes another word


def test_mixed_scripts_in_one_text() -> None:
    tokens = tokenize("Pythonのエラーを直した ติดตั้ง Docker แล้ว")
    assert {"python", "エラー", "ติดตั้ง", "docker"} <= set(tokens)


@pytest.mark.parametrize(
    "text",
    ["the of and", "?!... ---", "😀🔥🚀", "", "   \n\t", "\u200b\u200d", "の", "ครับ"],
    ids=[
        "stop-words",
        "punctuation",
        "emoji",
        "empty",
        "blank",
        "zero-width",
        "ja-particle",
        "th-polite",
    ],
)
def test_texts_without_terms_give_no_tokens(text: str) -> None:
    assert tokenize(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "The nightly backup failed: see docs/db/skip_locked.md and pg_stat_activity.query",
        "Run `ruff check --fix` on src/ (p<0.05, e.g. T-cell COVID-19 v1.2.3) x86_64 A/B",
        "a-b- -c_d_ http://example.com/a/b.c?q=1 " + "word-" * 20 + "end",
        "",
    ],
    ids=["names", "flags", "joiners", "empty"],
)
def test_the_ascii_and_word_only_paths_give_the_general_paths_terms(text: str) -> None:
    # A Cyrillic word sends a text down the words-only path, an Arabic one down the general
    # loop over script runs; their own term comes first, then the same terms as ASCII alone.
    assert tokenize(f"{text} мир") == ["мир", *tokenize(text)]
    arabic = tokenize("مرحبا")
    assert tokenize(f"{text} مرحبا") == [*arabic, *tokenize(text)]


def test_other_scripts_are_kept_whole() -> None:
    assert tokenize("Привет мир") == ["привет", "мир"]
    assert tokenize("ＡＢＣ１２３") == ["abc123"]  # full-width folded by NFKC


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("How do I roll back a deploy?", "en"),
        ("デプロイを戻す方法は？", "ja"),
        ("จะย้อนการ deploy อย่างไร", "th"),
        ("Как откатить деплой", "other"),
        ("🙂 ...", "none"),
    ],
    ids=["en", "ja", "th", "other", "none"],
)
def test_detect_language(text: str, language: str) -> None:
    assert detect_language(text) == language


# --- the index ---
DOCS = {
    "a": "nightly backup failed because the S3 credentials expired",
    "b": "redis cache stampede after deploy, cache keys expired",
    "c": "schema migrations with alembic",
    "d": "バックアップが失敗した原因は認証情報の期限切れ",
    "e": "การสำรองข้อมูลล้มเหลวเพราะรหัสผ่านหมดอายุ",
}
TYPES = {"a": "bug", "b": "bug", "c": "decision", "d": "bug", "e": "lesson"}


def build(docs: dict[str, str] = DOCS) -> LexicalIndex:
    return LexicalIndex.build(list(docs), list(docs.values()), [TYPES.get(i, "") for i in docs])


def reference_bm25(
    docs: dict[str, str], query: str, k1: float = 1.2, b: float = 0.75
) -> dict[str, float]:
    """Lucene BM25 computed by hand over the same tokens."""
    tokens = {i: tokenize(t) for i, t in docs.items()}
    n = len(docs)
    avg = sum(len(t) for t in tokens.values()) / n
    scores = {}
    for i, terms in tokens.items():
        counts = Counter(terms)
        score = 0.0
        for term in set(tokenize(query)):
            df = sum(term in t for t in tokens.values())
            if not df or not counts[term]:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            tf = counts[term]
            score += idf * tf / (tf + k1 * (1 - b + b * len(terms) / avg))
        scores[i] = score
    return scores


@pytest.mark.parametrize(
    "query", ["expired credentials", "cache expired", "バックアップ 失敗", "หมดอายุ"]
)
def test_scores_match_a_brute_force_bm25(query: str) -> None:
    hits = build().search(query, 10)
    reference = reference_bm25(DOCS, query)
    assert hits, query
    for hit in hits:
        assert hit.score == pytest.approx(reference[hit.id], rel=1e-4)
    assert [h.id for h in hits] == sorted(
        (i for i, s in reference.items() if s > 0), key=lambda i: -reference[i]
    )


def test_score_matrix_matches_bm25s_on_the_same_tokens() -> None:
    import bm25s

    index = build()
    reference = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    tokens = [tokenize(text) for text in DOCS.values()]
    reference.index(tokens, show_progress=False)
    for query in ("expired credentials cache", "バックアップ 失敗", "หมดอายุ", "alembic"):
        terms = [t for t in tokenize(query) if t in reference.vocab_dict]
        expected = reference.get_scores(terms)
        assert index.scores(index.query_terms(query)) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(
    "query", ["expired credentials", "cache expired", "バックアップ 失敗"], ids=str
)
def test_idf_and_terms_of_match_a_brute_force_count(query: str) -> None:
    index = build()
    tokens = {i: set(tokenize(t)) for i, t in DOCS.items()}
    terms = index.query_terms(query)
    words = [t for t in tokenize(query) if t in index.vocab]
    expected = [
        math.log(1 + (len(DOCS) - df + 0.5) / (df + 0.5))
        for df in (sum(w in t for t in tokens.values()) for w in words)
    ]
    assert index.idf(terms) == pytest.approx(expected)
    for id_, own in tokens.items():
        assert index.terms_of(id_) == {index.vocab[w] for w in own}
    assert index.terms_of("no such chunk") == set()


def test_type_filter_and_no_terms() -> None:
    index = build()
    assert [h.id for h in index.search("expired", 10, ["decision", "lesson"])] == []
    assert {h.id for h in index.search("expired", 10, ["bug"])} == {"a", "b"}
    assert index.search("the and of 😀", 10) == []
    assert LexicalIndex.build([], [], []).search("backup", 5) == []


def test_update_tokenizes_only_new_chunks_and_matches_a_fresh_build() -> None:
    first = build({i: DOCS[i] for i in "abc"})
    updated = first.updated(
        {"a"}, ["d", "e", "b"], [DOCS["d"], DOCS["e"], DOCS["b"]], ["bug", "lesson", "bug"]
    )
    fresh = build({i: DOCS[i] for i in "bcde"})
    assert sorted(updated.ids) == sorted(fresh.ids) and updated.fingerprint == fresh.fingerprint
    for query in ("cache expired", "バックアップ", "backup"):
        assert [(h.id, round(h.score, 5)) for h in updated.search(query, 5)] == [
            (h.id, round(h.score, 5)) for h in fresh.search(query, 5)
        ]


def test_save_and_load_round_trip_without_pickle(tmp_path: Path) -> None:
    index = build()
    path = tmp_path / "lexical.npz"
    index.save(path)
    with np.load(path, allow_pickle=False) as data:  # would raise on any object array
        assert set(data.files) == {"header", "indptr", "terms", "modified"}
    loaded = LexicalIndex.load(path)
    assert loaded.ids == index.ids and loaded.fingerprint == index.fingerprint
    assert [h.id for h in loaded.search("expired", 5)] == [h.id for h in index.search("expired", 5)]


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(b"not a zip file"),
        lambda p: p.write_bytes(p.read_bytes()[:100]),
        lambda p: np.savez(p, header=np.frombuffer(b'{"format": "other"}', np.uint8)),
        lambda p: np.savez(p, header=np.array([1.0]), indptr=np.zeros(1), terms=np.zeros(1)),
    ],
    ids=["garbage", "truncated", "other-format", "bad-header"],
)
def test_corrupt_file_is_refused(tmp_path: Path, damage: object) -> None:
    path = tmp_path / "lexical.npz"
    build().save(path)
    damage(path)  # type: ignore[operator]
    with pytest.raises(LexicalIndexError):
        LexicalIndex.load(path)


# --- in step with the store ---
def test_ingest_keeps_the_index_in_step(fake_store: Store, notes_dir: Path) -> None:
    path = index_path(fake_store)
    assert LexicalIndex.load(path).fingerprint == sync_lexical(fake_store).fingerprint
    # Replace a file: the new words are found, the old ones are gone.
    (notes_dir / "bug/cache.md").write_text("# Memcached\n\nWe replaced it with memcached.")
    (notes_dir / "decision/alembic.md").unlink()
    ingest(notes_dir, fake_store)
    index = LexicalIndex.load(path)
    assert sorted(index.ids) == sorted(fake_store.all_ids())
    assert index.search("memcached", 5) and not index.search("stampede", 5)
    assert not index.search("alembic", 5)


def test_missing_stale_and_corrupt_indexes_are_rebuilt(
    fake_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    path = index_path(fake_store)
    path.unlink()
    assert len(sync_lexical(fake_store)) == fake_store.count() and path.is_file()
    path.write_bytes(b"garbage")
    with caplog.at_level(logging.WARNING, logger="ragbrain.store.lexical"):
        index = sync_lexical(fake_store)
    assert "Rebuilding the lexical index" in caplog.text
    assert sorted(index.ids) == sorted(fake_store.all_ids())
    # A chunk written behind the index's back is picked up by a long-lived searcher.
    searcher = LexicalSearcher(fake_store)
    vector = fake_store.embeddings.embed_documents(["zeppelin hangar"])
    fake_store.upsert(["new"], ["zeppelin hangar"], [{"type": "bug", "source": "x"}], vector)
    searcher._checked = -math.inf  # skip the wait between checks
    assert [h.id for h in searcher.index.search("zeppelin", 3)] == ["new"]


def test_notes_fixture_words_are_searchable(fake_store: Store) -> None:
    index = sync_lexical(fake_store)
    assert len(index) == len(NOTES)
    assert index.search("rabbitmq", 1)


def test_script_counts_count_letters_per_script() -> None:
    from ragbrain.lexical.tokens import script_counts

    counts = script_counts("Hainesと誰が、StripTheoryを考案しましたか?")
    assert counts == {"en": 17, "ja": 11}  # と誰が + を考案しましたか
    assert script_counts("🙂 ...") == {}


def test_the_scorer_gives_bm25s_numbers_without_bm25s() -> None:
    import bm25s

    from ragbrain.lexical.bm25 import Bm25Scorer, score_matrix

    index = build()
    data, docs, term_ptr = score_matrix(index.flat, index.indptr, len(index.vocab))
    reference = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    reference.scores = {"data": data, "indices": docs, "indptr": term_ptr, "num_docs": len(index)}
    reference.nonoccurrence_array = None
    ours = Bm25Scorer(data, docs, term_ptr, len(index))
    for query in ("expired credentials cache", "backup backup failed", "バックアップ 失敗", ""):
        terms = index.query_terms(query)
        got = ours.get_scores_from_ids(terms)
        assert got.dtype == np.float32
        assert np.array_equal(got, reference.get_scores_from_ids(terms))
    assert np.array_equal(ours.get_scores_from_ids([]), np.zeros(len(index), np.float32))


@pytest.mark.parametrize("terms", [[10**6], [-1]], ids=["past-the-end", "negative"])
def test_the_scorer_refuses_term_ids_outside_the_index(terms: list[int]) -> None:
    from ragbrain.lexical.bm25 import Bm25Scorer, score_matrix

    index = build()
    scorer = Bm25Scorer(*score_matrix(index.flat, index.indptr, len(index.vocab)), len(index))
    with pytest.raises(ValueError, match="go beyond the index"):
        scorer.get_scores_from_ids(terms)


def test_the_english_stop_words_are_bm25s_list() -> None:
    from bm25s.stopwords import STOPWORDS_EN

    from ragbrain.lexical.tokens import ENGLISH_STOP_WORDS

    assert frozenset(STOPWORDS_EN) == ENGLISH_STOP_WORDS
