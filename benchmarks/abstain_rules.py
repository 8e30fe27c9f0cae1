"""Abstention rules compared leave-one-domain-out: which evidence says "nothing fits" best?

The shipped rule (``ragbrain.refusal.abstain``) refuses when three cuts agree: the critic's best score
is low, the best distance is far and BM25's best hit covers little of the query. This compares
it, on the missing-answer scenario of ``benchmarks.lodo`` (the same cached lists, the shipped
critic judging the hybrid top 10), with rules that read more of the lists:

- ``margins``: how clearly the best hit leads the second, on each side (BM25's score gap over
  the query's IDF sum, the dense distance gap, the critic's logit gap);
- ``agreement``: whether dense search and BM25 put the same chunk first, and how much their
  top 5 overlap (a question whose answer is in the store tends to make both find it);
- ``terms``: the share of the query's IDF mass that the best of BM25's top 10 holds as terms
  (present or not, no term-frequency saturation).

Each rule is fit per fold on the other domains' train/dev queries: the AND of cuts by the
shipped grid search, a logistic score (features standardized, each fit set weighed the same)
with the lowest cut that refuses at most 5% of every fit set's answerable queries. The
held-apart set's test queries are then judged: refusal recall and false refusal.

    python -m benchmarks.abstain_rules --data-root ../shared/data --test-queries 100 \\
        --fit-queries 60 --subcorpus scifact=2000 jaquad_ret=2000 cosqa=2000
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from benchmarks.common import save, say
from benchmarks.lodo import set_arguments, shipped_critic_and_sets
from benchmarks.lodo_data import TERMS_OF_TOP, Record, SetData, ensure_rows
from benchmarks.lodo_fit import (
    JUDGE_K,
    candidates,
    coverage,
    shipped_scorer,
)
from ragbrain.lexical.fusion import DENSE_SHARE
from ragbrain.refusal.abstain import MAX_FALSE_REFUSAL, fit_thresholds

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from benchmarks.lodo_fit import Scorer
    from ragbrain.evaluation.missing import MissingAnswer

#: Every feature a rule may read, in column order.
FEATURES = (
    "critic_logit",
    "best_distance",
    "coverage",
    "bm25_margin",
    "dense_gap",
    "critic_margin",
    "top1_agree",
    "top5_overlap",
    "term_share",
)
RULES: dict[str, tuple[str, ...]] = {
    "three signals (shipped)": ("critic_logit", "best_distance", "coverage"),
    "+ margins": (
        "critic_logit",
        "best_distance",
        "coverage",
        "bm25_margin",
        "dense_gap",
        "critic_margin",
    ),
    "+ agreement": ("critic_logit", "best_distance", "coverage", "top1_agree", "top5_overlap"),
    "+ terms": ("critic_logit", "best_distance", "coverage", "term_share"),
    "all": FEATURES,
}
OWN_LOGISTIC = "logistic, all, cut from the set's own train/dev queries (not LODO)"
OWN_AND = "AND of three cuts, fit on the set's own train/dev queries (not LODO)"
#: +1 where a higher value says "nothing fits" (a far best hit), -1 where it says the answer
#: is there (a high critic score, a BM25 hit covering the query, a clear lead, agreement).
ORIENTATION = {name: (1.0 if name == "best_distance" else -1.0) for name in FEATURES}


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def features(data: SetData, record: Record, removed: frozenset[str], scorer: Scorer) -> list[float]:
    """One scenario query's evidence over the pruned store, in ``FEATURES`` order."""
    docs = candidates(record, removed, DENSE_SHARE)[:JUDGE_K]
    scores = sorted((s for s in scorer(data, record, docs) if not math.isnan(s)), reverse=True)
    best = scores[0] if scores else 0.0
    second = scores[1] if len(scores) > 1 else 0.0
    dense = [(d, v) for d, v in record.dense if d not in removed]
    pairs = zip(record.bm25, record.bm25_scores, strict=True)
    bm25 = [(d, v) for d, v in pairs if d not in removed]
    idf = sum(record.query_idf) or 1.0
    bm25_margin = (bm25[0][1] - (bm25[1][1] if len(bm25) > 1 else 0.0)) / idf if bm25 else 0.0
    dense_gap = dense[1][1] - dense[0][1] if len(dense) > 1 else 0.0
    trusted = record.trust and dense and bm25
    top1 = float(bool(trusted) and dense[0][0] == bm25[0][0])
    overlap = len({d for d, _ in dense[:5]} & {d for d, _ in bm25[:5]}) / 5 if trusted else 0.0
    held = [
        sum(record.query_idf[i] for i in terms) / idf
        for doc, terms in zip(record.bm25[:TERMS_OF_TOP], record.bm25_terms, strict=False)
        if doc not in removed
    ]
    return [
        _logit(best),
        min((record.distance[d] for d in docs), default=2.0),
        coverage(record, removed) or 0.0,
        bm25_margin,
        dense_gap,
        _logit(best) - _logit(second),
        top1,
        overlap,
        max(held, default=0.0),
    ]


def scenario_rows(
    data: SetData, scenario: MissingAnswer, scorer: Scorer
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Every scenario query's features and whether it is answerable."""
    import numpy as np

    rows, answerable = [], []
    for record in data.records:
        if record.id not in scenario.answerable | scenario.unanswerable:
            continue
        rows.append(features(data, record, scenario.removed, scorer))
        answerable.append(record.id in scenario.answerable)
    return np.array(rows, dtype=float), np.array(answerable, dtype=bool)


Rows = dict[str, tuple["npt.NDArray[np.float64]", "npt.NDArray[np.bool_]"]]


def fit_logistic(rows: Rows, columns: Sequence[int]) -> dict[str, Any]:
    """A logistic "answerless" score over ``columns`` (the critic's layer form,
    ``fit_combiner``: standardized, L2; every fit set weighed the same) and the lowest cut that
    refuses at most ``MAX_FALSE_REFUSAL`` of every fit set's answerable queries."""
    import numpy as np
    import torch

    from ragbrain.critic.combiner import combine
    from ragbrain.critic.training.layers import fit_combiner

    x = np.concatenate([a[:, columns] for a, _ in rows.values()])
    y = np.concatenate([~answerable for _, answerable in rows.values()])
    weight = np.concatenate([np.full(len(a), 1.0 / len(a)) for a, _ in rows.values()])
    combiner = fit_combiner(
        torch.tensor(x, dtype=torch.float32),
        torch.tensor(y, dtype=torch.float32),
        [FEATURES[c] for c in columns],
        weights=torch.tensor(weight * len(weight), dtype=torch.float32),
    )

    def score(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        probs = combine(torch.tensor(a[:, columns], dtype=torch.float32), combiner)
        return probs.double().numpy()

    fitted: dict[str, Any] = {"score": score, "weights": combiner["weights"]}
    fitted["cut"] = own_cut(fitted, rows)  # past it, <= 5% of any fit set's answerable ones
    return fitted


def own_cut(fitted: dict[str, Any], rows: Rows) -> float:
    """The lowest cut of ``fitted``'s score that refuses at most ``MAX_FALSE_REFUSAL`` of the
    answerable queries of every set of ``rows`` (a fold's fit sets, or the held-apart set's
    own train/dev queries: the rows marked not LODO)."""
    import numpy as np

    cut = 0.0
    for a, answerable in rows.values():
        s = np.sort(fitted["score"](a[answerable]))[::-1]
        allowed = math.floor(MAX_FALSE_REFUSAL * len(s))
        cut = max(cut, float(s[allowed]) if allowed < len(s) else 0.0)
    return cut


def fit_and(rows: Rows) -> dict[str, Any]:
    """The shipped rule's grid search (``ragbrain.refusal.abstain.fit_thresholds``) on these rows."""
    per_set = {
        name: [
            (bool(y), 1 / (1 + math.exp(-r[0])), r[1], r[2]) for r, y in zip(a, ans, strict=True)
        ]
        for name, (a, ans) in rows.items()
    }
    return fit_thresholds(per_set)


def refused_and(a: npt.NDArray[np.float64], cuts: dict[str, Any]) -> npt.NDArray[np.bool_]:
    """Which rows the AND of cuts refuses."""
    import numpy as np

    critic = 1 / (1 + np.exp(-a[:, 0]))
    coverage_cut = cuts["coverage_below"]
    lexical = np.ones(len(a), bool) if coverage_cut is None else a[:, 2] < coverage_cut
    out: npt.NDArray[np.bool_] = (
        (critic < cuts["critic_below"]) & (a[:, 1] > cuts["distance_above"]) & lexical
    )
    return out


def rates(refused: npt.NDArray[np.bool_], answerable: npt.NDArray[np.bool_]) -> dict[str, float]:
    """Refusal recall and false refusal."""
    return {
        "refusal_recall": float(refused[~answerable].mean()) if (~answerable).any() else 0.0,
        "false_refusal": float(refused[answerable].mean()) if answerable.any() else 0.0,
    }


def main() -> None:
    """Each fold's rules fit on the other domains, judged on the held-apart set."""
    parser = set_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    args = parser.parse_args()
    from ragbrain.critic.training.keep_metrics import roc_auc
    from ragbrain.evaluation.lodo import folds
    from ragbrain.evaluation.missing import split_missing

    model, critic, (names, splits, test, fit) = shipped_critic_and_sets(args)
    scorer = shipped_scorer(critic)

    def rows_for(data: SetData) -> tuple[Any, Any]:
        scenario = split_missing(
            {r.id: r.qrels for r in data.records}, [r.id for r in data.records]
        )
        lists = {r.id: candidates(r, scenario.removed, DENSE_SHARE)[:JUDGE_K] for r in data.records}
        ensure_rows(data, lists, critic)
        return scenario_rows(data, scenario, scorer)

    test_rows = {n: rows_for(test[n]) for n in names}
    fit_rows = {n: rows_for(fit[n]) for n in names}
    say("scenario rows ready")
    auc = {
        n: {
            f: roc_auc([ORIENTATION[f] * float(v) for v in a[:, i]], [bool(x) for x in ~ans])
            for i, f in enumerate(FEATURES)
        }
        for n, (a, ans) in test_rows.items()
    }
    results: dict[str, Any] = {}
    for fold in folds(splits, only=names):
        fit_sets = {n: fit_rows[n] for n in fold.fit_sets if n in names}
        held = [fold.held_out]
        cuts = fit_and(fit_sets)
        per_rule: dict[str, dict[str, dict[str, float]]] = {"AND of three cuts (shipped)": {}}
        for n in held:
            a, ans = test_rows[n]
            per_rule["AND of three cuts (shipped)"][n] = rates(refused_and(a, cuts), ans)
        for rule, used in RULES.items():
            columns = [FEATURES.index(f) for f in used]
            fitted = fit_logistic(fit_sets, columns)
            name = f"logistic, {rule}"
            per_rule[name] = {}
            for n in held:
                a, ans = test_rows[n]
                per_rule[name][n] = rates(fitted["score"](a) > fitted["cut"], ans)
            if rule == "all":  # the same weights, the cut from the set's own train/dev queries
                own = {n: fit_rows[n] for n in held}
                cut = own_cut(fitted, own)
                per_rule[OWN_LOGISTIC] = {
                    n: rates(fitted["score"](test_rows[n][0]) > cut, test_rows[n][1]) for n in held
                }
        per_rule[OWN_AND] = {}
        for n in held:
            own_cuts = fit_and({n: fit_rows[n]})
            per_rule[OWN_AND][n] = rates(refused_and(test_rows[n][0], own_cuts), test_rows[n][1])
        for rule, by_set in per_rule.items():
            for n, r in by_set.items():
                results.setdefault(rule, {})[n] = r
        say(f"fold {fold.held_out}: done")
    payload = {
        "embedding_model": model,
        "features": list(FEATURES),
        "max_false_refusal": MAX_FALSE_REFUSAL,
        "feature_auc": auc,
        "results": results,
    }
    save(
        "abstain_rules" if args.embedding == "minilm" else "abstain_rules-e5",
        payload,
        markdown(payload),
    )


def markdown(payload: dict[str, Any]) -> str:
    """Each rule's refusal recall / false refusal per held-apart set, and each feature's AUC."""
    results = payload["results"]
    names = list(next(iter(results.values())))
    lines = [
        "# Abstention rules, leave-one-domain-out",
        "",
        f"{payload['embedding_model']} stores; the missing-answer scenario of `benchmarks.lodo` "
        "(half of each set's test queries lose every relevant document); the shipped critic on "
        "the hybrid top 10. Each rule fit on the other domains' train/dev queries (at most "
        f"{payload['max_false_refusal']:.0%} of every fit set's answerable queries refused); "
        "answerless refused / answerable refused on the held-apart test queries.",
        "",
        "| rule | " + " | ".join(names) + " | sets meeting >= 50% / <= 5% |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    for rule, by_set in results.items():
        cells = [
            f"{by_set[n]['refusal_recall']:.0%} / {by_set[n]['false_refusal']:.0%}" for n in names
        ]
        met = sum(
            by_set[n]["refusal_recall"] >= 0.5 and by_set[n]["false_refusal"] <= 0.05 for n in names
        )
        lines.append(f"| {rule} | " + " | ".join(cells) + f" | {met} |")
    lines += [
        "",
        "How well each feature alone tells answerless from answerable test queries (ROC AUC, "
        "oriented so that above 0.5 it points the expected way: a far best hit, a low critic "
        "score, a BM25 hit that covers little, no clear lead, no agreement; 0.5 is chance):",
        "",
        "| feature | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for f in payload["features"]:
        cells = [f"{payload['feature_auc'][n][f]:.2f}" for n in names]
        lines.append(f"| {f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
