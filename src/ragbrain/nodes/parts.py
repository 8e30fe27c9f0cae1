"""Compound questions in the pipeline: each part searched as well as the whole, fused so each
part is kept, and each chunk judged against the part it answers.

The whole question and each part (``ragbrain.query.compound.split_compound``) are searched alike;
their rankings are fused by reciprocal rank fusion (``ragbrain.hybrid.rrf``), and the
best chunk of each part that the fused top ``depth`` lacks replaces the last fused chunk that
is no part's best, so every part is represented among the candidates. Every hit carries its
cosine distance to the *whole* question (the gate reads that, as for any run) and, in
``part_distances``, to each part.

A chunk that answers one part is a half-answer to the whole question, and the critic judging
it against the whole drops it. ``judge_parts`` judges the candidates against each part as
well, as a search for that part would list them, and keeps each chunk's best score and the
part that gave it (``critic_filter`` hands it over and names the part in the trace).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ragbrain.hybrid import fuse_hits, rrf
from ragbrain.store.search import Hit

if TYPE_CHECKING:
    from ragbrain.critic.base import Critic
    from ragbrain.store.search import SearchableStore

Search = Callable[[str, int], list[Hit]]


def represented(fused: Sequence[str], bests: Sequence[str | None], depth: int) -> list[str]:
    """The top ``depth`` of ``fused``, changed so that it holds each part's best id.

    Args:
        fused: Ids in fused order (best first).
        bests: Each part's best id (None for a part that found nothing).
        depth: How many ids to hand over.

    Returns:
        At most ``depth`` ids, in fused order; a part's best that the top lacks fills a free
        place, else replaces the lowest-ranked id that is no part's best.
    """
    top = list(fused[:depth])
    wanted = [b for b in dict.fromkeys(bests) if b is not None]
    for best in wanted:
        if best in top:
            continue
        if len(top) < depth:
            top.append(best)
            continue
        for position in range(len(top) - 1, -1, -1):
            if top[position] not in wanted:
                top[position] = best
                break
    rank = {id_: i for i, id_ in enumerate(fused)}
    return sorted(top, key=lambda id_: rank.get(id_, len(rank)))


def search_parts(
    store: SearchableStore, query: str, parts: Sequence[str], depth: int, search: Search
) -> list[Hit]:
    """Search ``query`` and each of ``parts`` with ``search`` (``depth`` hits each) and hand
    over the fused ``depth``, each part's best among them.

    Args:
        store: Reads the chunks that only a part found, with their distance to ``query``.
        query: The whole question.
        parts: Its parts.
        depth: How many hits to return (and to fetch per search).
        search: ``(text, k) -> hits``: the same search the whole question gets.

    Returns:
        The hits, in fused order, each with its cosine distance to ``query`` and, in
        ``part_distances``, to each part.
    """
    whole = search(query, depth)
    found = [search(part, depth) for part in parts]
    rankings = [[h["id"] for h in whole], *([h["id"] for h in hits] for hits in found)]
    order = represented(rrf(rankings), [hits[0]["id"] if hits else None for hits in found], depth)
    # Hits of the whole question keep theirs; a part's hit is read again with the distance
    # to the whole question (``fuse_hits`` reads the bare ids from the store).
    own = {h["id"]: h for h in whole}
    ranking: list[Hit | str] = [own.get(id_, id_) for id_ in order]
    hits = fuse_hits(store, query, [ranking], len(order))
    ids = [hit["id"] for hit in hits]
    to_part = [{h["id"]: h["distance"] for h in store.hits_by_id(part, ids)} for part in parts]
    # A chunk deleted since the fusion read it is as far from a part as can be.
    return [
        Hit(**{**hit, "part_distances": [d.get(hit["id"], 2.0) for d in to_part]}) for hit in hits
    ]


def _with_parts(hits: Sequence[Hit], parts: Sequence[str]) -> list[int]:
    """Indices of the hits that carry a distance to each of ``parts`` (a fallback's may not)."""
    return [i for i, hit in enumerate(hits) if len(hit.get("part_distances", ())) == len(parts)]


def judge_parts(
    critic: Critic, parts: Sequence[str], hits: Sequence[Hit], scores: Sequence[float]
) -> tuple[list[float], list[str | None], list[int]]:
    """Each hit's best score against the whole question or one of its parts.

    For each part, the hits that carry part distances are judged against it in the order of
    their distance to it, as the critic would see a search for that part alone.

    Args:
        critic: The critic that gave ``scores``.
        parts: The question's parts.
        hits: The candidates, in the order ``scores`` judged them.
        scores: Their scores against the whole question.

    Returns:
        ``(scores, answers, bests)``: each hit's best score, the part that gave it (None: the
        whole question), and, per part, the index of the hit it scored highest (-1: none).
    """
    best = list(scores)
    answers: list[str | None] = [None] * len(hits)
    bests: list[int] = []
    judged = _with_parts(hits, parts)
    for j, part in enumerate(parts):
        order = sorted(judged, key=lambda i: hits[i]["part_distances"][j])
        got = critic.score(
            part, [hits[i]["text"] for i in order], [hits[i]["part_distances"][j] for i in order]
        )
        finite = [(s, i) for i, s in zip(order, got, strict=True) if not math.isnan(s)]
        bests.append(max(finite, key=lambda pair: (pair[0], -pair[1]))[1] if finite else -1)
        for i, score in zip(order, got, strict=True):
            if score > best[i] or (math.isnan(best[i]) and not math.isnan(score)):
                best[i], answers[i] = score, part
    return best, answers, bests


def nearest_parts(parts: Sequence[str], hits: Sequence[Hit]) -> list[str | None]:
    """The part each hit is nearest to by cosine distance (None: no part distances)."""
    nearest: list[str | None] = [None] * len(hits)
    for i in _with_parts(hits, parts):
        distances = hits[i]["part_distances"]
        nearest[i] = parts[min(range(len(parts)), key=distances.__getitem__)]
    return nearest
