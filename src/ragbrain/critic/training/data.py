"""Training pairs for the critic: dense candidates mined with the project's own store, labelled
by qrels, split into train and dev queries, and grouped (one positive, its query's negatives)."""

from __future__ import annotations

import dataclasses
import hashlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragbrain.errors import InvalidInputError

if TYPE_CHECKING:
    from ragbrain.evaluation.beir import Split
    from ragbrain.store import Store

Progress = Callable[[int, int], None]
_QUERY_BATCH = 64
_PAGE = 10_000  # stored vectors read per page by the exact search


class NoTrainingDataError(InvalidInputError):
    """A training folder yields no positives or no usable pairs."""


@dataclass(frozen=True)
class Candidate:
    """One dense hit for a query: the chunk, its cosine distance and its judgement."""

    doc_id: str
    text: str
    distance: float
    relevant: bool


@dataclass(frozen=True)
class QueryCandidates:
    """A query with its top-k dense candidates (best first) and its judged documents."""

    dataset: str
    query_id: str
    query: str
    candidates: tuple[Candidate, ...]
    positives: tuple[str, ...]  # texts of every relevant document
    negatives: tuple[str, ...]  # texts of documents judged not relevant (score 0), if any
    #: BM25's best hit over the most the query can score (``as_retrieved`` sets it, as
    #: ``hybrid_search`` does at run time; 0 when BM25 found nothing); None when not searched.
    bm25_coverage: float | None = None


@dataclass(frozen=True)
class Group:
    """Pairs of one query scored together: a listwise loss compares the positive with the rest."""

    query: str
    texts: tuple[str, ...]
    labels: tuple[int, ...]


def is_dev(dataset: str, query_id: str, fraction: float, seed: int) -> bool:
    """Stable train/dev assignment of a query, independent of order and of other queries."""
    digest = hashlib.sha256(f"{seed}:{dataset}:{query_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def exact_nearest(
    collection: Any, batches: Sequence[Sequence[Sequence[float]]], k: int, skip: frozenset[str]
) -> list[list[list[tuple[str, float]]]]:
    """For each batch of vectors, the ``k`` stored chunks nearest each vector by exact cosine
    distance, ``skip`` left out.

    An exhaustive scan, page by page, rather than the HNSW index: Chroma's approximate search
    can return a slightly different top-k in another process, and training data must not.
    Equal distances are ordered by id. Each page of stored vectors is read once for all the
    batches (reading is what costs: ~5 s for 100k chunks); each batch's distances are still one
    matrix product of its own, so a result does not depend on the other batches.
    """
    import numpy

    queries = []
    for vectors in batches:
        batch = numpy.asarray(vectors, dtype=numpy.float32)
        batch /= numpy.maximum(numpy.linalg.norm(batch, axis=1, keepdims=True), 1e-12)
        queries.append(batch)
    best: list[list[list[tuple[float, str]]]] = [[[] for _ in batch] for batch in queries]
    offset = 0
    while True:
        page = collection.get(include=["embeddings"], limit=_PAGE, offset=offset)
        ids = list(page["ids"])
        if not ids:
            break
        offset += len(ids)
        matrix = numpy.asarray(page["embeddings"], dtype=numpy.float32)
        matrix /= numpy.maximum(numpy.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        skipped = [j for j, id_ in enumerate(ids) if id_ in skip]
        top = min(k, len(ids))
        for batch, batch_best in zip(queries, best, strict=True):
            distances = 1.0 - batch @ matrix.T
            distances[:, skipped] = numpy.inf
            nearest = numpy.argpartition(distances, top - 1, axis=1)[:, :top]
            for row, found in enumerate(batch_best):
                found += [
                    (float(distances[row, j]), ids[j])
                    for j in nearest[row]
                    if distances[row, j] != numpy.inf
                ]
                found.sort()
                del found[k:]
    return [[[(id_, max(0.0, d)) for d, id_ in found] for found in batch] for batch in best]


def _nearest(
    store: Store,
    queries: Sequence[str],
    k: int,
    skip: frozenset[str],
    progress: Progress | None = None,
) -> list[list[tuple[str, float]]]:
    """``exact_nearest`` for each query text, embedded in batches of ``_QUERY_BATCH`` (the
    batches decide the floating-point results, so they never change) and scanned at once."""
    vectors: list[list[list[float]]] = []
    for start in range(0, len(queries), _QUERY_BATCH):
        batch = queries[start : start + _QUERY_BATCH]
        vectors.append(store.embeddings.embed_documents(list(batch)))
        if progress:
            progress(start + len(batch), len(queries))
    return [row for rows in exact_nearest(store.collection, vectors, k, skip) for row in rows]


def mine(
    split: Split,
    store: Store,
    query_ids: Sequence[str],
    *,
    k: int,
    exclude_docs: frozenset[str] = frozenset(),
    progress: Progress | None = None,
) -> list[QueryCandidates]:
    """Top-``k`` dense candidates of each query from ``store``: the retriever's own embeddings
    and cosine distance, searched exactly (``exact_nearest``) so that mining is reproducible.

    Documents in ``exclude_docs`` are dropped from positives and candidates alike (used to
    train without documents that are relevant in a test split).
    """
    texts = [split.queries[q] for q in query_ids]
    nearest = _nearest(store, texts, k, exclude_docs, progress)
    found: list[QueryCandidates] = []
    for start in range(0, len(query_ids), _QUERY_BATCH):  # candidate texts, a batch per get
        ids = query_ids[start : start + _QUERY_BATCH]
        rows = nearest[start : start + _QUERY_BATCH]
        wanted = sorted({doc for row in rows for doc, _ in row})
        page = store.collection.get(ids=wanted, include=["documents"])
        text_of = dict(zip(page["ids"], page["documents"] or [], strict=True))
        for row, qid in enumerate(ids):
            relevant = split.relevant(qid) - exclude_docs
            judged_out = {d for d, s in split.qrels[qid].items() if s <= 0} - exclude_docs
            hits = [
                Candidate(doc, text_of.get(doc) or "", distance, doc in relevant)
                for doc, distance in rows[row]
            ]
            found.append(
                QueryCandidates(
                    dataset=split.name,
                    query_id=qid,
                    query=split.queries[qid],
                    candidates=tuple(hits),
                    positives=tuple(split.corpus[d].content for d in sorted(relevant)),
                    negatives=tuple(split.corpus[d].content for d in sorted(judged_out)),
                )
            )
    return found


def as_retrieved(
    split: Split,
    store: Store,
    items: Sequence[QueryCandidates],
    *,
    k: int,
    exclude_docs: frozenset[str] = frozenset(),
) -> list[QueryCandidates]:
    """The same queries with the candidates the retriever hands its critic at run time: the
    top ``k`` of its default hybrid search (dense and BM25 fused by score as
    ``ragbrain.hybrid.hybrid_fusion`` fuses them, with its language rule and the store
    model's BM25 power), so that a threshold calibrated on them means at run time what it
    meant on dev.

    The dense side is searched exactly (``exact_nearest``), as in ``mine``, so calibration is
    as reproducible as mining; relevance comes from ``split``'s qrels, as in ``mine``.
    """
    from ragbrain.hybrid import (
        CANDIDATES,
        DENSE_SHARE,
        bm25_power,
        dense_trusted,
        fuse_scores,
    )
    from ragbrain.models.embeddings import model_reads
    from ragbrain.store.lexical import sync_lexical

    index = sync_lexical(store)
    power = bm25_power(store.model)
    reads = model_reads(store.model)
    depth = max(k, CANDIDATES)
    nearest = _nearest(store, [item.query for item in items], depth, exclude_docs)
    out: list[QueryCandidates] = []
    for item, row in zip(items, nearest, strict=True):
        relevant = split.relevant(item.query_id) - exclude_docs
        lexical = [
            (hit.id, hit.score)
            for hit in index.search(item.query, depth + len(exclude_docs))
            if hit.id not in exclude_docs
        ][:depth]
        share = DENSE_SHARE if dense_trusted(item.query, reads) else 0.0
        mass = index.query_mass(item.query)
        order = fuse_scores(list(row), lexical, mass, share, power)[:k]
        found = {hit["id"]: hit for hit in store.hits_by_id(item.query, order)}
        hits = [found[id_] for id_ in order if id_ in found]
        candidates = tuple(
            Candidate(h["id"], h["text"], h["distance"], h["id"] in relevant) for h in hits
        )
        coverage = min(1.0, lexical[0][1] / mass) if lexical and mass > 0 else 0.0
        out.append(dataclasses.replace(item, candidates=candidates, bm25_coverage=coverage))
    return out


def groups(
    mined: Sequence[QueryCandidates],
    corpus_texts: Sequence[str],
    *,
    hard: int,
    random_negatives: int,
    positives_per_query: int,
    seed: int,
) -> list[Group]:
    """Training groups: each sampled positive with hard negatives (top-ranked, not relevant),
    random corpus chunks and judged negatives of its query. A query with judged negatives only
    (CoSQA's labelled pairs) gives a group without a positive, trained pointwise."""
    rng = random.Random(seed)
    out: list[Group] = []
    for item in mined:
        hard_pool = [c.text for c in item.candidates if not c.relevant]
        positives = list(item.positives)
        rng.shuffle(positives)
        if not positives and item.negatives:
            out.append(Group(item.query, item.negatives[:2], (0,) * len(item.negatives[:2])))
            continue
        for positive in positives[:positives_per_query]:
            negatives = list(item.negatives[:1])
            negatives += rng.sample(hard_pool, min(hard, len(hard_pool)))
            negatives += rng.sample(list(corpus_texts), random_negatives)
            out.append(Group(item.query, (positive, *negatives), (1,) + (0,) * len(negatives)))
    return out


def check_usable(name: str, mined: Sequence[QueryCandidates], made: Sequence[Group]) -> None:
    """Stop early, with a clear message, when a folder gives nothing to learn from."""
    if not any(1 in g.labels for g in made):
        raise NoTrainingDataError(
            f"{name}: no positive pairs (no query has a relevant document in the corpus); "
            "check qrels/train.tsv, or use --from-corpus for unlabelled notes."
        )
    if not any(len(g.texts) > 1 for g in made):
        raise NoTrainingDataError(f"{name}: no usable negatives among {len(mined)} queries.")
