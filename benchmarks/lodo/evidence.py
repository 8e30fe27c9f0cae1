"""The English critic, leave-one-domain-out: the evidence layer (``ragbrain.critic.evidence``)
fit on the other English sets, judged on the held-apart one, beside the cross-encoder.

For each English set in turn (SciFact, NFCorpus, CoSQA; all-MiniLM-L6-v2 stores), the fusion's
dense share, the layer and its threshold are fit on the other sets' train/dev lists only (the
hybrid top 10 the graph judges, rows balanced per set and class). The threshold keeps a
share of every fit set's relevant candidates; that share (``TARGETS``) is chosen inside the
fold by nested leave-one-set-out on the fit sets: the lowest share whose worst inner set
keeps >= 90%.

The held-apart set's test queries are then judged:

- the critic on its own candidates: relevant kept, irrelevant dropped, ROC AUC; beside it
  the cross-encoder critic (its shipped layer, threshold fit on the same fit sets by the
  shipped rule: every set keeps >= 92%), the cosine alone, and the evidence columns plus the
  cross-encoder's logit (what the encoder adds);
- what the graph hands over (``nodes.critic.handed_over``): nDCG@10 and recall, critic off
  against each critic;
- the strict level's evidence rule on the missing-answer scenario, with cuts fit on the fit
  sets' own scenario;
- the critic step's time for one query's list, p50, each critic in the same run.

``--ship`` writes the layer fit on all three sets (on the lists of the product's fusion,
``DENSE_SHARE``) into ``src/ragbrain/critic/evidence.json``.

    python -m benchmarks.lodo.evidence --data-root ../shared/data --test-queries 100 \\
        --fit-queries 60 --subcorpus scifact=2000 cosqa=2000 [--ship]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchmarks.common import save, say
from benchmarks.lodo import SUBCORPUS_QUERIES, graph_hand_over, shipped_critic_and_sets, summary
from benchmarks.lodo.data import Record, SetData, ensure_rows, subcorpus
from benchmarks.lodo.fit import (
    DENSE_SHARES,
    JUDGE_K,
    Scorer,
    candidates,
    evidence_rows,
    fit_dense_share,
    judged,
    labelled_scores,
    shipped_scorer,
)
from ragbrain.critic.evidence import COLUMNS, evidence_columns, probabilities, supports
from ragbrain.critic.handover import HandOverRule, shipped_rules
from ragbrain.hybrid import DENSE_SHARE
from ragbrain.refusal.abstain import fit_thresholds

if TYPE_CHECKING:
    from ragbrain.evaluation import MissingAnswer

ENGLISH = ("scifact", "nfcorpus", "cosqa")
#: Shares of every fit set's relevant candidates the threshold may keep (chosen nested).
TARGETS = (0.92, 0.95, 0.98)
WORST_KEPT = 0.90
SHIPPED_RULE = 0.92
LAYER_PATH = Path("src/ragbrain/critic/evidence.json")
#: The layer's L2 penalty per row of its fit (on standardized columns).
L2 = 5e-3


class Evidence:
    """Each set's lexical index, and the evidence columns of a query's list (cached)."""

    def __init__(self, indexes: dict[str, Any]) -> None:
        self.indexes = indexes
        self._support: dict[tuple[str, str, str], float] = {}

    def columns(self, data: SetData, record: Record, docs: Sequence[str]) -> np.ndarray:
        todo = [d for d in docs if (data.name, record.id, d) not in self._support]
        if todo:
            found = supports(self.indexes[data.name], record.text, [data.corpus[d] for d in todo])
            self._support.update(
                {(data.name, record.id, d): s for d, s in zip(todo, found, strict=True)}
            )
        support = [self._support[(data.name, record.id, d)] for d in docs]
        return evidence_columns([record.distance[d] for d in docs], support)


def fit_layer(
    fit: Sequence[SetData], weight: float, columns: Any, extra: Any = None
) -> dict[str, Any]:
    """A logistic layer over ``columns(data, record, docs)`` (plus ``extra`` columns) on the
    fit sets' judged lists, each set's rows and each class weighing the same
    (``critic.training.layers.fit_combiner``; its ``inputs`` name ``COLUMNS``)."""
    import torch

    from ragbrain.critic.training.layers import fit_combiner

    xs, ys, ws = [], [], []
    for data in fit:
        lists = judged(data, weight)
        x, y = [], []
        for r in data.records:
            docs = lists[r.id]
            if docs:
                block = columns(data, r, docs)
                if extra is not None:
                    block = np.c_[block, extra(data, r, docs)]
                x.append(block)
                y += [d in r.relevant for d in docs]
        labels = np.asarray(y, dtype=np.float64)
        positives = max(labels.sum(), 1.0)
        negatives = max(len(labels) - labels.sum(), 1.0)
        ws.append(np.where(labels == 1, 0.5 / positives, 0.5 / negatives))
        xs.append(np.concatenate(x))
        ys.append(labels)
    rows, targets = np.concatenate(xs), np.concatenate(ys)
    weights = np.concatenate(ws)
    names = [*COLUMNS, *(["logit"] if extra is not None else [])]
    return fit_combiner(
        torch.tensor(rows, dtype=torch.float32),
        torch.tensor(targets, dtype=torch.float32),
        names,
        l2=L2 / len(rows),
        weights=torch.tensor(weights / weights.mean(), dtype=torch.float32),
    )


def layer_scorer(layer: dict[str, Any], columns: Any, extra: Any = None) -> Scorer:
    def score(data: SetData, record: Record, docs: Sequence[str]) -> list[float]:
        if not docs:
            return []
        x = columns(data, record, docs)
        if extra is not None:
            x = np.c_[x, extra(data, record, docs)]
        return probabilities(x, layer)

    return score


def fit_critic(fit: Sequence[SetData], weight: float, ev: Evidence) -> dict[str, Any]:
    """The layer on ``fit``, its recall target chosen nested, and its threshold."""
    from ragbrain.critic.training.keep_metrics import keep_stats
    from ragbrain.critic.training.layers import choose_threshold

    nested: dict[str, float] = {}
    for target in TARGETS:
        worst = 1.0
        for inner in fit:
            rest = [d for d in fit if d is not inner]
            scorer = layer_scorer(fit_layer(rest, weight, ev.columns), ev.columns)
            threshold, _ = choose_threshold(*labelled_scores(rest, weight, scorer), target)
            s, y, _ = labelled_scores([inner], weight, scorer)
            worst = min(worst, keep_stats(s, y, threshold).relevant_kept)
        nested[str(target)] = worst
    passing = [t for t in TARGETS if nested[str(t)] >= WORST_KEPT]
    target = passing[0] if passing else max(TARGETS, key=lambda t: nested[str(t)])
    layer = fit_layer(fit, weight, ev.columns)
    scored = labelled_scores(fit, weight, layer_scorer(layer, ev.columns))
    threshold, per_set = choose_threshold(*scored, target)
    return {
        "layer": layer,
        "threshold": threshold,
        "target": target,
        "nested_worst_kept": nested,
        "fit_sets": per_set,
    }


def own_candidates(
    data: SetData, weight: float, scorers: dict[str, tuple[Scorer, float]]
) -> dict[str, dict[str, float]]:
    from ragbrain.critic.training.keep_metrics import keep_stats, roc_auc

    out = {}
    for name, (scorer, threshold) in scorers.items():
        scores, labels, _ = labelled_scores([data], weight, scorer)
        stats = keep_stats(scores, labels, threshold)
        out[name] = {
            "relevant_kept": stats.relevant_kept,
            "irrelevant_dropped": stats.irrelevant_dropped,
            "auc": roc_auc(scores, labels),
            "threshold": threshold,
        }
    return out


#: Hand-over ratios judged beside the shipped one (``ragbrain.critic.handover``).
HANDOVER_RATIOS = (0.1, 0.2, 0.3)
HANDOVER_CONFIDENT = (0.7, 0.8, 0.9)


def handed_over(
    data: SetData,
    weight: float,
    scorers: dict[str, tuple[Scorer, float]],
    narrowed: dict[str, tuple[str, HandOverRule]] | None = None,
) -> dict[str, Any]:
    """What the graph hands over with each scorer; ``narrowed``: a name for a scorer's lists
    narrowed by a hand-over rule (``ragbrain.critic.handover``), and the scorer and rule."""
    from benchmarks.lodo.fit import dense_top

    off = "critic off (adaptive depth)"
    hybrid = "hybrid top 10 (critic off)"
    returned: dict[str, dict[str, list[str]]] = {"dense top 10": {}, hybrid: {}, off: {}}
    lists = judged(data, weight)
    for r in data.records:
        docs = lists[r.id]
        returned["dense top 10"][r.id] = dense_top(r, frozenset())
        returned[hybrid][r.id] = docs
        returned[off][r.id] = docs[: r.depth]
        for name, (scorer, threshold) in scorers.items():
            scores = scorer(data, r, docs)
            chosen = graph_hand_over(docs, scores, threshold, r.depth)
            returned.setdefault(name, {})[r.id] = chosen
            for label, (base, rule) in (narrowed or {}).items():
                if base == name:
                    narrow_ = graph_hand_over(docs, scores, threshold, r.depth, rule)
                    returned.setdefault(label, {})[r.id] = narrow_
    return {name: summary(lists_, data.records) for name, lists_ in returned.items()}


def strict_rule(
    test: SetData, fit: Sequence[SetData], weight: float, scorer: Scorer
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The strict level's evidence cuts fit on ``fit``'s scenario, and what they refuse of
    ``test``'s."""
    from ragbrain.refusal.abstain import AbstainThresholds, Evidence, should_abstain

    per_set = {d.name: evidence_rows(d, scenario_of(d), weight, scorer) for d in fit}
    fitted = fit_thresholds(per_set)
    cuts = AbstainThresholds(
        fitted["critic_below"],
        fitted["distance_above"],
        "LODO",
        coverage_below=fitted.get("coverage_below"),
    )
    rows = evidence_rows(test, scenario_of(test), weight, scorer)
    refused = [
        should_abstain(Evidence(distance, [best], 1, bm25_coverage=cover), cuts)[0]
        for _, best, distance, cover in rows
    ]
    answerless = [r for r, (answerable, *_) in zip(refused, rows, strict=True) if not answerable]
    answerable = [r for r, (ok, *_) in zip(refused, rows, strict=True) if ok]
    return fitted, {
        "answerless_refused": sum(answerless) / max(len(answerless), 1),
        "answerable_refused": sum(answerable) / max(len(answerable), 1),
        "answerless": len(answerless),
        "answerable": len(answerable),
    }


def scenario_of(data: SetData) -> MissingAnswer:
    """The missing-answer scenario of ``data``'s sampled queries."""
    from ragbrain.evaluation import split_missing

    return split_missing({r.id: r.qrels for r in data.records}, [r.id for r in data.records])


def step_times(data: SetData, critics: dict[str, Any], queries: int = 30) -> dict[str, float]:
    """p50 ms of one query's ``score`` call (its list of up to 10 chunks), each critic on the
    same queries, interleaved."""
    times: dict[str, list[float]] = {name: [] for name in critics}
    lists = judged(data, DENSE_SHARE)
    for r in data.records[:queries]:
        docs = lists[r.id]
        texts, distances = [data.corpus[d] for d in docs], [r.distance[d] for d in docs]
        for name, critic in critics.items():
            started = time.perf_counter()
            critic.score(r.text, texts, distances)
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(v) for name, v in times.items()}


def load_english(
    args: argparse.Namespace,
) -> tuple[str, Any, list[str], dict[str, SetData], dict[str, SetData], dict[str, Any]]:
    """The English sets of ``args`` (``set_arguments``; all-MiniLM-L6-v2 stores): the model,
    the cross-encoder critic, the set names, their test and fit data (the cross-encoder's
    rows of every list judged cached) and each store's lexical index."""
    from ragbrain.evaluation import corpus_store, load_split
    from ragbrain.models.embeddings import embeddings_for
    from ragbrain.store.lexical import sync_lexical

    args.only = [n for n in (args.only or ENGLISH) if n in ENGLISH]
    args.embedding = "minilm"
    model, critic, (names, splits, test, fit) = shipped_critic_and_sets(args)
    sub = {n: int(d) for n, _, d in (item.partition("=") for item in args.subcorpus)}
    indexes = {}
    for name in names:
        root = args.data_root
        if name in sub:
            fit_splits = [s for s in ("train", "dev") if s in splits[name]]
            roles: list[tuple[Sequence[str], int]] = [
                (["test"], SUBCORPUS_QUERIES[0]),
                (fit_splits, SUBCORPUS_QUERIES[1]),
            ]
            root = subcorpus(root, name, roles, sub[name])
        split = load_split(root / name, "test", drop_unknown_docs=True)
        store = corpus_store(split, embeddings_for(model))
        indexes[name] = sync_lexical(store)
        for data in (test[name], fit[name]):  # the cross-encoder's rows of every list judged
            removed = scenario_of(data).removed
            judged: dict[str, list[str]] = {r.id: [] for r in data.records}
            for weight, r in itertools.product(DENSE_SHARES, data.records):
                judged[r.id] += candidates(r, frozenset(), weight)[:JUDGE_K]
                judged[r.id] += candidates(r, removed, weight)[:JUDGE_K]
            ensure_rows(data, {q: list(dict.fromkeys(d)) for q, d in judged.items()}, critic)
    return model, critic, names, test, fit, indexes


def main() -> None:
    from benchmarks.lodo import set_arguments
    from ragbrain.critic.evidence import EvidenceCritic

    parser = set_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--ship", action="store_true", help=f"Write {LAYER_PATH}.")
    args = parser.parse_args()
    model, critic, names, test, fit, indexes = load_english(args)
    sub = {n: int(d) for n, _, d in (item.partition("=") for item in args.subcorpus)}
    ev = Evidence(indexes)
    shipped = shipped_scorer(critic)

    def logit(data: SetData, record: Record, docs: Sequence[str]) -> np.ndarray:
        return np.asarray([[data.rows[f"{record.id}\t{d}"][0]] for d in docs])

    from ragbrain.critic.training.layers import choose_threshold

    results: dict[str, Any] = {}
    folds: dict[str, Any] = {}
    for held in names:
        fit_sets = [fit[n] for n in names if n != held]
        weight, _ = fit_dense_share(fit_sets)
        fitted = fit_critic(fit_sets, weight, ev)
        evidence = layer_scorer(fitted["layer"], ev.columns)
        cross, _ = choose_threshold(*labelled_scores(fit_sets, weight, shipped), SHIPPED_RULE)
        with_logit = fit_layer(fit_sets, weight, ev.columns, logit)
        plus = layer_scorer(with_logit, ev.columns, logit)
        plus_cut, _ = choose_threshold(*labelled_scores(fit_sets, weight, plus), fitted["target"])

        def cosine(data: SetData, record: Record, docs: Sequence[str]) -> list[float]:
            return [1.0 - record.distance[d] for d in docs]

        def logit_alone(data: SetData, record: Record, docs: Sequence[str]) -> list[float]:
            return [float(v) for v in logit(data, record, docs)[:, 0]]

        scorers = {
            "evidence critic (ships)": (evidence, fitted["threshold"]),
            "cross-encoder critic": (shipped, cross),
            "evidence + cross-encoder logit": (plus, plus_cut),
            "cosine alone (no cut)": (cosine, 0.0),
            "cross-encoder logit alone (no cut)": (logit_alone, -math.inf),
        }
        abstain_fit, strict = strict_rule(test[held], fit_sets, weight, evidence)
        _, strict_cross = strict_rule(test[held], fit_sets, weight, shipped)
        two = {k: scorers[k] for k in list(scorers)[:2]}
        rule = shipped_rules().get("evidence")
        ratios = sorted({*HANDOVER_RATIOS, *([rule.ratio] if rule is not None else [])})
        narrowed = {
            f"evidence critic + hand-over rule (ratio {r:.2f})": (
                "evidence critic (ships)",
                HandOverRule(r, "LODO"),
            )
            for r in ratios
        }
        for confident in HANDOVER_CONFIDENT:
            narrowed[f"evidence critic + hand-over rule (ratio 0.50, best >= {confident:.2f})"] = (
                "evidence critic (ships)",
                HandOverRule(0.5, "LODO", confident),
            )
        results[held] = {
            "own_candidates": own_candidates(test[held], weight, scorers),
            "handed_over": handed_over(test[held], weight, two, narrowed),
            "strict_evidence_rule": {
                "evidence critic": strict,
                "cross-encoder critic": strict_cross,
            },
        }
        folds[held] = {**fitted, "abstain": abstain_fit, "dense_share": weight}
        say(f"{held}: done")
    everything = [fit[n] for n in names]
    shipping = fit_critic(everything, DENSE_SHARE, ev)  # the lists the product judges
    abstain = fit_thresholds(
        {
            d.name: evidence_rows(
                d, scenario_of(d), DENSE_SHARE, layer_scorer(shipping["layer"], ev.columns)
            )
            for d in everything
        }
    )
    layer = {
        "embedding_model": model,
        **shipping["layer"],
        "threshold": shipping["threshold"],
        "fit": {
            "by": "python -m benchmarks.lodo.evidence --ship",
            "sets": {d.name: d.role for d in everything},
            "queries": {d.name: len(d.records) for d in everything},
            "rule": f"every set keeps >= {shipping['target']:.0%} of its relevant candidates "
            "(the share chosen by nested leave-one-set-out)",
            "sets_at_threshold": shipping["fit_sets"],
        },
        "abstain": {
            "critic_below": abstain["critic_below"],
            "distance_above": abstain["distance_above"],
            "coverage_below": abstain["coverage_below"],
            "fit": {
                "by": "python -m benchmarks.lodo.evidence --ship",
                "refusal_recall": abstain["refusal_recall"],
                "false_refusal_worst": abstain.get("false_refusal_worst"),
            },
        },
    }
    critics: dict[str, Any] = {"cross-encoder critic": critic}
    if LAYER_PATH.is_file() or args.ship:
        if args.ship:
            LAYER_PATH.write_text(json.dumps(layer, indent=1) + "\n", encoding="utf-8")
            say(f"wrote {LAYER_PATH}")
        critics["evidence critic"] = EvidenceCritic(LAYER_PATH, lexical=indexes[names[0]])
    timing = step_times(test[names[0]], critics)
    payload = {
        "embedding_model": model,
        "test_queries": args.test_queries,
        "fit_queries": args.fit_queries,
        "subcorpus": sub,
        "targets": list(TARGETS),
        "folds": folds,
        "results": results,
        "shipped_layer": layer,
        "step_ms_p50": {"set": names[0], **timing},
    }
    save("english-critic", payload, markdown(payload))


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# The English critic, leave-one-domain-out",
        "",
        "Each set judged by a critic fit on the other English sets' train/dev lists "
        f"({payload['test_queries']} test queries a set; sub-corpora {payload['subcorpus']}). "
        "Command: `python -m benchmarks.lodo.evidence --data-root ../shared/data "
        "--test-queries 100 --fit-queries 60 --subcorpus scifact=2000 cosqa=2000`.",
        "",
        "## The critic on its own candidates (hybrid top 10): relevant kept / irrelevant "
        "dropped / ROC AUC",
        "",
    ]
    sets = list(payload["results"])
    lines += ["| critic | " + " | ".join(sets) + " |", "|---" * (len(sets) + 1) + "|"]
    first = payload["results"][sets[0]]["own_candidates"]
    for name in first:
        cells = []
        for s in sets:
            v = payload["results"][s]["own_candidates"][name]
            cells.append(
                f"{v['relevant_kept']:.1%} / {v['irrelevant_dropped']:.1%} / {v['auc']:.3f}"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## What the graph hands over: nDCG@10 / Recall@10 / set precision / chunks",
        "",
        "Each fold's lists fused at the dense share fit on its fit sets (as `benchmarks.lodo` "
        "does); the adaptive depth as the graph picks it.",
        "",
    ]
    lines += ["| configuration | " + " | ".join(sets) + " |", "|---" * (len(sets) + 1) + "|"]
    for name in payload["results"][sets[0]]["handed_over"]:
        cells = []
        for s in sets:
            v = payload["results"][s]["handed_over"][name]
            cells.append(
                f"{v['ndcg@10']:.3f} / {v['recall@10']:.3f} / {v['set_precision']:.2f} / "
                f"{v['mean_returned']:.1f}"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## Strict level, evidence rule, missing-answer scenario", ""]
    for s in sets:
        for name, v in payload["results"][s]["strict_evidence_rule"].items():
            lines.append(
                f"- {s}, {name}: {v['answerless_refused']:.1%} of {v['answerless']} answerless "
                f"refused, {v['answerable_refused']:.1%} of {v['answerable']} answerable"
            )
    lines += ["", "## Per fold", ""]
    for s, fold in payload["folds"].items():
        lines.append(
            f"- {s} held apart: dense share {fold['dense_share']}, target {fold['target']:.0%} "
            "(nested worst kept "
            f"{fold['nested_worst_kept']}), threshold {fold['threshold']:.4f}"
        )
    t = payload["step_ms_p50"]
    lines += [
        "",
        f"Critic step, p50 ms for one query's list ({t['set']}): "
        + ", ".join(f"{k} {v:.2f}" for k, v in t.items() if k != "set"),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
