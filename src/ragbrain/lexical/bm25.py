"""Lucene BM25 scores as a term-major matrix, and the scorer that reads them as bm25s does."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

K1 = 1.2  # Lucene's defaults, as BEIR's BM25 baseline (Elasticsearch) uses
B = 0.75

IntArray = npt.NDArray[np.int32]


def idf(n_docs: int, df: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Lucene's BM25 IDF of terms held by ``df`` of ``n_docs`` chunks."""
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def score_matrix(
    flat: IntArray,
    indptr: npt.NDArray[np.int64],
    n_terms: int,
    overlaps: npt.NDArray[np.bool_] | None = None,
) -> tuple[npt.NDArray[np.float32], IntArray, npt.NDArray[np.int64]]:
    """Lucene BM25 scores of every (term, chunk) pair, term-major (CSC, as bm25s stores them).

    ``overlaps`` marks the term ids that do not count toward a chunk's length (a whole
    compound indexed beside its words, as Lucene's ``discountOverlaps`` leaves out a token at
    the position of another): a chunk full of ``os.path.join`` is not made longer by them.

    Returns:
        ``data`` (scores), ``docs`` (chunk positions) and ``term_ptr``: term ``t``'s chunks are
        ``docs[term_ptr[t]:term_ptr[t+1]]``.
    """
    n_docs = len(indptr) - 1
    lengths = np.diff(indptr)
    if n_docs == 0 or len(flat) == 0:
        return np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(n_terms + 1, np.int64)
    doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    if overlaps is not None and overlaps.any():
        lengths = np.bincount(doc_of[~overlaps[flat]], minlength=n_docs)
    pairs, tf = np.unique(flat.astype(np.int64) * n_docs + doc_of, return_counts=True)
    terms, docs = pairs // n_docs, pairs % n_docs  # sorted by term, then chunk: CSC order
    df = np.bincount(terms, minlength=n_terms)
    weight = idf(n_docs, df)
    norm = K1 * (1 - B + B * lengths / max(float(lengths.mean()), 1e-9))
    data = weight[terms] * tf / (tf + norm[docs])
    term_ptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
    return data.astype(np.float32), docs.astype(np.int32), term_ptr


class Bm25Scorer:
    """Query scores over a ``score_matrix``, computed as ``bm25s.BM25.get_scores_from_ids``
    computes them on its numpy backend (float32, one ``np.add.at`` per query term, in the
    query's order: the same numbers, tests compare them) without importing bm25s, whose
    import of scipy costs about 0.3 s of a cold query."""

    def __init__(
        self,
        data: npt.NDArray[np.float32],
        docs: IntArray,
        term_ptr: npt.NDArray[np.int64],
        n_docs: int,
    ) -> None:
        self.data = data
        self.docs = docs
        self.term_ptr = term_ptr
        self.n_docs = n_docs

    def get_scores_from_ids(self, terms: Sequence[int]) -> npt.NDArray[np.float32]:
        """Every chunk's score for these term ids (a repeated term counts again).

        Raises:
            ValueError: A term id is outside the matrix (bm25s raises so too).
        """
        ids = np.asarray(terms, dtype=np.int32)
        if int(ids.max(initial=0)) >= len(self.term_ptr) - 1 or int(ids.min(initial=0)) < 0:
            raise ValueError(
                f"Term ids {sorted(set(ids.tolist()))} go beyond the index's "
                f"{len(self.term_ptr) - 1} terms."
            )
        scores = np.zeros(self.n_docs, dtype=np.float32)
        # A term repeated n times adds n times its scores, in one pass (a long question
        # repeats its words).
        distinct, times = np.unique(ids, return_counts=True)
        starts, ends = self.term_ptr[distinct], self.term_ptr[distinct + 1]
        for start, end, n in zip(starts, ends, times.tolist(), strict=True):
            part = self.data[start:end]
            np.add.at(scores, self.docs[start:end], part if n == 1 else part * np.float32(n))
        return scores
