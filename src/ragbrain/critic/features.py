"""Cheap features the cross-encoder does not see: lexical ones (IDF overlap, BM25, static
cosine) of each (query, chunk) pair, and list ones that place a chunk among the other
candidates the retriever found for the same query."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

#: Names of the feature columns, in the order ``features`` returns them (after the model logit).
FEATURE_NAMES = ("idf_overlap", "bm25", "static_cosine", "log_passage_len")
_K1 = 1.2
_B = 0.75
_PASSAGE_TOKENS = 512  # features read further into the chunk than the cross-encoder does
#: List columns, from one query's candidates in the retriever's order (best first): the rank,
#: how far a chunk's logit and BM25 fall short of the list's best, and how spread the list is
#: in each. A chunk well behind the best of a list that has a clear winner is likely noise; in
#: a flat list (many relevant chunks, or none) the gaps say less, and the spreads tell which.
LIST_NAMES = ("rank", "logit_gap", "bm25_gap", "logit_spread", "bm25_spread")
#: The same two for the retriever's cosine distance (gap: how much further than the nearest).
DISTANCE_LIST_NAMES = ("distance_gap", "distance_spread")


def document_frequencies(token_ids: Iterable[Sequence[int]], vocab_size: int) -> torch.Tensor:
    """BM25 inverse document frequencies over the token vocabulary.

    Returns a float tensor of shape ``(vocab_size + 1,)``: one IDF per token id, then the mean
    document length in tokens as the last entry (BM25 needs it).
    """
    import torch

    df = torch.zeros(vocab_size, dtype=torch.float64)
    docs = 0
    total_len = 0
    for ids in token_ids:
        docs += 1
        total_len += len(ids)
        if ids:
            df[torch.tensor(sorted(set(ids)), dtype=torch.long)] += 1
    idf = torch.log((docs - df + 0.5) / (df + 0.5) + 1.0)
    avg_len = total_len / docs if docs else 1.0
    return torch.cat([idf, torch.tensor([avg_len], dtype=torch.float64)]).float()


class LexicalFeatures:
    """Feature rows for (query, passage) pairs from token ids, an IDF table and word vectors."""

    def __init__(self, idf_table: torch.Tensor, word_vectors: torch.Tensor) -> None:
        """``idf_table`` comes from ``document_frequencies``; ``word_vectors`` is the encoder's
        input embedding matrix (vocab_size x hidden)."""
        self.idf = idf_table[:-1]
        self.avg_len = max(float(idf_table[-1]), 1.0)
        self.word_vectors = word_vectors

    def _bag(self, ids: Sequence[int]) -> torch.Tensor:
        import torch

        if not ids:
            return torch.zeros(self.word_vectors.shape[1])
        index = torch.tensor(ids, dtype=torch.long)
        return (self.idf[index, None] * self.word_vectors[index]).sum(dim=0)

    def rows(self, query_ids: Sequence[int], passages_ids: Sequence[Sequence[int]]) -> torch.Tensor:
        """One row of ``FEATURE_NAMES`` values per passage, shape (n, len(FEATURE_NAMES))."""
        import torch

        query_set = sorted(set(query_ids))
        q_idf = {t: float(self.idf[t]) for t in query_set}
        q_total = sum(q_idf.values()) or 1.0
        q_vec = self._bag(query_ids)
        rows = []
        for all_ids in passages_ids:
            ids = all_ids[:_PASSAGE_TOKENS]
            counts: dict[int, int] = {}
            for t in ids:
                counts[t] = counts.get(t, 0) + 1
            overlap = sum(w for t, w in q_idf.items() if t in counts) / q_total
            norm = _K1 * (1 - _B + _B * len(ids) / self.avg_len)
            bm25 = sum(
                w * counts[t] * (_K1 + 1) / (counts[t] + norm)
                for t, w in q_idf.items()
                if t in counts
            )
            p_vec = self._bag(ids)
            cosine = float(torch.nn.functional.cosine_similarity(q_vec, p_vec, dim=0))
            rows.append([overlap, bm25 / q_total, cosine, math.log1p(len(ids))])
        return torch.tensor(rows, dtype=torch.float32).reshape(len(rows), len(FEATURE_NAMES))


def list_columns(x: torch.Tensor, columns: Sequence[str]) -> torch.Tensor:
    """The list columns of one query's candidates.

    Args:
        x: One row per candidate, in the retriever's order (best first), with the columns
            named in ``columns``; these must include ``logit`` and ``bm25``.
        columns: The names of ``x``'s columns. With ``distance`` among them the result adds
            ``DISTANCE_LIST_NAMES``.

    Returns:
        Shape (n, len(LIST_NAMES)), or (n, len(LIST_NAMES) + len(DISTANCE_LIST_NAMES)).
    """
    import torch

    with_distance = "distance" in columns
    width = len(LIST_NAMES) + (len(DISTANCE_LIST_NAMES) if with_distance else 0)
    if len(x) == 0:
        return x.new_zeros((0, width))
    logit, bm25 = x[:, columns.index("logit")], x[:, columns.index("bm25")]
    rank = torch.log1p(torch.arange(len(x), dtype=x.dtype))
    out = [rank, logit - logit.max(), bm25 - bm25.max(), _spread(logit), _spread(bm25)]
    if with_distance:
        distance = x[:, columns.index("distance")]
        out += [distance - distance.min(), _spread(distance)]
    return torch.stack(out, dim=1)


def _spread(column: torch.Tensor) -> torch.Tensor:
    """The column's range, on every row."""
    return (column.max() - column.min()).expand(len(column))
