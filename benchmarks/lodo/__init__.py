"""Leave-one-domain-out (LODO): every shared data set judged by a pipeline fit on the others.

For each data set of ``--data-root`` in turn (``ragbrain.evaluation.lodo.folds``: CMRC 2018
and DRCD held apart together), everything that learns here is fit on the other domains'
train/dev queries only, and the held-apart set's test queries are judged:

- the dense share of the score fusion (grid, best mean nDCG@10 of the hybrid top 10 on the fit
  sets);
- the critic's threshold for the shipped layer (the shipped rule: every fit set keeps >= 92%
  of its relevant candidates), and a refit of the critic's last layer (``lodo_fit.fit_layer``:
  logistic, balanced rows, same rule);
- the abstention thresholds (``ragbrain.refusal.abstain``) on the fit sets' missing-answer scenario:
  the most answerless queries refused while every fit set refuses <= 5% of its answerable ones.

Those fits live in ``benchmarks.lodo.fit`` (``fit_fold``), the writing of the every-set fit
into a critic folder (``--ship-layer``, ``--ship-threshold``, ``--ship-abstention``) in
``benchmarks.lodo.ship``; this module judges the held-apart sets and writes the report.

The critic's *encoder* is not retrained per fold: the shipped one saw SciFact train and
NFCorpus dev, so on those two sets the critic figures are not LODO, and the tables say so.
``--critic`` runs another critic folder's encoder instead, e.g. one trained without the
held-apart set (docs/quality-by-set.md: SciFact and NFCorpus that way).

Each query's candidates and the critic's per-pair inputs are read once and cached
(``benchmarks.lodo.data``); every variant is then a recombination: ablation (dense top 10,
+ hybrid, + adaptive depth, + gate and fallback, + critic), the fixes, the critic on its own
candidates (k = 10), the missing-answer scenario and its baseline (the 0.55 distance gate).

    python -m benchmarks.lodo [--data-root ../shared/data] [--test-queries 300]
        [--fit-queries 200] [--only SET ...] [--subcorpus SET=DOCS ...]
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import save, say
from benchmarks.lodo.data import Record, SetData, ensure_rows, load_role, subcorpus
from benchmarks.lodo.fit import (
    DENSE_SHARES,
    JUDGE_K,
    Scorer,
    bm25_top,
    candidates,
    coverage,
    dense_top,
    evidence_auc,
    evidence_rows,
    fit_fold,
    labelled_scores,
    layer_scorer,
    shipped_scorer,
)
from benchmarks.lodo.ship import ship_abstention, ship_layer, ship_threshold
from ragbrain.hybrid import DENSE_SHARE

if TYPE_CHECKING:
    from ragbrain import TransformerCritic
    from ragbrain.critic.handover import HandOverRule
    from ragbrain.evaluation import Fold, MissingAnswer

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


#: A sub-corpus holds every document judged for this many seeded test and fit queries (the
#: benchmark's queries are drawn from those), plus random others up to ``--subcorpus-docs``.
SUBCORPUS_QUERIES = (150, 80)
DENSE = "dense top 10"
GRAPH_ABSTAIN = "shipped layer, LODO threshold, + abstention"
TWO_SIDED = "+ abstention, critic and distance only"
GRAPH_REFIT = "LODO layer refit, handed over as the graph does"
GRAPH_THRESHOLD = "shipped layer, LODO threshold, handed over as the graph does"


def all_lists(data: SetData, scenario: MissingAnswer | None) -> dict[str, list[str]]:
    """Every (query, doc) pair any variant judges: hybrid top 10 for each dense share, with
    and without the scenario's removals."""
    removals: list[frozenset[str]] = [frozenset()] + ([scenario.removed] if scenario else [])
    out: dict[str, list[str]] = {}
    for record, weight, removed in itertools.product(data.records, DENSE_SHARES, removals):
        docs = candidates(record, removed, weight)[:JUDGE_K]
        out[record.id] = list(dict.fromkeys([*out.get(record.id, []), *docs]))
    return out


# --- judging a held-apart set ----------------------------------------------------------------


def summary(returned: dict[str, list[str]], records: Sequence[Record]) -> dict[str, Any]:
    """nDCG@10, Recall@10, returned-set precision and recall, mean chunks, empty share."""
    from ragbrain.evaluation import mean, ndcg_at_k, recall_at_k, set_precision, set_recall

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
    docs: Sequence[str],
    scores: Sequence[float],
    threshold: float,
    depth: int,
    rule: HandOverRule | None = None,
) -> list[str]:
    """What ``critic_filter`` hands over (``ragbrain.nodes.critic.handed_over``): the kept ones
    up to the depth, and past it those scored above the cut; the best-scored one alone when
    the critic kept none; with ``rule``, narrowed by it (``ragbrain.critic.handover``; each
    document its own note)."""
    from ragbrain.critic.base import keep_mask
    from ragbrain.critic.handover import narrow
    from ragbrain.nodes.critic import handed_over

    chosen = handed_over(scores, threshold, depth, None)
    if rule is not None and any(keep_mask(scores, threshold)):
        chosen, _ = narrow(chosen, scores, docs, rule)
    return [docs[i] for i in chosen]


def judge_set(
    data: SetData, fold: dict[str, Any], critic: TransformerCritic, removed: frozenset[str]
) -> dict[str, dict[str, list[str]]]:
    """What every configuration hands over for each test query (over the pruned store when
    ``removed`` is not empty)."""
    from ragbrain.evaluation import BASELINE_GATE, gate_refuses
    from ragbrain.refusal.abstain import AbstainThresholds, Evidence, hand_over, should_abstain

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
        put(DENSE, r.id, dense)
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


def against_dense(
    returned: dict[str, dict[str, list[str]]], records: Sequence[Record]
) -> dict[str, dict[str, float]]:
    """Each configuration's nDCG@10 minus dense top 10's on the same queries, with a 95%
    paired bootstrap interval (``ragbrain.evaluation.metrics.paired_difference``)."""
    from ragbrain.evaluation import ndcg_at_k, paired_difference

    dense = [ndcg_at_k(returned[DENSE][r.id], r.qrels) for r in records]
    out = {}
    for config, lists in returned.items():
        ours = [ndcg_at_k(lists[r.id], r.qrels) for r in records]
        d = paired_difference(ours, dense)
        out[config] = {"mean": d.mean, "low": d.low, "high": d.high}
    return out


def held_out(
    data: SetData, fold: dict[str, Any], critic: TransformerCritic, scenario: MissingAnswer
) -> dict[str, Any]:
    """Ablation, fixes, the critic on its own candidates and the missing-answer scenario."""
    from ragbrain.evaluation import refusal_stats

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
        "ndcg_vs_dense": against_dense(normal, data.records),
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
        "(benchmarks.lodo.data.subcorpus): too big to embed on this machine.",
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
    from ragbrain.evaluation import data_sets, splits_of

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


def shipped_critic_and_sets(
    args: argparse.Namespace,
) -> tuple[
    str,
    TransformerCritic,
    tuple[list[str], dict[str, list[str]], dict[str, SetData], dict[str, SetData]],
]:
    """The stores' embedding model of ``args``, the shipped critic bound to it, and
    ``load_sets`` (what the benchmarks beside this one judge with)."""
    from ragbrain import TransformerCritic
    from ragbrain.critic.folder import default_critic_path
    from ragbrain.models.embeddings import EMBEDDING_CHOICES

    model = EMBEDDING_CHOICES[args.embedding]
    critic = TransformerCritic(default_critic_path()).for_model(model)
    return model, critic, load_sets(args, critic, model)


def main() -> None:
    """Fit each fold, judge its held-apart set, write results/lodo.{json,md}."""
    args = _arguments()
    sub_docs = {n: int(d) for n, _, d in (item.partition("=") for item in args.subcorpus)}

    from ragbrain import TransformerCritic
    from ragbrain.critic.folder import default_critic_path
    from ragbrain.evaluation import folds, split_missing
    from ragbrain.models.embeddings import EMBEDDING_CHOICES

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
    from benchmarks.lodo.report import markdown

    name = args.name or ("lodo" if args.embedding == "minilm" else "lodo-e5")
    save(name, payload, markdown(payload))


if __name__ == "__main__":
    main()
