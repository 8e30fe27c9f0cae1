"""critic_filter: score every candidate with the critic, drop the irrelevant, hand over the
rest, and say whether the notes answer the query at all.

The node is always in the graph. Without a critic it hands over the first ``depth`` hits and
the trace says why. With one, every candidate it keeps is handed over: its evidence may raise
the depth up to the number judged (measured leave-one-domain-out, ``docs/quality.md``: it
helps where queries have many relevant documents).

A compound question's chunks (``ragbrain.nodes.parts``) are judged against each part as well, each
keeping its best score: a chunk that answers one part is a half-answer to the whole question
and would be dropped. Each part's best-judged chunk, when kept, is handed over whatever its
rank, and the trace names the part each chunk was kept for (``part``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext, context_of
from ragbrain.critic.base import Critic, keep_mask, threshold_label
from ragbrain.critic.evidence import EvidenceCritic
from ragbrain.critic.handover import HandOverRule, breadth, narrow
from ragbrain.nodes import Node
from ragbrain.nodes.parts import judge_parts, nearest_parts
from ragbrain.query.compound import split_compound
from ragbrain.refusal.abstain import (
    AbstainThresholds,
    Evidence,
    hand_over,
    one_note,
    should_abstain,
)
from ragbrain.refusal.offtopic import OffTopicCut, limit_for, refusal_reason
from ragbrain.state import RETRIEVAL_KEY, RetrievalState
from ragbrain.store.search import Hit

if TYPE_CHECKING:
    from ragbrain.settings import StoreSettings


def _document(
    hit: Hit, score: float | None, state: RetrievalState, critic: str, part: str | None = None
) -> Document:
    trace = {
        "distance": hit["distance"],
        "critic_score": score,
        "depth": state["depth"],
        "candidates": state["candidates"],
        "complexity": state["complexity"],
        "verdict": state["verdict"],
        "first_search_quality": state["verdict"],
        "best_distance": state["best_distance"],
        "gate": state["gate"],
        "fallback": state.get("fallback", False),
        "from_fallback": hit["from_fallback"],
        "critic": critic,
        "part": part,
    }
    return Document(
        id=hit["id"], page_content=hit["text"], metadata={**hit["metadata"], RETRIEVAL_KEY: trace}
    )


def abstention(
    hits: Sequence[Hit], scores: Sequence[float] | None, kept: int, threshold: float | None
) -> tuple[bool, str | None]:
    """Whether the notes answer the query, and why not when they do not.

    The run abstains (``answerable`` False, an empty answer) when the search found nothing, or
    when the critic could score no candidate (every score NaN). A critic that kept none of its
    finite-scored candidates still hands over its best one (``handed_over``): its threshold is a
    filter set to keep the answer, not a verdict that nothing fits, which is abstention's
    (``RetrievalContext.abstain``: the critic's, the gate's and BM25's evidence together); a
    poor gate verdict alone never makes it abstain either.

    Args:
        hits: The candidates the critic saw.
        scores: The critic's scores for them; None when the critic is off.
        kept: How many the critic kept.
        threshold: The critic threshold the run used (None when off).

    Returns:
        ``(answerable, reason)``; the reason is None when answerable.
    """
    if not hits:
        return False, "the search found no chunk to judge"
    if scores is not None and kept == 0:
        return False, (
            "the critic judged every chunk irrelevant (no chunk got a finite score; threshold "
            f"{threshold:.3f})"
        )
    return True, None


def handed_over(
    scores: Sequence[float], threshold: float, depth: int, bests: Sequence[int] | None
) -> list[int]:
    """Indices of the judged hits to hand over, in rank order.

    Without parts, the kept ones up to the depth and, past it, only those the critic scored
    above its cut: its evidence raises the depth, a pass it gave without judging (at the cut)
    does not. With a compound question's parts (``bests``: each part's best-judged hit, or
    -1), each part's best, when kept, has a place whatever its rank; the rest fill up to the
    depth in rank order (the parts share it).

    When the critic keeps none, its best-scored hit (a finite score) is handed over alone:
    only abstention empties an answer.
    """
    keep = keep_mask(scores, threshold)
    chosen = [i for i in range(len(scores)) if keep[i]]
    if not chosen:  # the best-scored one alone (``ragbrain.refusal.abstain.hand_over``)
        return hand_over(scores, threshold, depth)
    if bests is None:
        return [i for n, i in enumerate(chosen) if n < depth or scores[i] > threshold]
    own = {i for i in bests if i >= 0 and keep[i]}
    room = max(depth - len(own), 0)
    rest = [i for i in chosen if i not in own][:room]
    return sorted(own | set(rest))


def _kept_note(
    status: str, scores: Sequence[float], handed: Sequence[float], threshold: float
) -> str:
    """The critic's line of the trace: how many it kept of the judged chunks (``scores``),
    given the scores of the chunks ``handed`` over; one chunk scored below the cut is the best
    of a list the critic kept none of (``handed_over``), and one that alone reached the cut is
    the best of the list."""
    judged, kept = len(scores), len(handed)
    below = kept == 1 and not any(keep_mask(handed, threshold))
    if below:
        return (
            f"critic {status}: kept 0, dropped {judged} of {judged}; none reached the cut, so "
            f"its best-scored chunk ({handed[0]:.3f}) goes out: only abstention empties an answer"
        )
    if kept == 1 and judged > 1 and sum(keep_mask(scores, threshold)) == 1:
        return (
            f"critic {status}: kept only its best-scored chunk ({handed[0]:.3f}), dropped "
            f"{judged - 1} of {judged}"
        )
    return f"critic {status}: kept {kept}, dropped {judged - kept} of {judged}"


def evidence_abstention(
    critic: Critic,
    state: RetrievalState,
    scores: Sequence[float],
    thresholds: AbstainThresholds | None = None,
) -> tuple[bool, str | None, str]:
    """``RetrievalContext.abstain``: whether the critic's scores, the best distance of the
    judged hits and BM25's coverage of the query agree that nothing fits
    (``ragbrain.refusal.abstain.should_abstain``, with ``thresholds``, else those the critic ships
    for the store's model).

    Returns:
        ``(answerable, reason, note)``: the note says what the rule saw when it answered.
    """
    if thresholds is None:
        thresholds = getattr(critic, "abstain_thresholds", None)
    if thresholds is None:
        return (
            True,
            None,
            (
                "abstention asked, but the critic has no abstention thresholds for this store's "
                "embedding model"
            ),
        )
    hits = state["hits"]
    best = min((hit["distance"] for hit in hits), default=None)
    evidence = Evidence(best, scores, len(hits), bm25_coverage=state.get("bm25_coverage"))
    abstain, why = should_abstain(evidence, thresholds)
    if abstain:
        return False, why, ""
    return True, None, "abstention: the evidence does not agree that nothing fits"


def offtopic_refusal(
    state: RetrievalState,
    level: str,
    cut: OffTopicCut | None,
    general: Callable[[str], float] | None = None,
) -> tuple[bool, str | None, str]:
    """Whether the question is off-topic for the store (``ragbrain.refusal.offtopic``).

    Args:
        state: The run so far (the query, its nearest distance, the hits).
        level: ``RetrievalContext.abstain`` ("off", "on" or "strict").
        cut: The store's off-topic cut; None for a model without one.
        general: A question's distance to the nearest general question of the bank
            (``ragbrain.refusal.offtopic.general_distance``), measured for a question asked
            across scripts only; None: not measured.

    Returns:
        ``(answerable, reason, note)``: the note says what the check saw when it answered.
    """
    if level == "off":
        return True, None, ""
    if cut is None:
        return True, None, "off-topic check: no cut for this store's embedding model"
    distances = [hit["distance"] for hit in state["hits"]]
    nearest = state.get("nearest_distance")
    if nearest is None:
        nearest = min(distances, default=None)
    support = state.get("lexical_support")
    strict = level == "strict"
    limit, across = limit_for(state["query"], cut, strict=strict)
    near = cut.strict if strict else cut.distance
    measured = None
    if across and general is not None and cut.margin is not None and nearest is not None:
        measured = general(state["query"]) if near < nearest <= limit else None
    why = refusal_reason(
        state["query"], nearest, cut, strict=strict, support=support, general=measured
    )
    if why is not None:
        return False, why, ""
    shown = "none" if nearest is None else f"{nearest:.3f}"
    if nearest is not None and nearest > limit and support is not None:
        return (
            True,
            None,
            (
                f"on topic: nearest distance {shown} > cut {limit:.3f} ({cut.source}), but a "
                f"chunk holds {support:.2f} of its rare words (>= {cut.support:.2f})"
            ),
        )
    return True, None, f"on topic: nearest distance {shown} <= cut {limit:.3f} ({cut.source})"


def refusal(
    state: RetrievalState,
    context: RetrievalContext,
    critic: Critic | None,
    scores: Sequence[float] | None,
    offtopic: OffTopicCut | None,
    general: Callable[[str], float] | None = None,
    handed: tuple[Sequence[str], Sequence[float]] | None = None,
) -> tuple[bool, str | None, list[str]]:
    """``RetrievalContext.abstain``: is the question off-topic for the store (both levels),
    and, at the strict level, do the critic's, the distance's and BM25's evidence agree that
    the answer is missing? At the strict level a set to hand over (``handed``: each chunk's
    note and critic score) that is one note's confident answer (``one_note``, when the strict
    cuts carry its floor) is judged by the default level's off-topic cut alone.

    Returns:
        ``(answerable, reason, notes)``: the notes say what each check saw when it answered.
    """
    level = context.abstain
    if level == "strict" and handed is not None:
        cuts = context.abstain_thresholds or getattr(critic, "abstain_thresholds", None)
        kept = one_note(handed[0], handed[1], cuts, state.get("lexical_support"))
        if kept is not None:
            answerable, reason, note = offtopic_refusal(state, "on", offtopic, general)
            return answerable, reason, [line for line in (note, kept if answerable else "") if line]
    answerable, reason, note = offtopic_refusal(state, level, offtopic, general)
    said = [note] if note else []
    if not answerable or context.abstain != "strict":
        return answerable, reason, said
    if critic is None or scores is None:
        return True, None, [*said, "the strict level's evidence rule needs the critic"]
    answerable, reason, note = evidence_abstention(
        critic, state, scores, context.abstain_thresholds
    )
    return answerable, reason, [*said, note] if note else said


def make_critic_filter(settings: Callable[[], StoreSettings]) -> Node:
    """The ``critic_filter`` node, reading from the store's settings (``settings()``, as of
    the run; ``ragbrain.settings``) the bound critic for the question (None: keep every hit,
    saying why; ``StoreSettings.judging``: on a store of notes in one script, a question in
    that script may get its own, which the trace names), the off-topic cut (None: no refusal
    by topic), the hand-over rule (None: hand over every kept chunk) and a question's distance
    to the bank's general questions, for the cut across scripts
    (``ragbrain.refusal.offtopic.general_distance``)."""

    def critic_filter(state: RetrievalState, runtime: Runtime[RetrievalContext]) -> dict[str, Any]:
        hits, context = state["hits"], context_of(runtime)
        decided = settings().for_critic_filter(state["query"])
        critic, off_reason, offtopic, handover, general, chosen_for = decided
        compound = context.split_compound and any("part_distances" in hit for hit in hits)
        parts = split_compound(state["query"]) if compound else []
        judged: list[float] | None = None  # the critic's scores, for the strict level
        handed: tuple[list[str], list[float]] | None = None  # each chunk's note and score
        if critic is None:
            status = f"off: {off_reason}"
            documents, answerable, reason, note = _without_critic(state, status, parts)
        else:
            threshold, lowered = _cut(critic, state, context, bool(parts))
            texts, distances = [hit["text"] for hit in hits], [hit["distance"] for hit in hits]
            scores = _scores(critic, state["query"], hits, texts, distances)
            answers: list[str | None] = [None] * len(hits)
            bests: list[int] = []
            if parts:
                # A chunk that answers one part is judged against that part, not the whole.
                scores, answers, bests = judge_parts(critic, parts, hits, scores)
            status = f"on ({threshold_label(critic, threshold)})"
            chosen = handed_over(scores, threshold, state["depth"], bests if parts else None)
            narrowed = ""
            if not parts and any(keep_mask(scores, threshold)):
                chosen, narrowed = _narrowed(chosen, scores, state, context, handover)
            documents = [_document(hits[i], scores[i], state, status, answers[i]) for i in chosen]
            answerable, reason = abstention(hits, scores, len(documents), threshold)
            judged = list(scores)
            handed = (
                [str(hits[i]["metadata"].get("source", hits[i]["id"])) for i in chosen],
                [scores[i] for i in chosen],
            )
            note = _kept_note(status, scores, handed[1], threshold)
            note += f" (the critic for {chosen_for})" if chosen_for else ""
            note += lowered
            if len(documents) > state["depth"]:
                note += f" (more than the depth, {state['depth']}: the critic kept them)"
            note += f"; {narrowed}" if narrowed else ""
            if parts:
                for_parts = sum(answers[i] is not None for i in chosen)
                note += f"; judged against each part as well: {for_parts} kept for a part"
        if answerable and hits:
            answerable, reason, said = refusal(
                state, context, critic, judged, offtopic, general, handed
            )
            note += "".join(f"; {line}" for line in said)
        if not answerable:
            documents = []
        if reason is not None:
            note += f"; nothing is returned: {reason}"
        return {
            "documents": documents,
            "critic": status,
            "answerable": answerable,
            "abstain_reason": reason,
            "notes": [note],
        }

    return critic_filter


def _cut(
    critic: Critic, state: RetrievalState, context: RetrievalContext, parts: bool
) -> tuple[float, str]:
    """The critic's cut for this run (the context's, else the critic's own; an overview
    question's times ``overview_share``) and what the trace adds when it is lowered."""
    threshold = context.critic_threshold
    if threshold is None:
        threshold = critic.threshold
    if state.get("overview") and not parts and context.k is None:  # several notes answer
        share = context.overview_share
        return threshold * share, f" (an overview question: {share:g} of the critic's cut)"
    return threshold, ""


def _narrowed(
    chosen: list[int],
    scores: Sequence[float],
    state: RetrievalState,
    context: RetrievalContext,
    rule: HandOverRule | None,
) -> tuple[list[int], str]:
    """What to hand over of the kept ``chosen`` hits of a question without parts: an overview
    question's best chunk of each note (``breadth``), else the hand-over ``rule``'s (None: all
    kept); a caller's ``k`` keeps every kept chunk. The trace's line comes with them."""
    if context.k is not None:  # the caller's count: the critic alone drops
        line = f"hand-over: every kept chunk (k={context.k} set by the caller)"
        return chosen, line if rule is not None else ""
    hits = state["hits"]
    sources = [str(hit["metadata"].get("source", hit["id"])) for hit in hits]
    if state.get("overview"):
        return breadth(chosen, scores, sources, state["depth"])
    if rule is None:
        return chosen, ""
    return narrow(chosen, scores, sources, rule)


def _without_critic(
    state: RetrievalState, status: str, parts: Sequence[str]
) -> tuple[list[Document], bool, str | None, str]:
    """``critic_filter`` with the critic off: the first ``depth`` hits, each named for the
    part of a compound question it is nearest to; whether the notes answer and the note."""
    hits = state["hits"]
    shown = hits[: state["depth"]]
    near = nearest_parts(parts, shown) if parts else [None] * len(shown)
    documents = [
        _document(hit, None, state, status, part) for hit, part in zip(shown, near, strict=True)
    ]
    answerable, reason = abstention(hits, None, len(documents), None)
    note = f"critic {status}; kept all {len(documents)}"
    if len(hits) > len(documents):
        note += f" of the first {state['depth']} (the depth) of {len(hits)} candidates"
    return documents, answerable, reason, note


def _scores(
    critic: Critic, query: str, hits: list[Hit], texts: list[str], distances: list[float]
) -> list[float]:
    """The critic's scores of the hits; the evidence critic also gets their ids, which spare
    it tokenizing the indexed chunks again."""
    if not hits:
        return []
    if isinstance(critic, EvidenceCritic):
        return critic.score(query, texts, distances, ids=[hit["id"] for hit in hits])
    return critic.score(query, texts, distances)
