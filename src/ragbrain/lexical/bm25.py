"""Lucene BM25 scores as a term-major matrix, and the bm25s scorer that reads them."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

K1 = 1.2  # Lucene's defaults, as BEIR's BM25 baseline (Elasticsearch) uses
B = 0.75

IntArray = npt.NDArray[np.int32]


def idf(n_docs: int, df: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Lucene's BM25 IDF of terms held by ``df`` of ``n_docs`` chunks."""
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def score_matrix(
    flat: IntArray, indptr: npt.NDArray[np.int64], n_terms: int
) -> tuple[npt.NDArray[np.float32], IntArray, npt.NDArray[np.int64]]:
    """Lucene BM25 scores of every (term, chunk) pair, term-major (CSC, as bm25s stores them).

    Returns:
        ``data`` (scores), ``docs`` (chunk positions) and ``term_ptr``: term ``t``'s chunks are
        ``docs[term_ptr[t]:term_ptr[t+1]]``.
    """
    n_docs = len(indptr) - 1
    lengths = np.diff(indptr)
    if n_docs == 0 or len(flat) == 0:
        return np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(n_terms + 1, np.int64)
    doc_of = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    pairs, tf = np.unique(flat.astype(np.int64) * n_docs + doc_of, return_counts=True)
    terms, docs = pairs // n_docs, pairs % n_docs  # sorted by term, then chunk: CSC order
    df = np.bincount(terms, minlength=n_terms)
    weight = idf(n_docs, df)
    norm = K1 * (1 - B + B * lengths / max(float(lengths.mean()), 1e-9))
    data = weight[terms] * tf / (tf + norm[docs])
    term_ptr = np.concatenate([[0], np.cumsum(df)]).astype(np.int64)
    return data.astype(np.float32), docs.astype(np.int32), term_ptr


def bm25s_scorer(
    data: npt.NDArray[np.float32], docs: IntArray, term_ptr: npt.NDArray[np.int64], n_docs: int
) -> Any:
    """A ``bm25s.BM25`` that scores queries over an already built matrix."""
    import bm25s

    scorer = bm25s.BM25(k1=K1, b=B, method="lucene")
    scorer.scores = {"data": data, "indices": docs, "indptr": term_ptr, "num_docs": n_docs}
    scorer.nonoccurrence_array = None  # only BM25L and BM25+ use one; bm25s.index() sets it
    return scorer
