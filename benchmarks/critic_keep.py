"""How hard the critic may cut on a set it never saw: two rules that guard the answer (LODO).

The critic's threshold is fit on other domains by the shipped rule (every fit set keeps >= 92%
of its relevant candidates, ``benchmarks.lodo``). On a held-apart set with one relevant
document a query, each relevant candidate it drops costs that query its answer. Two rules that
trade filtering for the answer, each fit on the fold's fit sets only, judged beside the
shipped rule in one run:

- **nested keep target**: the keep target (92% to 99%) chosen by a leave-one-set-out inside
  the fold: each fit set is judged at the threshold the fold's other fit sets give, and the
  lowest target whose worst set keeps >= 90% of its relevant candidates wins (the issue's
  criterion, estimated without the held-apart set). The threshold is then that target's on
  every fit set.
- **top hit protected**: the fused ranking's first hit is always handed over (its score raised
  to the cut), the critic judges the rest; the cut is refit by the shipped rule with the
  protected hits counted as kept, so it may cut the rest harder.

Each for the shipped critic layer (its weights as shipped) and the layer refit per fold
(``benchmarks.lodo_fit.fit_fold``), handed over as ``critic_filter`` does. The kept / dropped
figures are the critic step's on its own candidates (the hybrid top 10), the protected hit
counted as kept.

    python -m benchmarks.critic_keep --data-root ../shared/data --test-queries 100 \\
        --fit-queries 60 --subcorpus scifact=2000 jaquad_ret=2000 cosqa=2000
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from benchmarks.common import save, say
from benchmarks.lodo import all_lists, set_arguments, shipped_critic_and_sets, summary
from benchmarks.lodo_data import Record, SetData, ensure_rows
from benchmarks.lodo_fit import (
    JUDGE_K,
    Scorer,
    candidates,
    dense_top,
    fit_fold,
    fit_layer,
    labelled_scores,
    layer_columns,
    layer_scorer,
    shipped_scorer,
)
from ragbrain.lexical.fusion import DENSE_SHARE

if TYPE_CHECKING:
    from ragbrain.critic.model import TransformerCritic

SHIPPED_TARGET = 0.92
KEEP_TARGETS = (0.92, 0.94, 0.96, 0.98, 0.99)
#: The issue's criterion: every set keeps at least this share of its relevant candidates.
KEEP_FLOOR = 0.90
RULES = ("92% on every fit set (shipped rule)", "nested keep target", "top hit protected")


def protect_head(scores: Sequence[float], cut: float, head: int = 1) -> list[float]:
    """The scores with the first ``head`` raised to the cut: kept, but never above it (so
    they do not raise the depth in ``handed_over``)."""
    return [max(s, cut) if i < head else s for i, s in enumerate(scores)]


def protected_threshold(fit: Sequence[SetData], weight: float, scorer: Scorer) -> float:
    """The shipped rule's threshold with each list's first hit counted as kept (scored above
    any threshold)."""
    from ragbrain.critic.training.layers import choose_threshold

    def protected(data: SetData, record: Record, docs: Sequence[str]) -> list[float]:
        return protect_head(scorer(data, record, docs), 2.0)

    return choose_threshold(*labelled_scores(fit, weight, protected), SHIPPED_TARGET)[0]


def nested_target(
    fit: Sequence[SetData], weight: float, scorer_without: Callable[[Sequence[SetData]], Scorer]
) -> tuple[float, dict[str, float]]:
    """The lowest keep target whose threshold, fit on all fit sets but one, keeps
    ``KEEP_FLOOR`` of the left-out one's relevant candidates, for each fit set in turn (the
    highest target when none does), and each target's worst left-out keep.

    ``scorer_without(rest)`` is the critic as fit without the left-out set (a refit layer is
    refit on ``rest``; the shipped layer is the same for every ``rest``)."""
    from ragbrain.critic.training.keep_metrics import keep_stats
    from ragbrain.critic.training.layers import choose_threshold

    worst = dict.fromkeys(KEEP_TARGETS, 1.0)
    for inner in fit:
        rest = [d for d in fit if d is not inner]
        scorer = scorer_without(rest)
        scores, labels, sets = labelled_scores(rest, weight, scorer)
        own_scores, own_labels, _ = labelled_scores([inner], weight, scorer)
        for target in KEEP_TARGETS:
            threshold, _ = choose_threshold(scores, labels, sets, target)
            kept = keep_stats(own_scores, own_labels, threshold).relevant_kept
            worst[target] = min(worst[target], kept)
    passing = [t for t in KEEP_TARGETS if worst[t] >= KEEP_FLOOR]
    return (min(passing) if passing else max(KEEP_TARGETS)), {str(t): worst[t] for t in worst}


def fold_rules(
    fit: Sequence[SetData], params: dict[str, Any], critic: TransformerCritic
) -> dict[str, dict[str, Any]]:
    """Each (layer, rule): its scorer, threshold, protected head and what it chose."""
    from ragbrain.critic.training.layers import choose_threshold

    weight = params["dense_share"]
    columns = layer_columns()[params["layer_layout"]]
    shipped = shipped_scorer(critic)
    layers: dict[str, tuple[Scorer, float, Callable[[Sequence[SetData]], Scorer]]] = {
        "shipped layer": (shipped, params["shipped_layer_threshold"], lambda rest: shipped),
        "LODO layer refit": (
            layer_scorer(params["_layer"]),
            params["refit_threshold"],
            lambda rest: layer_scorer(fit_layer(rest, weight, columns)),
        ),
    }
    out: dict[str, dict[str, Any]] = {}
    for layer, (scorer, threshold, without) in layers.items():
        target, worst = nested_target(fit, weight, without)
        nested, _ = choose_threshold(*labelled_scores(fit, weight, scorer), target)
        protected = protected_threshold(fit, weight, scorer)
        out[f"{layer}, {RULES[0]}"] = {"scorer": scorer, "threshold": threshold, "head": 0}
        out[f"{layer}, {RULES[1]}"] = {
            "scorer": scorer,
            "threshold": nested,
            "head": 0,
            "target": target,
            "worst_left_out_keep": worst,
        }
        out[f"{layer}, {RULES[2]}"] = {"scorer": scorer, "threshold": protected, "head": 1}
    return out


def judge(data: SetData, weight: float, rules: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each rule on the held-apart test queries, against dense top 10 and the critic-off
    pipeline (hybrid, adaptive depth) on the same queries."""
    from ragbrain.critic.training.keep_metrics import keep_stats
    from ragbrain.evaluation.metrics import ndcg_at_k, paired_difference
    from ragbrain.nodes.critic import handed_over

    records = data.records
    dense = {r.id: dense_top(r, frozenset()) for r in records}
    off = {r.id: candidates(r, frozenset(), DENSE_SHARE)[: r.depth] for r in records}
    base, critic_off = summary(dense, records), summary(off, records)
    dense_ndcg = [ndcg_at_k(dense[r.id], r.qrels) for r in records]
    out: dict[str, Any] = {"dense ndcg@10": base["ndcg@10"]}
    for name, rule in rules.items():
        returned: dict[str, list[str]] = {}
        scores: list[float] = []
        labels: list[bool] = []
        cut = rule["threshold"]
        for r in records:
            docs = candidates(r, frozenset(), weight)[:JUDGE_K]
            own = protect_head(rule["scorer"](data, r, docs), cut, rule["head"])
            returned[r.id] = [docs[i] for i in handed_over(own, cut, r.depth, None)]
            scores += own
            labels += [d in r.relevant for d in docs]
        got = summary(returned, records)
        diff = paired_difference([ndcg_at_k(returned[r.id], r.qrels) for r in records], dense_ndcg)
        stats = keep_stats(scores, labels, cut)
        out[name] = {
            "ndcg@10": got["ndcg@10"],
            "vs_dense": [diff.mean, diff.low, diff.high],
            "set_precision_x_dense": got["set_precision"] / base["set_precision"],
            "set_recall_x_off": got["set_recall"] / critic_off["set_recall"],
            "mean_returned": got["mean_returned"],
            "relevant_kept": stats.relevant_kept,
            "irrelevant_dropped": stats.irrelevant_dropped,
            "threshold": cut,
            **{k: rule[k] for k in ("target", "worst_left_out_keep") if k in rule},
        }
    return out


def main() -> None:
    """Fit each fold's rules, judge its held-apart set, write results/critic_keep[-e5]."""
    parser = set_arguments(
        argparse.ArgumentParser(
            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
    )
    args = parser.parse_args()
    from ragbrain.evaluation.lodo import folds
    from ragbrain.evaluation.missing import split_missing

    model, critic, (names, splits, test, fit) = shipped_critic_and_sets(args)
    for role in (test, fit):
        for name in names:
            records = role[name].records
            scenario = split_missing({r.id: r.qrels for r in records}, [r.id for r in records])
            ensure_rows(role[name], all_lists(role[name], scenario), critic)
    results: dict[str, Any] = {}
    for fold in folds(splits, only=names):
        fit_sets = [fit[n] for n in fold.fit_sets if n in names]
        params = fit_fold(fit_sets, critic)
        rules = fold_rules(fit_sets, params, critic)
        results[fold.held_out] = judge(test[fold.held_out], params["dense_share"], rules)
        say(f"{fold.held_out}: done")
    everything = fit_fold(list(fit.values()), critic)
    every_rules = fold_rules(list(fit.values()), everything, critic)
    shipped_nested = every_rules[f"shipped layer, {RULES[1]}"]
    payload = {
        "embedding_model": model,
        "test_queries": args.test_queries,
        "fit_queries": args.fit_queries,
        "all_sets": {
            name: {k: v for k, v in rule.items() if k != "scorer"}
            for name, rule in every_rules.items()
        },
        "results": results,
    }
    say(
        f"every set, shipped layer: nested target {shipped_nested['target']}, "
        f"threshold {shipped_nested['threshold']:.3f}"
    )
    save(
        "critic_keep" if args.embedding == "minilm" else "critic_keep-e5",
        payload,
        markdown(payload),
    )


def markdown(payload: dict[str, Any]) -> str:
    """One table per held-apart set: each (layer, rule)'s figures on its test queries."""
    lines = [
        "# How hard the critic may cut on an unseen set (LODO)",
        "",
        f"{payload['embedding_model']} stores; up to {payload['test_queries']} test queries a "
        f"set, each rule fit on up to {payload['fit_queries']} train/dev queries of every other "
        "domain (the rules: `python -m benchmarks.critic_keep --help`). nDCG@10 against dense "
        "top 10 is the paired difference on the same queries with its 95% bootstrap interval; "
        "set P against dense top 10, set R against the critic-off pipeline (hybrid, adaptive "
        "depth); kept / dropped: the critic step on its own candidates (hybrid top 10). "
        "Shipped layer: the critic's distance layer for the stores' model, weights as shipped "
        "(the e5-small one was fit on every set's train/dev lists, so its weights are not "
        "LODO; its threshold is the fold's); LODO layer refit: refit per fold.",
    ]
    for name, rows in payload["results"].items():
        lines += [
            "",
            f"## {name} (dense nDCG@10 {rows['dense ndcg@10']:.3f})",
            "",
            "| layer, rule | nDCG@10 | vs dense | set P (× dense) | set R (× off) | mean # "
            "| kept / dropped | cut |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for config, r in rows.items():
            if config == "dense ndcg@10":
                continue
            d = r["vs_dense"]
            target = f" (keep target {r['target']})" if "target" in r else ""
            lines.append(
                f"| {config}{target} | {r['ndcg@10']:.3f} | {d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}] "
                f"| {r['set_precision_x_dense']:.2f}× | {r['set_recall_x_off']:.2f}× "
                f"| {r['mean_returned']:.1f} | {r['relevant_kept']:.0%} / "
                f"{r['irrelevant_dropped']:.0%} | {r['threshold']:.3f} |"
            )
    lines += ["", "## Fit on every set (what each rule would ship)", ""]
    for name, rule in payload["all_sets"].items():
        target = f", keep target {rule['target']}" if "target" in rule else ""
        lines.append(f"- {name}: threshold {rule['threshold']:.3f}{target}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
