"""What a leave-one-domain-out fold learns from its other domains (``benchmarks.lodo``).

The pieces every LODO benchmark shares: the hybrid candidates of a cached query (over a store
with some documents removed, for the missing-answer scenario), the critic's scorers on them
(the shipped layer, or a layer refit here), and the fits: the score fusion's dense share, the
critic's last layer, its layout and threshold, and the abstention cuts. ``fit_fold`` runs
them all on a fold's fit sets; ``benchmarks.lodo`` judges the held-apart set with the result,
``benchmarks.lodo.ship`` writes the every-set fit into a critic folder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from benchmarks.lodo.data import Record, SetData, rows_of
from ragbrain.hybrid import DENSE_SHARE
from ragbrain.refusal.abstain import EvidenceRow, fit_thresholds

if TYPE_CHECKING:
    import torch

    from ragbrain import TransformerCritic
    from ragbrain.evaluation import MissingAnswer

JUDGE_K = 10
DENSE_SHARES = (0.2, 0.3, 0.4)
Scorer = Callable[[SetData, Record, Sequence[str]], list[float]]


def candidates(record: Record, removed: frozenset[str], dense_share: float) -> list[str]:
    """The hybrid ranking as ``hybrid_search`` builds it: each side's top ``CANDIDATES``
    (after the removed documents), fused by score (``fuse_scores``) with this dense share;
    the dense side counts only when trusted."""
    from ragbrain.hybrid import CANDIDATES, fuse_scores

    dense = [(d, v) for d, v in record.dense if d not in removed][:CANDIDATES]
    pairs = zip(record.bm25, record.bm25_scores, strict=True)
    bm25 = [(d, v) for d, v in pairs if d not in removed][:CANDIDATES]
    share = dense_share if record.trust else 0.0
    return fuse_scores(dense, bm25, sum(record.query_idf), share, record.bm25_power)


def coverage(record: Record, removed: frozenset[str]) -> float | None:
    """BM25's best hit over the (pruned) store, scored over the query's IDF sum (what
    ``fuse_scores`` weighs BM25 by); None when BM25 found nothing or the query has no known
    term."""
    idf = sum(record.query_idf)
    pairs = zip(record.bm25, record.bm25_scores, strict=True)
    best = next((v for d, v in pairs if d not in removed), None)
    return None if best is None or idf <= 0 else min(best / idf, 1.0)


def dense_top(record: Record, removed: frozenset[str], k: int = JUDGE_K) -> list[str]:
    """LangChain's dense top ``k`` over the (pruned) store."""
    return [d for d, _ in record.dense if d not in removed][:k]


def bm25_top(record: Record, removed: frozenset[str], k: int = JUDGE_K) -> list[str]:
    """BM25 alone, top ``k``."""
    return [d for d in record.bm25 if d not in removed][:k]


def full_columns(x: torch.Tensor, distances: Sequence[float]) -> torch.Tensor:
    """Per-pair inputs + distance + list columns: ``DISTANCE_LIST_INPUTS`` order."""
    import torch

    from ragbrain.critic.features import list_columns
    from ragbrain.critic.folder import DISTANCE_INPUTS

    x = torch.cat([x, torch.tensor(distances, dtype=x.dtype)[:, None]], dim=1)
    return torch.cat([x, list_columns(x, DISTANCE_INPUTS)], dim=1)


def evidence_auc(rows: Sequence[EvidenceRow]) -> dict[str, float]:
    """How well each side's evidence tells answerless from answerable queries (ROC AUC of
    "nothing fits": a low critic score, a far best hit, a BM25 hit that covers little)."""
    from ragbrain.critic.training.keep_metrics import roc_auc

    answerless = [not row[0] for row in rows]
    return {
        "critic": roc_auc([-row[1] for row in rows], answerless),
        "distance": roc_auc([row[2] for row in rows], answerless),
        "coverage": roc_auc([-row[3] for row in rows], answerless),
    }


def shipped_scorer(critic: TransformerCritic) -> Scorer:
    """The shipped critic's distance layer on one list."""

    def score(data: SetData, record: Record, docs: Sequence[str]) -> list[float]:
        if not docs:
            return []
        distances = [record.distance[d] for d in docs]
        return critic.combined(rows_of(data, record.id, docs), distances)

    return score


def layer_scorer(layer: Callable[[torch.Tensor], torch.Tensor]) -> Scorer:
    """A refit layer (``fit_layer``) over ``DISTANCE_LIST_INPUTS`` columns."""

    def score(data: SetData, record: Record, docs: Sequence[str]) -> list[float]:
        if not docs:
            return []
        x = full_columns(rows_of(data, record.id, docs), [record.distance[d] for d in docs])
        return [float(v) for v in layer(x).tolist()]

    return score


def fit_dense_share(fit: Sequence[SetData]) -> tuple[float, dict[str, float]]:
    """The dense share whose hybrid top 10 has the best nDCG@10, averaged over the fit sets
    (ties: the one nearest the shipped ``DENSE_SHARE``)."""
    from ragbrain.evaluation import mean, ndcg_at_k

    means = {}
    for weight in DENSE_SHARES:
        per_set = [
            mean([ndcg_at_k(candidates(r, frozenset(), weight), r.qrels) for r in d.records]) or 0.0
            for d in fit
        ]
        means[str(weight)] = sum(per_set) / len(per_set)
    best = max(DENSE_SHARES, key=lambda w: (means[str(w)], -abs(w - DENSE_SHARE)))
    return best, means


def judged(data: SetData, weight: float, removed: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Each query's judged list: the hybrid top ``JUDGE_K``."""
    return {r.id: candidates(r, removed, weight)[:JUDGE_K] for r in data.records}


def labelled_scores(
    fit: Sequence[SetData], weight: float, scorer: Scorer
) -> tuple[list[float], list[bool], list[str]]:
    """Scores, labels and set names of every judged candidate of the fit sets."""
    scores: list[float] = []
    labels: list[bool] = []
    sets: list[str] = []
    for data in fit:
        lists = judged(data, weight)
        for record in data.records:
            docs = lists[record.id]
            scores += scorer(data, record, docs)
            labels += [d in record.relevant for d in docs]
            sets += [data.name] * len(docs)
    return scores, labels, sets


def row_weights(sizes: Sequence[int], balanced: bool) -> torch.Tensor:
    """One weight per row of a mix: all 1 (pooled), or each set's rows summing to the same."""
    import torch

    if not balanced:
        return torch.ones(sum(sizes))
    return torch.cat([torch.full((n,), sum(sizes) / (len(sizes) * n)) for n in sizes])


def fit_layer(
    fit: Sequence[SetData], weight: float, columns: int
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The critic's last layer refit on the fit sets' judged lists (rows balanced per set),
    reading the first ``columns`` of ``DISTANCE_LIST_INPUTS``; its ``combiner`` (the
    ``calibration.json`` entry) rides on the returned scorer."""
    import torch

    from ragbrain.critic.combiner import combine
    from ragbrain.critic.folder import DISTANCE_LIST_INPUTS
    from ragbrain.critic.training.layers import fit_combiner

    xs, ys, sizes = [], [], []
    for data in fit:
        lists = judged(data, weight)
        n = 0
        for record in data.records:
            docs = lists[record.id]
            if not docs:
                continue
            dist = [record.distance[d] for d in docs]
            xs.append(full_columns(rows_of(data, record.id, docs), dist)[:, :columns])
            ys += [float(d in record.relevant) for d in docs]
            n += len(docs)
        sizes.append(n)
    names = DISTANCE_LIST_INPUTS[:columns]
    weights = row_weights(sizes, balanced=True)
    combiner = fit_combiner(torch.cat(xs), torch.tensor(ys), names, weights=weights)

    def layer(x: torch.Tensor) -> torch.Tensor:
        return combine(x[:, :columns], combiner)

    layer.combiner = combiner  # type: ignore[attr-defined]
    return layer


def layer_columns() -> dict[str, int]:
    """The refit layer's input layouts: every column, or the per-pair ones (no list columns)."""
    from ragbrain.critic.folder import DISTANCE_INPUTS, DISTANCE_LIST_INPUTS

    return {"list-aware": len(DISTANCE_LIST_INPUTS), "per-pair": len(DISTANCE_INPUTS)}


def choose_layout(fit: Sequence[SetData], weight: float) -> tuple[str, dict[str, Any]]:
    """Nested leave-one-set-out inside the fold: for each layout, each fit set is judged by a
    layer and threshold fit on the fold's other fit sets. The layout whose worst set keeps
    >= 90% of its relevant candidates and drops the most irrelevant ones on average wins
    (else the one with the best worst-case keep)."""
    from ragbrain.critic.training.keep_metrics import keep_stats
    from ragbrain.critic.training.layers import choose_threshold

    report: dict[str, Any] = {}
    for name, columns in layer_columns().items():
        kept, dropped = [], []
        for inner in fit:
            rest = [d for d in fit if d is not inner]
            scorer = layer_scorer(fit_layer(rest, weight, columns))
            scores, labels, sets = labelled_scores(rest, weight, scorer)
            threshold, _ = choose_threshold(scores, labels, sets, 0.92)
            s, y, _ = labelled_scores([inner], weight, scorer)
            stats = keep_stats(s, y, threshold)
            kept.append(stats.relevant_kept)
            dropped.append(stats.irrelevant_dropped)
        report[name] = {"worst_kept": min(kept), "mean_dropped": sum(dropped) / len(dropped)}
    passing = [n for n, r in report.items() if r["worst_kept"] >= 0.9]
    if passing:
        best = max(passing, key=lambda n: report[n]["mean_dropped"])
    else:
        best = max(report, key=lambda n: report[n]["worst_kept"])
    return best, report


def evidence_rows(
    data: SetData,
    scenario: MissingAnswer,
    weight: float,
    scorer: Scorer,
) -> list[EvidenceRow]:
    """Per scenario query: (answerable, the critic's best score, the best distance, BM25's
    coverage) of its judged list over the pruned store (the hybrid top ``JUDGE_K``, as the
    graph judges)."""
    from ragbrain.refusal.abstain import best_score

    out = []
    for record in data.records:
        if record.id not in scenario.answerable | scenario.unanswerable:
            continue
        docs = candidates(record, scenario.removed, weight)[:JUDGE_K]
        scores = scorer(data, record, docs)
        best = best_score(scores)
        distance = min((record.distance[d] for d in docs), default=2.0)
        lexical = coverage(record, scenario.removed) or 0.0
        answerable = record.id in scenario.answerable
        out.append((answerable, -1.0 if best is None else best, distance, lexical))
    return out


def fit_fold(fit: Sequence[SetData], critic: TransformerCritic) -> dict[str, Any]:
    """Everything a fold learns from its fit sets."""
    from ragbrain.critic.training.layers import choose_threshold
    from ragbrain.evaluation import split_missing

    weight, weight_means = fit_dense_share(fit)
    shipped = shipped_scorer(critic)
    scores, labels, sets = labelled_scores(fit, weight, shipped)
    shipped_threshold, _ = choose_threshold(scores, labels, sets, 0.92)
    layout, nested = choose_layout(fit, weight)
    layers = {name: fit_layer(fit, weight, n) for name, n in layer_columns().items()}
    layer = layers[layout]
    refit = layer_scorer(layer)
    scores, labels, sets = labelled_scores(fit, weight, refit)
    refit_threshold, _ = choose_threshold(scores, labels, sets, 0.92)
    evidence, graph = {}, {}
    for data in fit:
        scenario = split_missing(
            {r.id: r.qrels for r in data.records}, [r.id for r in data.records]
        )
        evidence[data.name] = evidence_rows(data, scenario, weight, refit)
        graph[data.name] = evidence_rows(data, scenario, weight, shipped)
    abstention = fit_thresholds(evidence)
    return {
        "layer_layout": layout,
        "layer_nested": nested,
        "abstention_shipped": fit_thresholds(graph),
        "abstention_two_sided": fit_thresholds(evidence, lexical=False),
        "dense_share": weight,
        "dense_share_ndcg": weight_means,
        "shipped_layer_threshold": shipped_threshold,
        "refit_threshold": refit_threshold,
        "abstention": abstention,
        "_layer": layer,
        "_layers": layers,
        "_fit": fit,
    }
