"""Validation of what callers pass in: queries, k and type filters, with errors that name them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast

from ragbrain.errors import InvalidInputError

#: ``RetrievalContext.abstain``: refuse nothing, off-topic questions, or missing answers too.
AbstainLevel = Literal["off", "on", "strict"]
ABSTAIN_LEVELS: tuple[AbstainLevel, ...] = ("off", "on", "strict")

MAX_K = 100
MAX_QUERY_CHARS = 10_000  # the model reads ~256 tokens; more is a mistake, not a question
#: How much of a question is read for its words: its BM25 terms (and the rare-word support and
#: evidence built on them), the script it is written in, the rules that split a comparison.
#: About what the default model's 256 tokens cover of English text, four times the longest
#: question of the evaluation sets (249 characters); the embedding reads the whole question
#: up to its model's own token limit. Past it, segmenting Thai, Japanese or Chinese would cost
#: ~1.5 ms per 1,000 characters more (``python -m benchmarks.latency long``).
READ_QUERY_CHARS = 1_000


def read_part(query: str) -> str:
    """The part of ``query`` its words are read from: its first ``READ_QUERY_CHARS``."""
    return query[:READ_QUERY_CHARS]


def check_query(query: Any) -> str:
    """A non-empty string query, returned unchanged.

    Raises:
        InvalidInputError: The query is not a string, holds only whitespace, is longer than
            ``MAX_QUERY_CHARS`` or holds a lone surrogate.
    """
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}.")
    if not query.strip():
        raise InvalidInputError("query is empty; pass the text to search for.")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError(
            f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,} "
            "(the embedding model reads only the first ~256 tokens)."
        )
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate, e.g. from undecodable bytes
        raise InvalidInputError(
            f"query holds a lone surrogate (U+{ord(query[exc.start]):04X}) at position "
            f"{exc.start}, which is not valid text; decode the input with errors='replace'."
        ) from None
    return query


def check_k(k: Any, *, name: str = "k") -> int | None:
    """None (adaptive depth) or an int in 1..MAX_K; booleans and strings are refused."""
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidInputError(f"{name} must be an integer in 1..{MAX_K}, got {k!r}.")
    if not 1 <= k <= MAX_K:
        raise InvalidInputError(f"{name} must be in 1..{MAX_K}, got {k}.")
    return k


def check_types(type_filter: Any) -> list[str] | None:
    """None, or a list of note types from a string or a sequence of strings."""
    if type_filter is None:
        return None
    if isinstance(type_filter, str):
        type_filter = [type_filter]
    if not isinstance(type_filter, Sequence) or not all(
        isinstance(t, str) and t.strip() for t in type_filter
    ):
        raise InvalidInputError(
            f"type_filter must be a note type or a list of them, got {type_filter!r}."
        )
    return list(dict.fromkeys(t.strip() for t in type_filter)) or None


def check_abstain(level: Any) -> AbstainLevel:
    """A refusal level: one of ``ABSTAIN_LEVELS``; True and False read as strict and off.

    Raises:
        InvalidInputError: Anything else.
    """
    if isinstance(level, bool):
        return "strict" if level else "off"
    if level not in ABSTAIN_LEVELS:
        raise InvalidInputError(
            f"abstain must be one of {', '.join(ABSTAIN_LEVELS)}, got {level!r}."
        )
    return cast("AbstainLevel", level)
