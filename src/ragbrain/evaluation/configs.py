"""The configurations an evaluation compares: one line each, stages switched on one by one."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ragbrain.errors import InvalidInputError

if TYPE_CHECKING:
    from ragbrain.context import RetrievalContext

#: A gate threshold no cosine distance exceeds (distances lie in [0, 2]): the gate never fires.
NO_GATE = 2.0
DENSE_K = 10
DENSE: dict[str, Any] = {"search_mode": "dense"}
OFF: dict[str, Any] = {"gate_threshold": NO_GATE}
#: The stages are measured without refusal, which only the shipped configurations add.
NO_REFUSAL: dict[str, Any] = {"abstain": "off"}


@dataclass(frozen=True)
class Config:
    """One way of answering a query.

    Attributes:
        name: Short label used in tables, JSON and plots.
        description: What the configuration switches on, for the report.
        kind: ``"dense"`` is LangChain's own Chroma retriever (top ``DENSE_K``) over the same
            collection; ``"bm25"`` is BM25 alone over the store's lexical index (top
            ``DENSE_K``); ``"ragbrain"`` is the corrective graph.
        context: ``RetrievalContext`` fields that differ from the defaults.
        critic: Whether the configuration needs a trained critic (skipped when none exists).
    """

    name: str
    description: str
    kind: Literal["dense", "bm25", "ragbrain"] = "ragbrain"
    context: dict[str, Any] = field(default_factory=dict)
    critic: bool = False

    def retrieval_context(self, base: RetrievalContext) -> RetrievalContext:
        """``base`` with this configuration's fields applied."""
        return dataclasses.replace(base, **self.context)


# Adding a configuration is one line here (e.g. a hybrid stage once the context has a switch).
CONFIGS: tuple[Config, ...] = (
    Config("dense", "LangChain Chroma retriever, top 10 (what a user has today)", kind="dense"),
    # Hybrid search (issue #5): BM25 alone, the fusion alone, and the pipeline on dense search.
    Config("bm25", "BM25 alone (bm25s scoring, ragbrain's tokenizers), top 10", kind="bm25"),
    Config(
        "hybrid",
        "ragbrain: BM25 + dense fused by score, fixed depth 10, gate off",
        context={"k": 10, "gate_threshold": NO_GATE, "search_mode": "hybrid", **NO_REFUSAL},
    ),
    Config(
        "ragbrain-k10-dense",
        "ragbrain graph on dense search, fixed depth 10, gate + fallback with lexical rescue",
        context={"k": 10, "search_mode": "dense", **NO_REFUSAL},
    ),
    Config(
        "ragbrain-k10",
        "ragbrain graph, fixed depth 10, gate + fallback",
        context={"k": 10, **NO_REFUSAL},
    ),
    # Issue #4's stages, switched on one by one over dense search.
    Config(
        "adaptive",
        "ragbrain dense: adaptive depth only (gate off)",
        context={**DENSE, **OFF, **NO_REFUSAL},
    ),
    Config(
        "adaptive+gate",
        "ragbrain dense: adaptive depth + gate and fallback",
        context={**DENSE, **NO_REFUSAL},
    ),
    Config(
        "adaptive+gate+critic",
        "ragbrain dense: + critic",
        context={**DENSE, **NO_REFUSAL},
        critic=True,
    ),
    # The retriever as it ships: hybrid search, adaptive depth, gate and fallback, critic.
    Config(
        "default",
        "as shipped: hybrid, adaptive, gate + fallback, critic, off-topic refusal",
        critic=True,
    ),
    Config(
        "no-refusal",
        "as shipped, refusal off (what refusing costs the answerable queries)",
        context=NO_REFUSAL,
        critic=True,
    ),
    Config(
        "strict",
        "as shipped, strict refusal (a lower cut; the critic, the distance and BM25 agree)",
        context={"abstain": "strict"},
        critic=True,
    ),
)


def select(names: list[str] | None, *, critic_available: bool) -> list[Config]:
    """The configurations to run: all by default, those needing a critic only when one exists.

    Raises:
        InvalidInputError: An unknown name (the message lists the known ones).
    """
    known = {c.name: c for c in CONFIGS}
    unknown = [n for n in names or [] if n not in known]
    if unknown:
        raise InvalidInputError(f"Unknown configuration(s) {unknown}; known: {sorted(known)}.")
    chosen = [known[n] for n in names] if names else list(CONFIGS)
    return [c for c in chosen if critic_available or not c.critic]
