"""Searching a compound question's parts as well as the whole, fused so each part is kept.

The whole question and each part (``ragbrain.compound.split_compound``) are searched alike;
their rankings are fused by reciprocal rank fusion (``ragbrain.lexical.fusion.rrf``), and the
best chunk of each part that the fused top ``depth`` lacks replaces the last fused chunk that
is no part's best, so every part is represented in what is handed over. Every hit carries its
cosine distance to the *whole* question (the gate and the critic read that, as for any run).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ragbrain.lexical.fusion import fuse_hits, rrf
from ragbrain.state import Hit

if TYPE_CHECKING:
    from ragbrain.store import Store

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
    store: Store, query: str, parts: Sequence[str], depth: int, search: Search
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
        The hits, in fused order, each with its cosine distance to ``query``.
    """
    whole = search(query, depth)
    found = [search(part, depth) for part in parts]
    rankings = [[h["id"] for h in whole], *([h["id"] for h in hits] for hits in found)]
    order = represented(rrf(rankings), [hits[0]["id"] if hits else None for hits in found], depth)
    # Hits of the whole question keep theirs; a part's hit is read again with the distance
    # to the whole question (``fuse_hits`` reads the bare ids from the store).
    own = {h["id"]: h for h in whole}
    ranking: list[Hit | str] = [own.get(id_, id_) for id_ in order]
    return fuse_hits(store, query, [ranking], len(order))
