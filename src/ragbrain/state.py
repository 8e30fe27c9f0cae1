"""The graph's state, its input and output schemas, and the names of the trace keys."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.documents import Document
from typing_extensions import TypedDict

Verdict = Literal["good", "poor"]

#: Key of the trace dict that rides on every returned ``Document.metadata``.
RETRIEVAL_KEY = "retrieval"


class Hit(TypedDict):
    """One chunk found by a search, before it becomes a returned ``Document``."""

    id: str
    text: str
    metadata: dict[str, Any]
    distance: float
    from_fallback: bool
    # A compound question's hit: its cosine distance to each part (``ragbrain.query.parts``).
    part_distances: NotRequired[list[float]]


class RetrievalInput(TypedDict):
    """What a caller passes to the graph."""

    query: str
    type_filter: list[str] | None
    # Path, tag and date filters as JSON values (``ragbrain.query.filters.Filters.spec``); kept by
    # the fallback, which widens the type filter only.
    filters: NotRequired[dict[str, Any] | None]


class RetrievalOutput(TypedDict):
    """What the graph returns: the documents and the decisions that produced them."""

    documents: list[Document]
    complexity: int
    depth: int
    candidates: int
    best_distance: float | None
    gate: float
    # The gate's judgement of the first search (its best distance against the gate): it
    # decides whether the fallback runs, not whether to answer (``answerable`` does).
    first_search_quality: Verdict
    # The same value under its older name, kept for existing callers.
    verdict: Verdict
    fallback: bool
    critic: str
    # The decision: False when the run refuses (no documents), with the reason.
    answerable: bool
    abstain_reason: str | None
    # BM25's best hit over the most the query can score (hybrid search; None otherwise).
    bm25_coverage: NotRequired[float | None]
    # The searches' best dense cosine distance: off-topic refusal's evidence.
    nearest_distance: NotRequired[float | None]
    # How much of the query BM25's best chunk holds, by rarity (hybrid search only).
    lexical_support: NotRequired[float | None]
    notes: list[str]


class RetrievalState(TypedDict):
    """Everything a run knows; each node returns only the keys it changes."""

    query: str
    type_filter: list[str] | None
    filters: NotRequired[dict[str, Any] | None]
    complexity: int
    # The most chunks handed over, from the query's complexity (or the caller's k) ...
    depth: int
    # ... and how many are searched and judged (the critic may hand over more than depth).
    candidates: int
    hits: list[Hit]
    # BM25's best hit over the query's IDF sum (hybrid search only): abstention's lexical side.
    bm25_coverage: NotRequired[float | None]
    # The searches' best dense cosine distance (the fused hits may not hold it) ...
    nearest_distance: NotRequired[float | None]
    # ... and how much of the query BM25's best chunk holds, by rarity (off-topic refusal).
    lexical_support: NotRequired[float | None]
    best_distance: float | None
    gate: float
    first_search_quality: Verdict
    verdict: Verdict  # first_search_quality's older name
    fallback: bool
    critic: str
    documents: list[Document]
    # False when the run abstains (an empty answer), with the reason in abstain_reason.
    answerable: bool
    abstain_reason: str | None
    # Each node appends one line saying what it decided and why.
    notes: Annotated[list[str], operator.add]
