"""Identifiers in the lexical index: a name written as one is indexed whole beside its words,
and a whole name the index never saw weighs nothing in the question's support."""

from __future__ import annotations

import pytest

from ragbrain.lexical import tokenize
from ragbrain.lexical.index import LexicalIndex
from ragbrain.lexical.tokens import compounds, is_compound


@pytest.mark.parametrize(
    ("text", "whole", "words"),
    [
        ("what does skip_locked do", ["skip_locked"], ["skip", "lock"]),
        ("ERR_CONN_RESET", ["err_conn_reset"], ["err", "conn", "reset"]),
        ("run it with --dry-run", ["dry-run"], ["dri", "run"]),
        ("pg_stat_activity.query", ["pg_stat_activity.query", "pg_stat_activity"], ["activ"]),
        (
            "see docs/db/skip_locked.md",
            ["docs/db/skip_locked.md", "skip_locked.md", "skip_locked"],
            ["doc", "db", "skip", "lock", "md"],
        ),
        ("sqlite3-rsync.c", ["sqlite3-rsync.c", "sqlite3-rsync"], ["sqlite3", "rsync"]),
    ],
)
def test_an_identifier_is_indexed_whole_and_split(
    text: str, whole: list[str], words: list[str]
) -> None:
    tokens = tokenize(text)
    assert compounds(text) == whole
    assert all(w in tokens for w in whole) and all(w in tokens for w in words)
    assert all(is_compound(w) for w in whole) and not any(is_compound(w) for w in words)


def test_camel_case_names_stay_one_word() -> None:
    assert tokenize("call addEventListener on it") == ["call", "addeventlisten"]
    assert tokenize("plain words only") == ["plain", "word", "onli"]


def test_whole_names_do_not_make_a_chunk_longer() -> None:
    # Two chunks alike but for a compound: the one that writes it scores its words the same.
    index = LexicalIndex.build(
        ["a", "b", "c"],
        ["queue skip lock worker", "queue skip_lock worker", "other text here now"],
        ["note"] * 3,
    )
    scores = {hit.id: hit.score for hit in index.search("queue worker", 3)}
    assert scores["a"] == pytest.approx(scores["b"])


def test_numbers_and_long_paths_are_not_whole_names() -> None:
    assert compounds("on 2021-05-03 at 10.5") == []
    url = "https://example.com/" + "a" * 50 + "/config_file.yaml"
    assert compounds(url) == ["example.com", "config_file.yaml", "config_file"]


def test_a_whole_name_the_index_never_saw_weighs_nothing() -> None:
    index = LexicalIndex.build(
        ["a", "b", "c"],
        ["use skip_locked in the queue", "lock the row, then skip it", "unrelated words"],
        ["note"] * 3,
    )
    known, _ = index.query_weights("skip_locked")
    assert index.vocab["skip_locked"] in known and len(known) == 3
    # The index holds skip and lock, never skip_lock: the parts stand for the whole.
    unseen, unseen_mass = index.query_weights("skip_lock")
    assert set(unseen) == {index.vocab["skip"], index.vocab["lock"]}
    assert unseen_mass == pytest.approx(sum(unseen.values()))
    # A plain word the index never saw still counts as the rarest.
    _, with_word = index.query_weights("skip zebra")
    assert with_word > sum(index.query_weights("skip")[0].values())
    # The chunk holding the name whole ranks first for it.
    assert index.search("skip_locked", 3)[0].id == "a"


def test_question_words_are_not_searched() -> None:
    index = LexicalIndex.build(
        ["how-to", "scanner"],
        ["how do I use it: how you use the tool, how we use it", "nikto reads cirt.net for checks"],
        ["note"] * 2,
    )
    asked = index.query_terms("how do I use cirt.net")
    assert index.vocab["how"] not in asked and index.vocab["cirt.net"] in asked
    assert index.search("how do I use cirt.net", 2)[0].id == "scanner"
    assert index.search("how do I", 2) == []  # nothing but question words: nothing to find


def test_known_compounds_are_the_names_some_chunk_holds() -> None:
    index = LexicalIndex.build(["a"], ["set statement_timeout per role"], ["note"])
    assert index.known_compounds("what does statement_timeout do") == ["statement_timeout"]
    assert index.known_compounds("what does lock_timeout do") == []  # never seen
    assert index.known_compounds("statement timeout") == []  # words, not the name
