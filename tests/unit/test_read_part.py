"""How much of a question is read for its words (``READ_QUERY_CHARS``): its BM25 terms, its
script, the rules that split a comparison and the depth's markers read its first part; a
chunk's text is read whole."""

from __future__ import annotations

import pytest

from ragbrain.context import RetrievalContext
from ragbrain.hybrid import dense_trusted
from ragbrain.lexical.index import LexicalIndex
from ragbrain.lexical.tokens import query_tokens, tokenize
from ragbrain.nodes.depth import complexity
from ragbrain.query.compound import split_compound
from ragbrain.query.inputs import MAX_QUERY_CHARS, READ_QUERY_CHARS, read_part
from ragbrain.refusal.offtopic import OffTopicCut, limit_for, script_of

FILLER = "the nightly job wrote its log to the shared volume "


def padded(head: str, tail: str, length: int = READ_QUERY_CHARS) -> str:
    """``head``, filler up to ``length`` characters, then ``tail``."""
    return head + (FILLER * length)[: length - len(head)] + tail


def test_the_read_part_is_far_above_a_question_and_below_the_cut() -> None:
    assert 249 * 4 <= READ_QUERY_CHARS < MAX_QUERY_CHARS  # the longest evaluation question
    question = "why did the nightly backup fail?"
    assert read_part(question) == question
    assert read_part("x" * MAX_QUERY_CHARS) == "x" * READ_QUERY_CHARS


def test_a_long_questions_terms_are_those_of_its_first_part() -> None:
    question = padded("postgres ", "zeppelin")
    assert len(question) > READ_QUERY_CHARS
    terms = query_tokens(question)
    assert "postgr" in terms and "zeppelin" not in terms
    assert terms == tuple(tokenize(question[:READ_QUERY_CHARS]))


def test_a_chunks_terms_are_read_whole() -> None:
    text = padded("postgres ", " zeppelin")
    index = LexicalIndex.build(["a"], [text], [""])
    found = index.text_terms(text)
    assert index.vocab["zeppelin"] in found
    assert index.vocab["zeppelin"] not in index.query_terms(text)


@pytest.mark.parametrize(
    ("frame", "parts"),
    [
        ("Redis和Memcached的区别", ["Redis", "Memcached"]),
        ("Docker กับ Podman ต่างกันอย่างไร", ["Docker", "Podman"]),
    ],
    ids=["zh", "th"],
)
def test_a_comparison_is_split_when_it_lies_in_the_first_part(frame: str, parts: list[str]) -> None:
    assert split_compound(f"{frame}\n{padded('', '', MAX_QUERY_CHARS - len(frame) - 1)}") == parts
    assert split_compound(f"{padded('', '')}\n{frame}") == []


def test_a_marker_counts_in_the_first_part_only() -> None:
    context = RetrievalContext()
    early = padded("compare ", "")
    late = padded("", " compare")
    assert any("marker 'compare'" in r for r in complexity(early, context)[1])
    assert not any("marker" in r for r in complexity(late, context)[1])


def test_a_questions_script_is_that_of_its_first_part() -> None:
    question = "a" * READ_QUERY_CHARS + "ก" * (2 * READ_QUERY_CHARS)
    assert script_of(question) == "thai"  # the whole text: most letters are Thai
    thai = OffTopicCut(0.5, 0.4, "test cut", "m", {"thai": 1.0}, by_script={"thai": 0.2})
    assert limit_for(question, thai) == (0.5, False)  # read as a Latin question
    assert limit_for(question[READ_QUERY_CHARS:], thai) == (0.2, False)
    assert dense_trusted(question, ["en"])
    assert not dense_trusted(question[READ_QUERY_CHARS:], ["en"])
