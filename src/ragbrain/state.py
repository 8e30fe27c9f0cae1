"""The graph's state, its input and output schemas, and the names of the trace keys."""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.documents import Document
from typing_extensions import TypedDict

from ragbrain.store.search import Hit

Verdict = Literal["good", "poor"]

#: Key of the trace dict that rides on every returned ``Document.metadata``.
RETRIEVAL_KEY = "retrieval"


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
    # The most chunks handed over, from the query's complexity (or the caller's k) ...
    depth: int
    # ... and how many are searched and judged (the critic may hand over more than depth).
    candidates: int
    # Why the question is an overview question (``ragbrain.query.overview``), handed the best
    # chunk of each kept note; None for any other.
    overview: NotRequired[str | None]
    best_distance: float | None
    gate: float
    first_search_quality: Verdict
    verdict: Verdict  # first_search_quality's older name
    fallback: bool
    critic: str
    # False when the run abstains (an empty answer), with the reason in abstain_reason.
    answerable: bool
    abstain_reason: str | None
    # BM25's best hit over the query's IDF sum (hybrid search only): abstention's lexical side.
    bm25_coverage: NotRequired[float | None]
    # The searches' best dense cosine distance (the fused hits may not hold it): off-topic
    # refusal's evidence ...
    nearest_distance: NotRequired[float | None]
    # ... and how much of the query BM25's best chunk holds, by rarity (hybrid search only).
    lexical_support: NotRequired[float | None]
    # The store's settings the run read (``ragbrain.settings.StoreSettings.summary``): its
    # model, gate, off-topic cut, critic, hand-over rule and fusion.
    store_settings: NotRequired[dict[str, Any]]
    # Each node appends one line saying what it decided and why.
    notes: Annotated[list[str], operator.add]


class RetrievalState(RetrievalInput, RetrievalOutput):
    """Everything a run knows: its input, its output and the hits found on the way; each node
    returns only the keys it changes."""

    hits: list[Hit]
