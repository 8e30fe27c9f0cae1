"""How much of a question BM25's best chunk holds, by rarity: off-topic refusal's lexical
evidence (``ragbrain.refusal.offtopic``), measured where the hybrid search runs."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragbrain.lexical.index import LexicalIndex

#: BM25's hits whose rare words count as support.
SUPPORT_HITS = 10

#: The words that make a question a question: interrogatives, auxiliaries and pronouns. A
#: store that rarely writes "what" or "how" (command references, runbooks) would count them
#: among the question's rarest words, so that "what is pgmhist.html for" held too little of
#: itself to be rescued; support weighs what the question is about.
QUESTION_WORDS = (
    "what how why when where which who whom whose do does did don't can could should would "
    "shall may might must am have has i me my we us our you your what's"
)


@cache
def question_terms() -> frozenset[str]:
    """``QUESTION_WORDS`` as the index's terms (stemmed: "why" -> "whi")."""
    from ragbrain.lexical.tokens import tokenize

    return frozenset(tokenize(QUESTION_WORDS))


def lexical_support(index: LexicalIndex, query: str, hits: Sequence[str]) -> float | None:
    """How much of the question one chunk holds, by rarity: the IDF of the question's terms
    the best of ``hits`` (BM25's top chunks) holds, over the IDF of all its terms, a term the
    store never saw counting as the rarest. A stemmed near-miss of a common word weighs
    little, and a rare word of the question the notes lack weighs the most.

    Returns:
        A share in [0, 1]; None for a question without index terms.
    """
    weights, mass = index.query_weights(query, skip=question_terms())
    if mass <= 0:
        return None
    best = 0.0
    for id_ in hits[:SUPPORT_HITS]:
        held = index.terms_of(id_)
        best = max(best, sum(w for t, w in weights.items() if t in held))
    return min(best / mass, 1.0)


def question_support(whole: float | None, parts: Sequence[float | None] = ()) -> float | None:
    """The support of a question searched whole and, when compound, part by part: the whole
    question's, or what every part finds, whichever is more. One part's words held by a chunk
    say nothing of the rest: "the difference between a stock and a bond" is not on the topic
    of notes that mention stock and never a bond.

    Args:
        whole: ``lexical_support`` of the whole question (None: it has no index term).
        parts: ``lexical_support`` of each part (empty for a simple question).
    """
    held = [p for p in parts if p is not None]
    every = min(held) if held and len(held) == len(parts) else None
    candidates = [s for s in (whole, every) if s is not None]
    return max(candidates, default=None)
