"""Which gate threshold a run uses: the store's calibration, the model's shipped one, or 0.55.

A cosine-distance threshold only means something for the embedding model it was chosen for, so
``RetrievalContext.gate_threshold`` defaults to None and the store's settings
(``ragbrain.settings``) decide it, most specific first:

1. the threshold ``ragbrain calibrate`` wrote into the store (its own model and notes);
2. the threshold shipped here for the store's embedding model, calibrated on labelled data
   with the command recorded beside it;
3. ``DEFAULT_GATE_THRESHOLD``, the original design's 0.55, for any other model.

A store's own chunks can fit one too (``ragbrain calibrate --store``, and a wrapped store whose
model has none): each chunk's pseudo-query (``pseudo_query``) is searched with its own source
in the results and without it (``pseudo_searches``), and the threshold is the one with the best
F1 at flagging the second kind (``best_f1``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragbrain.models.profiles import ShippedGate, profiles
from ragbrain.settings import model_settings

if TYPE_CHECKING:
    from ragbrain.settings import StoreSettings
    from ragbrain.store import Store


#: The threshold shipped for each embedding model with a profile (``ragbrain.models.profiles``:
#: its ``gate``, calibrated on labelled data with the command recorded beside it).
SHIPPED_GATES: dict[str, ShippedGate] = {p.name: p.gate for p in profiles()}


def model_gate(model: str) -> tuple[float, str]:
    """The threshold shipped for ``model`` (else the default), and its origin."""
    found = model_settings(model)
    return found.gate, found.gate_source


def run_gate(settings: StoreSettings, threshold: float | None) -> tuple[float, str]:
    """The gate a run uses: ``threshold`` (the context's) when set, else the store's
    (``StoreSettings.gate``: its calibration, its model's shipped one, or the default)."""
    if threshold is not None:
        return threshold, "set in the context"
    return settings.gate, settings.gate_source


_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s*")  # and the CJK full stops


def pseudo_query(text: str, title: str = "") -> str:
    """A chunk's title and first sentence (at most 30 words), the question it can answer."""
    body = text.removeprefix(title).strip() if title else text.strip()
    sentence = _SENTENCE_END.split(body, maxsplit=1)[0].strip()
    query = f"{title.rstrip(' .')}. {sentence}" if title and sentence else title or sentence
    return " ".join(query.split()[:30])


def pseudo_searches(
    store: Store, records: Iterable[tuple[str, str | None, Mapping[str, Any] | None]], k: int
) -> tuple[list[float], list[bool]]:
    """Search each record's pseudo-query: the best distance with the store as it is (the
    answer is there: False) and, when another source is among the ``k`` hits, the best
    distance of another source's chunk (it is not: True).

    Args:
        store: The store searched.
        records: ``(id, text, metadata)`` of the chunks to ask about.
        k: Hits per search, enough for another source's best chunk to be among them.

    The pseudo-queries are embedded in batches (``ragbrain.models.batch.embed_queries``).
    """
    from ragbrain.models.batch import embed_queries

    asked: list[tuple[str, Mapping[str, Any], str]] = []
    for id_, text, raw in records:
        meta = raw or {}
        query = pseudo_query(text or "", str(meta.get("title") or ""))
        if query:
            asked.append((id_, meta, query))
    vectors = embed_queries(store.embeddings, [query for _, _, query in asked])
    distances: list[float] = []
    nothing_there: list[bool] = []
    for (id_, meta, _), vector in zip(asked, vectors, strict=True):
        hits = store.search_vector(vector, k)
        if not hits:
            continue
        source = str(meta.get("source", id_))
        distances.append(hits[0]["distance"])
        nothing_there.append(False)
        others = [h for h in hits if str(h["metadata"].get("source", h["id"])) != source]
        if others:
            distances.append(others[0]["distance"])
            nothing_there.append(True)
    return distances, nothing_there


def best_f1(
    distances: Sequence[float], flags: Sequence[bool]
) -> tuple[float, float, float, float] | None:
    """The threshold with the best F1 at flagging ``flags`` as ``distance > threshold``, and
    its precision, recall and F1. Candidates are the midpoints between neighbouring distinct
    distances; a tie goes to the higher threshold (fewer needless fallbacks). None without
    both kinds of search."""
    positives = sum(flags)
    if not 0 < positives < len(distances):
        return None
    values = sorted(set(distances))
    best: tuple[float, float, float, float] | None = None
    for threshold in [(a + b) / 2 for a, b in itertools.pairwise(values)] or values:
        flagged = [d > threshold for d in distances]
        hits = sum(f and y for f, y in zip(flagged, flags, strict=True))
        precision = hits / sum(flagged) if any(flagged) else 0.0
        recall = hits / positives
        f1 = 2 * precision * recall / (precision + recall) if hits else 0.0
        if best is None or f1 >= best[3]:
            best = (threshold, precision, recall, f1)
    return best
