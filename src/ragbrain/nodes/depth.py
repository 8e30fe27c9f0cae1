"""choose_depth: score the query's complexity and pick how many chunks to hand over."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext, context_of
from ragbrain.query.compound import split_compound
from ragbrain.query.inputs import read_part
from ragbrain.query.overview import overview_cue
from ragbrain.state import RetrievalState


@lru_cache(maxsize=32)
def _marker_patterns(
    markers: tuple[str, ...],
) -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    """Compile markers: ASCII words match whole words only; other scripts match as substrings.

    Japanese and Thai write no spaces between words, so a word boundary means nothing there.
    Each comes with its folded text, which a query must hold for the pattern to match (a
    substring test, much faster than the pattern on a long question).
    """
    compiled = []
    for marker in markers:
        folded = marker.casefold()
        escaped = re.escape(folded)
        pattern = rf"(?<!\w){escaped}(?!\w)" if marker.isascii() else escaped
        compiled.append((marker, folded, re.compile(pattern)))
    return tuple(compiled)


def complexity(query: str, context: RetrievalContext) -> tuple[int, list[str]]:
    """Score a query: +1 for each length threshold it exceeds, +1 for each marker it contains
    (in its first ``READ_QUERY_CHARS``, ``ragbrain.query.inputs.read_part``).

    Returns:
        The score and the reasons that made it up, e.g. ``["length 64 > 60", "marker 'and'"]``.
    """
    length = len(query.strip())
    reasons = [f"length {length} > {t}" for t in context.length_thresholds if length > t]
    folded = read_part(query).casefold()
    reasons += [
        f"marker {m!r}"
        for m, text, p in _marker_patterns(context.markers)
        if text in folded and p.search(folded)
    ]
    return len(reasons), reasons


def depth_for(score: int, context: RetrievalContext) -> int:
    """Map a complexity score to a depth tier."""
    simple, medium, complex_ = context.depth_tiers
    medium_from, complex_from = context.tier_scores
    if score >= complex_from:
        return complex_
    return medium if score >= medium_from else simple


def plan_depth(query: str, context: RetrievalContext) -> dict[str, Any]:
    """The complexity score, the depth, how many candidates to search and judge, and the trace
    line; an explicit ``k`` overrides the tiers and is also the number judged. A compound
    question (``ragbrain.query.compound``) has ``judged_compound`` judged. Returns the state keys
    to write. An overview question (``ragbrain.query.overview``) gets the deepest tier and
    ``judged_overview`` candidates; its cue goes to the state's ``overview``."""
    score, reasons = complexity(query, context)
    why = ", ".join(reasons) or "short, no markers"
    if context.k is not None:
        return {
            "complexity": score,
            "depth": context.k,
            "candidates": context.k,
            "overview": None,
            "notes": [f"depth {context.k}: k set by the caller (complexity {score}: {why})"],
        }
    depth = depth_for(score, context)
    candidates = max(depth, context.judged)
    judged = f"{candidates} candidates judged"
    cue = overview_cue(query) if context.overview else None
    if context.split_compound and split_compound(query):
        candidates = max(candidates, context.judged_compound)
        judged = f"{candidates} candidates judged (a compound question: its parts share them)"
        cue = None
    elif cue is not None:
        depth = max(depth, context.depth_tiers[-1])
        candidates = max(candidates, depth, context.judged_overview)
        judged = (
            f"{candidates} candidates judged (an overview question: it {cue}; the best chunk "
            f"of each kept note is handed over, up to {depth} notes)"
        )
    return {
        "complexity": score,
        "depth": depth,
        "candidates": candidates,
        "overview": cue,
        "notes": [f"depth {depth}: complexity {score} ({why}); {judged}"],
    }


def choose_depth(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
    """Adaptive depth, the graph's first node: a pure function of the query and the context."""
    return plan_depth(state["query"], context_of(runtime))
