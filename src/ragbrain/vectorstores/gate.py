"""The gate of a wrapped store whose embedding model has no shipped threshold: calibrated once
on the store's own chunks and kept beside it.

The rule is ``ragbrain calibrate``'s self-supervised one (``ragbrain.gates.pseudo_searches``
and ``best_f1``): each sampled chunk's pseudo-question (its title and first sentence) is
searched twice, with the store as it is (the answer is there) and with the
chunk's own source left out (it is not), and the threshold is the best F1 at flagging the
second kind by ``best distance > threshold``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ragbrain.gates import best_f1, pseudo_searches

if TYPE_CHECKING:
    from ragbrain.store import Store

#: Searched per pseudo-question, so that another source's best chunk is among the hits.
SEARCH_K = 30


@dataclass(frozen=True)
class SelfCalibration:
    """A gate threshold fit on a store's own chunks, and what it was fit on."""

    threshold: float
    f1: float
    searches: int


def self_calibrate(store: Store, chunks: int, seed: int = 0) -> SelfCalibration | None:
    """Fit the gate on ``chunks`` chunks of ``store`` drawn at random (see the module).

    Returns:
        The threshold, rounded to 4 places; None when the searches do not give both kinds
        (a store of one source, or of chunks without text).
    """
    ids = store.all_ids()
    drawn = random.Random(seed).sample(ids, min(chunks, len(ids)))
    distances, nothing_there = pseudo_searches(store, store.rows(drawn), SEARCH_K)
    best = best_f1(distances, nothing_there)
    if best is None:
        return None
    return SelfCalibration(round(best[0], 4), best[3], len(distances))
