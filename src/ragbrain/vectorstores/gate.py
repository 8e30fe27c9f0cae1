"""The gate of a wrapped store whose embedding model has no shipped threshold: calibrated once
on the store's own chunks and kept beside it.

The rule is ``ragbrain calibrate``'s self-supervised one (``ragbrain.evaluation.calibrate``,
which the runtime does not import): each sampled chunk's pseudo-question (its title and first
sentence) is searched twice, with the store as it is (the answer is there) and with the
chunk's own source left out (it is not), and the threshold is the best F1 at flagging the
second kind by ``best distance > threshold``.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragbrain.store import Store

#: Searched per pseudo-question, so that another source's best chunk is among the hits.
SEARCH_K = 30
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s*")


@dataclass(frozen=True)
class SelfCalibration:
    """A gate threshold fit on a store's own chunks, and what it was fit on."""

    threshold: float
    f1: float
    searches: int


def pseudo_question(text: str, title: str = "") -> str:
    """A chunk's title and first sentence, at most 30 words: the question it answers."""
    body = text.removeprefix(title).strip() if title else text.strip()
    sentence = _SENTENCE_END.split(body, maxsplit=1)[0].strip()
    question = f"{title.rstrip(' .')}. {sentence}" if title and sentence else title or sentence
    return " ".join(question.split()[:30])


def best_f1_threshold(
    distances: Sequence[float], nothing_there: Sequence[bool]
) -> tuple[float, float] | None:
    """The threshold (a midpoint between neighbouring distances) with the best F1 at flagging
    ``nothing_there`` by ``distance > threshold``, ties to the higher one, and its F1; None
    without both kinds of search."""
    positives = sum(nothing_there)
    if not 0 < positives < len(distances):
        return None
    values = sorted(set(distances))
    best: tuple[float, float] | None = None
    for threshold in [(a + b) / 2 for a, b in itertools.pairwise(values)] or values:
        flagged = [d > threshold for d in distances]
        hits = sum(f and y for f, y in zip(flagged, nothing_there, strict=True))
        precision = hits / sum(flagged) if any(flagged) else 0.0
        recall = hits / positives
        f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
        if best is None or f1 >= best[1]:
            best = (threshold, f1)
    return best


def self_calibrate(store: Store, chunks: int, seed: int = 0) -> SelfCalibration | None:
    """Fit the gate on ``chunks`` chunks of ``store`` drawn at random (see the module).

    Returns:
        The threshold, rounded to 4 places; None when the searches do not give both kinds
        (a store of one source, or of chunks without text).
    """
    ids = store.all_ids()
    drawn = random.Random(seed).sample(ids, min(chunks, len(ids)))
    distances: list[float] = []
    nothing_there: list[bool] = []
    for id_, text, meta in store.rows(drawn):
        question = pseudo_question(text, str(meta.get("title") or ""))
        if not question:
            continue
        hits = store.search(question, SEARCH_K)
        if not hits:
            continue
        source = str(meta.get("source", id_))
        distances.append(hits[0]["distance"])
        nothing_there.append(False)
        others = [h for h in hits if str(h["metadata"].get("source", h["id"])) != source]
        if others:
            distances.append(others[0]["distance"])
            nothing_there.append(True)
    best = best_f1_threshold(distances, nothing_there)
    if best is None:
        return None
    return SelfCalibration(round(best[0], 4), best[1], len(distances))
