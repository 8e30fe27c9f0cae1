"""Leave-one-domain-out (LODO): every shared data set judged by a pipeline fit on the others.

For each data set of ``--data-root`` in turn (``ragbrain.evaluation.lodo.folds``: CMRC 2018
and DRCD held apart together), everything that learns here is fit on the other domains'
train/dev queries only, and the held-apart set's test queries are judged:

- the dense share of the score fusion (grid, best mean nDCG@10 of the hybrid top 10 on the fit
  sets);
- the critic's threshold for the shipped layer (the shipped rule: every fit set keeps >= 92%
  of its relevant candidates), and a refit of the critic's last layer with the
  ``benchmarks.critic_layers`` machinery (logistic, balanced rows, same rule);
- the abstention thresholds (``ragbrain.abstain``) on the fit sets' missing-answer scenario:
  the most answerless queries refused while every fit set refuses <= 5% of its answerable ones.

The critic's *encoder* is not retrained per fold: the shipped one saw SciFact train and
NFCorpus dev, so on those two sets the critic figures are not LODO, and the tables say so.
``--critic`` runs another critic folder's encoder instead, e.g. one trained without the
held-apart set (docs/quality.md: SciFact and NFCorpus that way).

Each query's candidates and the critic's per-pair inputs are read once and cached
(``benchmarks.lodo_data``); every variant is then a recombination: ablation (dense top 10,
+ hybrid, + adaptive depth, + gate and fallback, + critic), the fixes, the critic on its own
candidates (k = 10), the missing-answer scenario and its baseline (the 0.55 distance gate).

    python -m benchmarks.lodo [--data-root ../shared/data] [--test-queries 300]
        [--fit-queries 200] [--only SET ...] [--subcorpus SET=DOCS ...]
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import save, say
from benchmarks.lodo_data import Record, SetData, ensure_rows, load_role, rows_of, subcorpus
from ragbrain.lexical.fusion import DENSE_SHARE

if TYPE_CHECKING:
    import torch

    from ragbrain.critic.model import TransformerCritic
    from ragbrain.evaluation.lodo import Fold
    from ragbrain.evaluation.missing import MissingAnswer

#: Smallest first: a run cut short still has the small sets; CoSQA (20k docs) last.
ORDER = (
    "arcd_ret",
    "cmrc2018_ret",
    "iapp_th_ret",
    "drcd_ret",
    "nfcorpus",
    "scifact",
    "jaquad_ret",
    "cosqa",
)


def encoder_saw(critic: TransformerCritic) -> dict[str, str]:
    """The sets whose queries the critic's encoder was trained on, with the split (its
    ``training`` record: the shipped one saw SciFact train and NFCorpus dev)."""
    record = critic.calibration.get("training", {})
    return {
        name: str(entry["split"])
        for name, entry in record.items()
        if isinstance(entry, dict) and "split" in entry
    }


JUDGE_K = 10
DENSE_SHARES = (0.2, 0.3, 0.4)
MAX_FALSE_REFUSAL = 0.05
#: A sub-corpus holds every document judged for this many seeded test and fit queries (the
#: benchmark's queries are drawn from those), plus random others up to ``--subcorpus-docs``.
SUBCORPUS_QUERIES = (150, 80)
GRAPH_ABSTAIN = "shipped layer, LODO threshold, + abstention"
TWO_SIDED = "+ abstention, critic and distance only"
GRAPH_REFIT = "LODO layer refit, handed over as the graph does"
GRAPH_THRESHOLD = "shipped layer, LODO threshold, handed over as the graph does"
Scorer = Callable[[SetData, Record, Sequence[str]], list[float]]


def candidates(record: Record, removed: frozenset[str], dense_share: float) -> list[str]:
    """The hybrid ranking as ``hybrid_search`` builds it: each side's top ``CANDIDATES``
    (after the removed documents), fused by score (``fuse_scores``) with this dense share;
    the dense side counts only when trusted."""
    from ragbrain.lexical.fusion import CANDIDATES, fuse_scores

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


#: One scenario query's evidence: (answerable, critic's best score, best distance, BM25's
#: coverage of the query; 0 when BM25 found nothing).
EvidenceRow = tuple[bool, float, float, float]


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
    """A refit layer (``critic_layers.fit_linear``) over ``DISTANCE_LIST_INPUTS`` columns."""

    def score(data: SetData, record: Record, docs: Sequence[str]) -> list[float]:
        if not docs:
            return []
        x = full_columns(rows_of(data, record.id, docs), [record.distance[d] for d in docs])
        return [float(v) for v in layer(x).tolist()]

    return score


# --- fitting on a fold's other domains -------------------------------------------------------


def fit_dense_share(fit: Sequence[SetData]) -> tuple[float, dict[str, float]]:
    """The dense share whose hybrid top 10 has the best nDCG@10, averaged over the fit sets
    (ties: the one nearest the shipped ``DENSE_SHARE``)."""
    from ragbrain.evaluation.metrics import mean, ndcg_at_k

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


def fit_layer(
    fit: Sequence[SetData], weight: float, columns: int
) -> Callable[[torch.Tensor], torch.Tensor]:
    """The critic's last layer refit on the fit sets' judged lists (rows balanced per set),
    reading the first ``columns`` of ``DISTANCE_LIST_INPUTS``; its ``combiner`` (the
    ``calibration.json`` entry) rides on the returned scorer."""
    import torch

    from benchmarks.critic_layers import row_weights
    from ragbrain.critic.folder import DISTANCE_LIST_INPUTS
    from ragbrain.critic.training.layers import combine, fit_combiner

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
    from ragbrain.abstain import best_score

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


def fit_abstention(
    per_set: dict[str, list[EvidenceRow]], *, lexical: bool = True
) -> dict[str, Any]:
    """The thresholds (critic below, distance above, and with ``lexical`` BM25 coverage below)
    that refuse the most answerless queries (mean over the fit sets) while refusing <=
    ``MAX_FALSE_REFUSAL`` of every fit set's answerable ones; a query is refused when every
    side agrees nothing fits. Each grid holds a value that leaves its side out."""
    import numpy as np

    pooled = np.array([row[1:] for rows in per_set.values() for row in rows], dtype=float)
    steps = np.linspace(0, 1, 26)
    critic_grid = np.unique(np.r_[0.0, np.quantile(pooled[:, 0], steps), 1.0])
    distance_grid = np.unique(np.r_[0.0, np.quantile(pooled[:, 1], steps)])
    coverage_grid = np.array([2.0])  # above any coverage: the lexical side left out
    if lexical:
        coverage_grid = np.unique(np.r_[np.quantile(pooled[:, 2], steps), 2.0])
    grid = np.stack(np.meshgrid(critic_grid, distance_grid, coverage_grid, indexing="ij"), -1)
    grid = grid.reshape(-1, 3)
    recall = np.zeros(len(grid))
    worst = np.zeros(len(grid))
    for rows in per_set.values():
        a = np.array([row[1:] for row in rows], dtype=float)
        answerable = np.array([row[0] for row in rows], dtype=bool)
        refused = (
            (a[None, :, 0] < grid[:, None, 0])
            & (a[None, :, 1] > grid[:, None, 1])
            & (a[None, :, 2] < grid[:, None, 2])
        )
        worst = np.maximum(worst, refused[:, answerable].mean(1) if answerable.any() else 0.0)
        recall += (refused[:, ~answerable].mean(1) if (~answerable).any() else 0.0) / len(per_set)
    recall[worst > MAX_FALSE_REFUSAL] = -1.0
    i = int(np.argmax(recall))
    if recall[i] <= 0:
        return {
            "critic_below": 0.0,
            "distance_above": 2.0,
            "coverage_below": None,
            "refusal_recall": 0.0,
        }
    c, g, v = (float(x) for x in grid[i])
    return {
        "critic_below": c,
        "distance_above": g,
        "coverage_below": None if v > 1.0 else v,
        "refusal_recall": float(recall[i]),
        "false_refusal_worst": float(worst[i]),
    }


def fit_fold(fit: Sequence[SetData], critic: TransformerCritic) -> dict[str, Any]:
    """Everything a fold learns from its fit sets."""
    from ragbrain.critic.training.layers import choose_threshold
    from ragbrain.evaluation.missing import split_missing

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
    abstention = fit_abstention(evidence)
    return {
        "layer_layout": layout,
        "layer_nested": nested,
        "abstention_shipped": fit_abstention(graph),
        "abstention_two_sided": fit_abstention(evidence, lexical=False),
        "dense_share": weight,
        "dense_share_ndcg": weight_means,
        "shipped_layer_threshold": shipped_threshold,
        "refit_threshold": refit_threshold,
        "abstention": abstention,
        "_layer": layer,
        "_layers": layers,
        "_fit": fit,
    }


def ship_layer(folder: Path, fold: dict[str, Any], model: str, names: Sequence[str]) -> None:
    """Write the every-set fit's layer into ``folder`` as its distance layer for ``model``."""
    from ragbrain.critic.training.distance_layer import add_distance_layer

    layer = {
        "embedding_model": model,
        "threshold": fold["refit_threshold"],
        "combiner": fold["_layer"].combiner,
        "fit": {
            "by": "python -m benchmarks.lodo (every set's train/dev lists, rows balanced per set)",
            "sets": list(names),
            "layout": fold["layer_layout"],
            "dense_share": fold["dense_share"],
        },
    }
    add_distance_layer(folder, layer)
    say(f"wrote the {model} distance layer into {folder}")


def _layer_of(folder: Path, model: str) -> dict[str, Any]:
    """``folder``'s distance layer for ``model`` (a copy)."""
    from ragbrain.critic.folder import distance_layers, read_calibration

    layer = distance_layers(read_calibration(folder)).get(model)
    if layer is None:
        raise SystemExit(f"{folder} has no distance layer for {model}")
    return dict(layer)


def ship_threshold(
    folder: Path, fold: dict[str, Any], critic: TransformerCritic, model: str
) -> None:
    """Set the threshold of ``folder``'s distance layer for ``model`` (its weights kept) to
    the every-set fit's: each set's train/dev hybrid top 10 keeps >= 92% of its relevant
    candidates. The layer's ``dev`` figures (at the old threshold) move under ``fit``, and
    each set's figures at the new threshold go to ``threshold_fit``."""
    from ragbrain.critic.training.distance_layer import add_distance_layer
    from ragbrain.critic.training.keep_metrics import keep_stats

    old = _layer_of(folder, model)
    threshold = fold["shipped_layer_threshold"]
    per_set = {}
    for data in fold["_fit"]:
        scores, labels, _ = labelled_scores([data], fold["dense_share"], shipped_scorer(critic))
        stats = keep_stats(scores, labels, threshold)
        per_set[data.name] = {
            "queries": len(data.records),
            "relevant_kept": stats.relevant_kept,
            "irrelevant_dropped": stats.irrelevant_dropped,
        }
    layer = {k: v for k, v in old.items() if k != "dev"}
    if "dev" in old:  # the weights' own fit, and its figures at the threshold it had then
        layer["fit"] = {
            "weights": "fit on the critic's own dev lists (see the calibration's `recalibrated`)",
            "dev_threshold": old["threshold"],
            "dev": old["dev"],
        }
    layer |= {
        "threshold": threshold,
        "threshold_fit": {
            "by": "python -m benchmarks.lodo --ship-threshold (the layer's weights kept)",
            "rule": "every set's train/dev hybrid top 10 keeps >= 92% of its relevant candidates",
            "dense_share": fold["dense_share"],
            "sets": per_set,
        },
    }
    add_distance_layer(folder, layer)
    say(f"set the {model} distance layer's threshold in {folder} to {threshold:.4f}")


def ship_abstention(folder: Path, fold: dict[str, Any], model: str) -> None:
    """Write the every-set fit's abstention thresholds (the shipped layer's evidence on the
    missing-answer scenario of every set's train/dev queries) into ``folder``'s distance layer
    for ``model`` as its ``abstain`` record (``RetrievalContext.abstain`` reads it)."""
    from ragbrain.critic.training.distance_layer import add_distance_layer

    fitted = fold["abstention_shipped"]
    layer = _layer_of(folder, model)
    layer["abstain"] = {
        "critic_below": fitted["critic_below"],
        "distance_above": fitted["distance_above"],
        "coverage_below": fitted["coverage_below"],
        "fit": {
            "by": "python -m benchmarks.lodo --ship-abstention",
            "rule": "the most answerless queries refused (mean over the sets) while every set "
            f"refuses <= {MAX_FALSE_REFUSAL:.0%} of its answerable ones",
            "refusal_recall": fitted["refusal_recall"],
            "false_refusal_worst": fitted.get("false_refusal_worst"),
            "sets": [data.name for data in fold["_fit"]],
        },
    }
    add_distance_layer(folder, layer)
    say(f"wrote the {model} distance layer's abstention thresholds into {folder}")


def all_lists(data: SetData, scenario: MissingAnswer | None) -> dict[str, list[str]]:
    """Every (query, doc) pair any variant judges: hybrid top 10 for each dense share, with
    and without the scenario's removals."""
    removals = [frozenset()] + ([scenario.removed] if scenario else [])
    out: dict[str, list[str]] = {}
    for record, weight, removed in itertools.product(data.records, DENSE_SHARES, removals):
        docs = candidates(record, removed, weight)[:JUDGE_K]
        out[record.id] = list(dict.fromkeys([*out.get(record.id, []), *docs]))
    return out


# --- judging a held-apart set ----------------------------------------------------------------


def summary(returned: dict[str, list[str]], records: Sequence[Record]) -> dict[str, Any]:
    """nDCG@10, Recall@10, returned-set precision and recall, mean chunks, empty share."""
    from ragbrain.evaluation.metrics import (
        mean,
        ndcg_at_k,
        recall_at_k,
        set_precision,
        set_recall,
    )

    precisions = [p for r in records if (p := set_precision(returned[r.id], r.qrels)) is not None]
    return {
        "ndcg@10": mean([ndcg_at_k(returned[r.id], r.qrels) for r in records]),
        "recall@10": mean([recall_at_k(returned[r.id], r.qrels) for r in records]),
        "set_precision": mean(precisions),
        "set_recall": mean([set_recall(returned[r.id], r.qrels) for r in records]),
        "mean_returned": mean([float(len(returned[r.id])) for r in records]),
        "empty_share": mean([float(not returned[r.id]) for r in records]),
    }


def kept(docs: Sequence[str], scores: Sequence[float], threshold: float) -> list[str]:
    """The documents scoring at or above ``threshold``, in order."""
    from ragbrain.critic.base import keep_mask

    return [d for d, k in zip(docs, keep_mask(scores, threshold), strict=True) if k]


def graph_hand_over(
    docs: Sequence[str], scores: Sequence[float], threshold: float, depth: int
) -> list[str]:
    """What ``critic_filter`` hands over: the kept ones up to the depth, and past it those
    scored above the cut (``ragbrain.nodes.critic``)."""
    import math

    keep = [
        (d, s) for d, s in zip(docs, scores, strict=True) if not math.isnan(s) and s >= threshold
    ]
    return [d for d, _ in keep[:depth]] + [d for d, s in keep[depth:] if s > threshold]


def judge_set(
    data: SetData, fold: dict[str, Any], critic: TransformerCritic, removed: frozenset[str]
) -> dict[str, dict[str, list[str]]]:
    """What every configuration hands over for each test query (over the pruned store when
    ``removed`` is not empty)."""
    from ragbrain.abstain import AbstainThresholds, Evidence, hand_over, should_abstain
    from ragbrain.evaluation.missing import BASELINE_GATE, gate_refuses

    shipped, refit = shipped_scorer(critic), layer_scorer(fold["_layer"])
    w = fold["dense_share"]

    def rule(fitted: dict[str, Any]) -> AbstainThresholds:
        return AbstainThresholds(
            fitted["critic_below"],
            fitted["distance_above"],
            "LODO",
            coverage_below=fitted.get("coverage_below"),
        )

    thresholds, two_sided = rule(fold["abstention"]), rule(fold["abstention_two_sided"])
    out: dict[str, dict[str, list[str]]] = {}

    def put(config: str, query: str, docs: list[str]) -> None:
        out.setdefault(config, {})[query] = docs

    for r in data.records:
        dense, hybrid = dense_top(r, removed), candidates(r, removed, DENSE_SHARE)
        fitted = candidates(r, removed, w)
        put("dense top 10", r.id, dense)
        put("BM25 top 10", r.id, bm25_top(r, removed))
        put("+ hybrid (k=10)", r.id, hybrid[:10])
        put("+ adaptive depth", r.id, hybrid[: r.depth])
        left = [dist for d, dist in r.dense if d not in removed]
        best = left[0] if left else None
        put("dense top 10, gate 0.55", r.id, [] if gate_refuses(best, BASELINE_GATE) else dense)
        # the shipped pipeline: the critic judges the adaptive-depth hybrid list
        own = hybrid[: r.depth]
        put("+ critic (default)", r.id, kept(own, shipped(data, r, own), critic.threshold))
        ten = hybrid[:JUDGE_K]
        s10 = shipped(data, r, ten)
        put("default at k=10", r.id, kept(ten, s10, critic.threshold))
        # fix 1: judge 10, hand over at most the depth
        put("judge 10, hand over <= depth", r.id, kept(ten, s10, critic.threshold)[: r.depth])
        # fix 2: + the LODO fusion weight
        ften = fitted[:JUDGE_K]
        fs = shipped(data, r, ften)
        put("+ LODO fusion weight", r.id, kept(ften, fs, critic.threshold)[: r.depth])
        put(
            "+ LODO threshold",
            r.id,
            kept(ften, fs, fold["shipped_layer_threshold"])[: r.depth],
        )
        cut = fold["shipped_layer_threshold"]
        put(GRAPH_THRESHOLD, r.id, graph_hand_over(ften, fs, cut, r.depth))
        rs = refit(data, r, ften)
        put("+ LODO layer refit", r.id, kept(ften, rs, fold["refit_threshold"])[: r.depth])
        put(GRAPH_REFIT, r.id, graph_hand_over(ften, rs, fold["refit_threshold"], r.depth))
        distance = min((r.distance[d] for d in ften), default=None)
        evidence = Evidence(distance, rs, len(ften), bm25_coverage=coverage(r, removed))
        abstain, _ = should_abstain(evidence, thresholds)
        chosen = hand_over(rs, fold["refit_threshold"], r.depth, abstain=abstain)
        put("+ abstention (proposed)", r.id, [ften[i] for i in chosen])
        abstain, _ = should_abstain(evidence, two_sided)
        chosen = hand_over(rs, fold["refit_threshold"], r.depth, abstain=abstain)
        put(TWO_SIDED, r.id, [ften[i] for i in chosen])
        put("fitted hybrid (k=10, critic off)", r.id, ften)
        # the graph's hand-over (shipped layer at the LODO threshold), the abstention rule added
        evidence = Evidence(distance, fs, len(ften), bm25_coverage=coverage(r, removed))
        abstain, _ = should_abstain(evidence, rule(fold["abstention_shipped"]))
        handed = graph_hand_over(ften, fs, fold["shipped_layer_threshold"], r.depth)
        put(GRAPH_ABSTAIN, r.id, [] if abstain else handed)
    return out


def critic_own(
    data: SetData, fold: dict[str, Any], critic: TransformerCritic
) -> dict[str, dict[str, float]]:
    """The critic on its own candidates (the hybrid top 10, critic off vs on, same run)."""
    from ragbrain.critic.training.keep_metrics import keep_stats, roc_auc

    shipped, refit = shipped_scorer(critic), layer_scorer(fold["_layer"])
    variants: dict[str, tuple[Scorer, float, float]] = {
        "shipped layer and threshold": (shipped, DENSE_SHARE, critic.threshold),
        "shipped layer, LODO threshold": (
            shipped,
            fold["dense_share"],
            fold["shipped_layer_threshold"],
        ),
        "LODO layer refit": (refit, fold["dense_share"], fold["refit_threshold"]),
    }
    from ragbrain.critic.training.layers import choose_threshold

    for layout, layer in fold["_layers"].items():  # both layouts, whichever the fold chose
        scorer = layer_scorer(layer)
        weight = fold["dense_share"]
        threshold, _ = choose_threshold(*labelled_scores(fold["_fit"], weight, scorer), 0.92)
        variants[f"LODO refit, {layout} columns"] = (scorer, fold["dense_share"], threshold)
    out = {}
    for name, (scorer, weight, threshold) in variants.items():
        scores: list[float] = []
        labels: list[bool] = []
        for r in data.records:
            docs = candidates(r, frozenset(), weight)[:JUDGE_K]
            scores += scorer(data, r, docs)
            labels += [d in r.relevant for d in docs]
        stats = keep_stats(scores, labels, threshold)
        out[name] = {
            "relevant_kept": stats.relevant_kept,
            "irrelevant_dropped": stats.irrelevant_dropped,
            "auc": roc_auc(scores, labels),
            "threshold": threshold,
        }
    return out


def held_out(
    data: SetData, fold: dict[str, Any], critic: TransformerCritic, scenario: MissingAnswer
) -> dict[str, Any]:
    """Ablation, fixes, the critic on its own candidates and the missing-answer scenario."""
    from ragbrain.evaluation.missing import refusal_stats

    normal = judge_set(data, fold, critic, frozenset())
    table = {name: summary(returned, data.records) for name, returned in normal.items()}
    missing = judge_set(data, fold, critic, scenario.removed)
    answerable = [r for r in data.records if r.id in scenario.answerable]
    refusals = {
        name: {
            **refusal_stats(returned, scenario).as_dict(),
            "answerable_ndcg@10": summary(returned, answerable)["ndcg@10"],
        }
        for name, returned in missing.items()
    }
    evidence = {
        "refit critic, hybrid top 10": evidence_auc(
            evidence_rows(data, scenario, fold["dense_share"], layer_scorer(fold["_layer"]))
        ),
        "shipped layer, hybrid top 10": evidence_auc(
            evidence_rows(data, scenario, fold["dense_share"], shipped_scorer(critic))
        ),
    }
    return {
        "queries": len(data.records),
        "evidence_auc": evidence,
        "ablation": table,
        "critic_own_candidates": critic_own(data, fold, critic),
        "missing_answer": {
            "unanswerable": len(scenario.unanswerable),
            "answerable": len(scenario.answerable),
            "removed_documents": len(scenario.removed),
            "configs": refusals,
        },
    }


def set_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the options that pick the sets and their queries (``load_sets`` reads them)."""
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument("--test-queries", type=int, default=300)
    parser.add_argument("--fit-queries", type=int, default=200)
    parser.add_argument("--only", nargs="*", default=None, help="Data sets to include.")
    parser.add_argument(
        "--subcorpus",
        nargs="*",
        default=[],
        metavar="SET=DOCS",
        help="Sets judged on a smaller corpus of DOCS documents "
        "(benchmarks.lodo_data.subcorpus): too big to embed on this machine.",
    )
    parser.add_argument(
        "--embedding",
        default="minilm",
        choices=("minilm", "e5-small"),
        help="The stores' embedding model (results/lodo.* for minilm, results/lodo-e5.* else).",
    )
    return parser


def _arguments() -> argparse.Namespace:
    """The command line."""
    parser = set_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument(
        "--name", default=None, help="Results file name (default lodo, or lodo-e5 for e5-small)."
    )
    parser.add_argument(
        "--critic",
        type=Path,
        default=None,
        help="The critic folder whose encoder judges (default: the shipped one); e.g. one "
        "trained without the held-apart set, so its row is LODO for the encoder too.",
    )
    parser.add_argument(
        "--ship-layer",
        type=Path,
        default=None,
        metavar="CRITIC",
        help="Write the layer fit on every set (columns chosen LODO-nested, threshold by the "
        "shipped rule) into this critic folder as its distance layer for the stores' model.",
    )
    parser.add_argument(
        "--ship-threshold",
        type=Path,
        default=None,
        metavar="CRITIC",
        help="Set the threshold of this critic folder's distance layer for the stores' model "
        "(its weights kept) to the one fit on every set by the shipped rule.",
    )
    parser.add_argument(
        "--ship-abstention",
        type=Path,
        default=None,
        metavar="CRITIC",
        help="Write the abstention thresholds fit on every set (the shipped layer's evidence) "
        "into this critic folder's distance layer for the stores' model.",
    )
    return parser.parse_args()


def load_sets(
    args: argparse.Namespace, critic: TransformerCritic, model: str
) -> tuple[list[str], dict[str, list[str]], dict[str, SetData], dict[str, SetData]]:
    """The sets of ``args`` (``--data-root``, ``--only``, ``--subcorpus``, the query counts)
    in ``ORDER``, their splits, and each one's sampled test and fit records (cached)."""
    from ragbrain.evaluation.lodo import data_sets, splits_of

    sub_docs = {n: int(d) for n, _, d in (item.partition("=") for item in args.subcorpus)}
    found = data_sets(args.data_root)
    names = [n for n in ORDER if n in found and (args.only is None or n in args.only)]
    splits = {n: splits_of(found[n]) for n in names}
    test: dict[str, SetData] = {}
    fit: dict[str, SetData] = {}
    for name in names:
        fit_splits = [s for s in ("train", "dev") if s in splits[name]]
        root = args.data_root
        if name in sub_docs:
            sampled: list[tuple[Sequence[str], int]] = [
                (["test"], SUBCORPUS_QUERIES[0]),
                (fit_splits, SUBCORPUS_QUERIES[1]),
            ]
            root = subcorpus(root, name, sampled, sub_docs[name])
        test[name] = load_role(root, name, ["test"], args.test_queries, critic, model=model)
        fit[name] = load_role(root, name, fit_splits, args.fit_queries, critic, model=model)
    return names, splits, test, fit


def main() -> None:
    """Fit each fold, judge its held-apart set, write results/lodo.{json,md}."""
    args = _arguments()
    sub_docs = {n: int(d) for n, _, d in (item.partition("=") for item in args.subcorpus)}

    from ragbrain.critic.folder import default_critic_path
    from ragbrain.critic.model import TransformerCritic
    from ragbrain.embeddings import EMBEDDING_CHOICES
    from ragbrain.evaluation.lodo import folds
    from ragbrain.evaluation.missing import split_missing

    model = EMBEDDING_CHOICES[args.embedding]
    critic = TransformerCritic(args.critic or default_critic_path()).for_model(model)
    saw = encoder_saw(critic)
    names, splits, test, fit = load_sets(args, critic, model)
    scenarios: dict[str, MissingAnswer] = {}
    for name in names:
        scenarios[name] = split_missing(
            {r.id: r.qrels for r in test[name].records}, [r.id for r in test[name].records]
        )
        fit_scenario = split_missing(
            {r.id: r.qrels for r in fit[name].records}, [r.id for r in fit[name].records]
        )
        ensure_rows(test[name], all_lists(test[name], scenarios[name]), critic)
        ensure_rows(fit[name], all_lists(fit[name], fit_scenario), critic)
    results: dict[str, Any] = {}
    fold_params: dict[str, Any] = {}
    all_folds: list[Fold] = folds(splits)
    for fold in all_folds:
        fit_sets = [fit[n] for n in fold.fit_sets]
        params = fit_fold(fit_sets, critic)
        fold_params[fold.held_out] = {
            **{k: v for k, v in params.items() if not k.startswith("_")},
            "fit_on": [list(p) for p in fold.fit_on],
        }
        results[fold.held_out] = {
            **held_out(test[fold.held_out], params, critic, scenarios[fold.held_out]),
            "encoder_saw": saw.get(fold.held_out),
        }
        say(f"{fold.held_out}: done")
    everything = fit_fold(list(fit.values()), critic)  # what would ship: fit on every set
    payload = {
        "subcorpus": {n: d for n, d in sub_docs.items() if n in names},
        "subcorpus_queries": SUBCORPUS_QUERIES,
        "test_queries": args.test_queries,
        "fit_queries": args.fit_queries,
        "embedding_model": model,
        "critic": "shipped" if args.critic is None else str(args.critic),
        "encoder_saw": saw,
        "folds": fold_params,
        "all_sets": {k: v for k, v in everything.items() if not k.startswith("_")},
        "results": results,
    }
    if args.ship_layer is not None:
        ship_layer(args.ship_layer, everything, model, [n for n in names])
    if args.ship_threshold is not None:
        ship_threshold(args.ship_threshold, everything, critic, model)
    if args.ship_abstention is not None:
        ship_abstention(args.ship_abstention, everything, model)
    from benchmarks.lodo_report import markdown

    name = args.name or ("lodo" if args.embedding == "minilm" else "lodo-e5")
    save(name, payload, markdown(payload))


if __name__ == "__main__":
    main()
