"""critic_filter: score every kept hit with the critic, drop the irrelevant, build the documents.

Without a critic the graph has no ``critic_filter`` node; each search ends the run with
``keep_all`` instead (see ``ragbrain.graph``).
"""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext, context_of
from ragbrain.critic.base import Critic, keep_mask, threshold_label
from ragbrain.nodes import Node
from ragbrain.state import RETRIEVAL_KEY, Hit, RetrievalState


def _document(hit: Hit, score: float | None, state: RetrievalState, critic: str) -> Document:
    trace = {
        "distance": hit["distance"],
        "critic_score": score,
        "depth": state["depth"],
        "complexity": state["complexity"],
        "verdict": state["verdict"],
        "best_distance": state["best_distance"],
        "gate": state["gate"],
        "fallback": state.get("fallback", False),
        "from_fallback": hit["from_fallback"],
        "critic": critic,
    }
    return Document(
        id=hit["id"], page_content=hit["text"], metadata={**hit["metadata"], RETRIEVAL_KEY: trace}
    )


def keep_all(state: RetrievalState, off_reason: str) -> dict[str, Any]:
    """The run's end when there is no critic: every hit becomes a document, and the trace and
    the notes say why nothing was judged."""
    hits, status = state["hits"], f"off: {off_reason}"
    documents = [_document(hit, None, state, status) for hit in hits]
    return {
        "documents": documents,
        "critic": status,
        "notes": [f"critic {status}; kept all {len(hits)}"],
    }


def make_critic_filter(critic: Critic) -> Node:
    """Bind a critic into the ``critic_filter`` node."""

    def critic_filter(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        hits = state["hits"]
        threshold = context_of(runtime).critic_threshold
        if threshold is None:
            threshold = critic.threshold
        texts, distances = [hit["text"] for hit in hits], [hit["distance"] for hit in hits]
        scores = critic.score(state["query"], texts, distances) if hits else []
        status = f"on ({threshold_label(critic, threshold)})"
        documents = [
            _document(hit, score, state, status)
            for hit, score, keep in zip(hits, scores, keep_mask(scores, threshold), strict=True)
            if keep
        ]
        dropped = len(hits) - len(documents)
        note = f"critic {status}: kept {len(documents)}, dropped {dropped} of {len(hits)}"
        if hits and not documents:
            note += "; every chunk scored below the threshold, so nothing is returned"
        return {"documents": documents, "critic": status, "notes": [note]}

    return critic_filter
