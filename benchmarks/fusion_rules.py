"""Per-query fusion rules against plain RRF, dense and BM25, leave-one-domain-out.

Each rule turns evidence in one query's own lists (how much of the query's IDF mass BM25's
best hit holds, how far BM25's best score is from the most the query can score, how much
the two top 10s agree, dense's best distance) into the fusion of that query. A rule's form
and constant are chosen on each fold's fit sets (train/dev queries of the other domains, the
folds of ``ragbrain.evaluation.lodo``); the held-apart set's test queries are judged with
them. No critic: the judged list is the fused top 10, as the "+ hybrid (k=10)" row of
``benchmarks.lodo``. The queries, stores and candidate lists are those of ``benchmarks.lodo``
(the same ``load_role`` calls and cache), so run it with the same sets and sub-corpora.

    python -m benchmarks.fusion_rules [--embedding minilm|e5-small] [--data-root ...]
        [--test-queries 100] [--fit-queries 60] [--subcorpus SET=DOCS ...] [--only SET ...]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from benchmarks.common import save, say
from benchmarks.lodo_data import Record, SetData

Ranker = Callable[[Record], list[str]]
JUDGE_K = 10
#: What the gated rules read, per query (``features``).
FEATURES = ("coverage", "score_share", "overlap")
#: The grids a fold's rule is chosen from.
THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
LOW_WEIGHTS = (0.0, 0.25, 0.5)
HIGH_WEIGHTS = (1.0, 2.0, 4.0)
ALPHAS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
POWERS = (1.0, 2.0, 3.0, 4.0)
#: Rankings and features already computed, by (id of the record, fusion, constant).
_CACHE: dict[tuple[int, str, float], Any] = {}
#: A fit set's nDCG@10 under a candidate, by (id of the set, candidate name).
_NDCG: dict[tuple[int, str], float] = {}


def features(record: Record) -> dict[str, float]:
    """The evidence of one query's lists: the share of its IDF mass BM25's best hit holds,
    BM25's best score over the most the query can score (the IDF sum: a Lucene term scores
    below its IDF), the overlap of the two top 10s, dense's best distance."""
    key = (id(record), "features", 0.0)
    if key not in _CACHE:
        _CACHE[key] = _features(record)
    result: dict[str, float] = _CACHE[key]
    return result


def _features(record: Record) -> dict[str, float]:
    """``features``, uncached."""
    mass = sum(record.query_idf)
    held = record.bm25_terms[0] if record.bm25_terms else []
    coverage = sum(record.query_idf[i] for i in held) / mass if mass > 0 else 0.0
    score = record.bm25_scores[0] if record.bm25_scores else 0.0
    dense = {d for d, _ in record.dense[:JUDGE_K]}
    overlap = len(dense & set(record.bm25[:JUDGE_K])) / JUDGE_K
    best = record.dense[0][1] if record.dense else 2.0
    return {
        "coverage": coverage,
        "score_share": min(1.0, score / mass) if mass > 0 else 0.0,
        "overlap": overlap,
        "distance": best,
    }


def rrf_ranking(record: Record, bm25_weight: float) -> list[str]:
    """RRF of the two sides' top ``CANDIDATES`` as ``hybrid_search`` fuses them, with this
    BM25 weight (dense weight 1; an untrusted dense side keeps weight 0)."""
    from ragbrain.lexical.fusion import CANDIDATES, rrf

    key = (id(record), "rrf", bm25_weight)
    if key in _CACHE:
        return list(_CACHE[key])
    dense = [d for d, _ in record.dense[:CANDIDATES]]
    bm25 = record.bm25[:CANDIDATES]
    weights = (1.0, bm25_weight) if record.trust else (0.0, 1.0)
    _CACHE[key] = rrf([dense, bm25], weights=weights)
    return list(_CACHE[key])


def convex_ranking(record: Record, alpha: float) -> list[str]:
    """Min-max normalised convex fusion over the two top ``CANDIDATES``: ``alpha`` x dense
    similarity + (1 - alpha) x BM25 score, each scaled to [0, 1] over its own list (a side
    that did not find a document gives it 0). An untrusted dense side is left out."""
    from ragbrain.lexical.fusion import CANDIDATES

    key = (id(record), "convex", alpha)
    if key in _CACHE:
        return list(_CACHE[key])
    dense = record.dense[:CANDIDATES]
    bm25 = list(zip(record.bm25[:CANDIDATES], record.bm25_scores[:CANDIDATES], strict=True))
    alpha = alpha if record.trust else 0.0
    total: dict[str, float] = {}
    for pairs, weight, sign in ((dense, alpha, -1.0), (bm25, 1 - alpha, 1.0)):
        if not pairs:
            continue
        values = [sign * v for _, v in pairs]
        low, high = min(values), max(values)
        for (doc, _), value in zip(pairs, values, strict=True):
            scaled = (value - low) / (high - low) if high > low else 1.0
            total[doc] = total.get(doc, 0.0) + weight * scaled
    _CACHE[key] = sorted(total, key=lambda doc: -total[doc])
    return list(_CACHE[key])


def absolute_ranking(record: Record, alpha: float, power: float = 1.0) -> list[str]:
    """Convex fusion that keeps BM25's strength: ``alpha`` x dense similarity min-max scaled
    over its list + (1 - alpha) x BM25 score over the query's IDF sum (the most it can
    score), raised to ``power``, so a BM25 list that matches little of the query counts
    little: ``ragbrain.lexical.fusion.fuse_scores``, what ``hybrid_search`` runs with the store
    model's ``BM25_POWER``."""
    from ragbrain.lexical.fusion import CANDIDATES, fuse_scores

    key = (id(record), f"absolute^{power}", alpha)
    if key in _CACHE:
        return list(_CACHE[key])
    alpha = alpha if record.trust else 0.0
    mass = sum(record.query_idf)
    lexical = list(zip(record.bm25, record.bm25_scores, strict=True))[:CANDIDATES]
    _CACHE[key] = fuse_scores(record.dense[:CANDIDATES], lexical, mass, alpha, power)
    return list(_CACHE[key])


def gated(feature: str, threshold: float, low: float, high: float) -> Ranker:
    """RRF whose BM25 weight is ``low`` below ``threshold`` of ``feature``, else ``high``."""

    def rank(record: Record) -> list[str]:
        weight = low if features(record)[feature] < threshold else high
        return rrf_ranking(record, weight)

    return rank


def linear(feature: str, full_at: float) -> Ranker:
    """RRF whose BM25 weight rises with ``feature``: ``min(1, value / full_at)``."""

    def rank(record: Record) -> list[str]:
        return rrf_ranking(record, min(1.0, features(record)[feature] / full_at))

    return rank


def convex_gated(feature: str, threshold: float, alpha: float) -> Ranker:
    """Convex fusion at ``alpha`` below ``threshold`` of ``feature``, plain RRF above it."""

    def rank(record: Record) -> list[str]:
        if features(record)[feature] < threshold:
            return convex_ranking(record, alpha)
        return rrf_ranking(record, 1.0)

    return rank


def families() -> dict[str, dict[str, Ranker]]:
    """Each rule family's candidates, by a readable name of their constants."""
    out: dict[str, dict[str, Ranker]] = {
        "RRF, global BM25 weight": {
            f"w={w}": partial(rrf_ranking, bm25_weight=w) for w in (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
        },
        "convex (min-max), global alpha": {
            f"alpha={a}": partial(convex_ranking, alpha=a) for a in ALPHAS
        },
        "convex, BM25 over the query's IDF sum, global alpha": {
            f"absolute alpha={a}": partial(absolute_ranking, alpha=a) for a in (0.1, 0.2, *ALPHAS)
        },
        "convex, BM25 over the query's IDF sum, squared, global alpha": {
            f"absolute^2 alpha={a}": partial(absolute_ranking, alpha=a, power=2.0)
            for a in (0.1, 0.2, *ALPHAS)
        },
        "convex, BM25 over the query's IDF sum to a power, global alpha and power": {
            f"absolute^{p:g} alpha={a}": partial(absolute_ranking, alpha=a, power=p)
            for p in POWERS
            for a in (0.05, 0.1, 0.2, *ALPHAS)
        },
    }
    for feature in FEATURES:
        out[f"RRF, BM25 weight gated by {feature}"] = {
            f"{feature}<{t}: w={low}, else w={high}": gated(feature, t, low, high)
            for t in THRESHOLDS
            for low in LOW_WEIGHTS
            for high in HIGH_WEIGHTS
        }
        out[f"RRF, BM25 weight linear in {feature}"] = {
            f"w=min(1, {feature}/{t})": linear(feature, t) for t in THRESHOLDS
        }
        out[f"convex below a {feature} gate, else RRF"] = {
            f"{feature}<{t}: convex alpha={a}": convex_gated(feature, t, a)
            for t in THRESHOLDS
            for a in ALPHAS
        }
    return out


def set_ndcg(data: SetData, rank: Ranker) -> float:
    """Mean nDCG@10 of ``rank``'s top 10 over the set's queries."""
    from ragbrain.evaluation.metrics import mean, ndcg_at_k

    return mean([ndcg_at_k(rank(r)[:JUDGE_K], r.qrels) for r in data.records]) or 0.0


def choose(fit: Sequence[SetData], candidates: dict[str, Ranker]) -> tuple[str, float]:
    """The candidate with the best mean (over the fit sets) nDCG@10, and that mean; ties go
    to the first listed."""
    scored = {}
    for name, rank in candidates.items():
        for d in fit:
            if (id(d), name) not in _NDCG:
                _NDCG[id(d), name] = set_ndcg(d, rank)
        scored[name] = sum(_NDCG[id(d), name] for d in fit) / len(fit)
    best = max(scored, key=lambda name: scored[name])
    return best, scored[best]


def load(args: argparse.Namespace) -> tuple[dict[str, SetData], dict[str, SetData], Any]:
    """Every set's test and fit records, as ``benchmarks.lodo`` loads them."""
    from benchmarks.lodo import load_sets
    from ragbrain.critic.folder import default_critic_path
    from ragbrain.critic.model import TransformerCritic
    from ragbrain.evaluation.lodo import folds
    from ragbrain.models.embeddings import EMBEDDING_CHOICES

    model = EMBEDDING_CHOICES[args.embedding]
    critic = TransformerCritic(default_critic_path()).for_model(model)
    _, splits, test, fit = load_sets(args, critic, model)
    return test, fit, folds(splits)


def _arguments() -> argparse.Namespace:
    """The command line."""
    from benchmarks.lodo import set_arguments

    parser = set_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("--name", default=None)
    parser.add_argument("--load-only", action="store_true", help="Build the caches and stop.")
    return parser.parse_args()


def evaluate(
    test: dict[str, SetData], fit: dict[str, SetData], all_folds: Sequence[Any]
) -> dict[str, Any]:
    """Per family: each fold's chosen constants and the held-apart set's nDCG@10; plus the
    fixed references (dense, BM25, plain RRF)."""
    references: dict[str, Ranker] = {
        "dense top 10": lambda r: [d for d, _ in r.dense],
        "BM25 top 10": lambda r: list(r.bm25),
        "RRF (before the score fusion)": lambda r: rrf_ranking(r, 1.0),
    }
    out: dict[str, Any] = {
        name: {"per_set": {s: set_ndcg(d, rank) for s, d in test.items()}}
        for name, rank in references.items()
    }
    pooled: dict[str, Ranker] = {}
    for family, candidates in families().items():
        chosen: dict[str, str] = {}
        per_set: dict[str, float] = {}
        for fold in all_folds:
            name, _ = choose([fit[n] for n in fold.fit_sets], candidates)
            chosen[fold.held_out] = name
            per_set[fold.held_out] = set_ndcg(test[fold.held_out], candidates[name])
        every, _ = choose(list(fit.values()), candidates)
        pooled.update({f"{family}: {name}": rank for name, rank in candidates.items()})
        out[family] = {"per_set": per_set, "chosen": chosen, "fit_on_every_set": every}
        say(f"{family}: {sum(per_set.values()) / len(per_set):.3f}")
    chosen, per_set = {}, {}
    for fold in all_folds:  # the family too chosen per fold
        name, _ = choose([fit[n] for n in fold.fit_sets], pooled)
        chosen[fold.held_out] = name
        per_set[fold.held_out] = set_ndcg(test[fold.held_out], pooled[name])
    every, _ = choose(list(fit.values()), pooled)
    out["any family (chosen per fold)"] = {
        "per_set": per_set,
        "chosen": chosen,
        "fit_on_every_set": every,
    }
    return out


def markdown(payload: dict[str, Any]) -> str:
    """The LODO nDCG@10 table (rows: references and rule families) and each fold's choice."""
    rows = payload["rules"]
    sets = list(rows["dense top 10"]["per_set"])
    dense = rows["dense top 10"]["per_set"]
    bm25 = rows["BM25 top 10"]["per_set"]
    lines = [
        f"# Per-query fusion rules, LODO ({payload['embedding_model']} stores)",
        "",
        f"nDCG@10 of the fused top 10 (no critic), {payload['test_queries']} seeded test "
        f"queries a set; each rule's constants chosen per fold on {payload['fit_queries']} "
        "seeded train/dev queries of every other domain (best mean nDCG@10 over the fit "
        f"sets). Sub-corpora: {payload['subcorpus'] or 'none'}. `>= dense` counts the sets "
        "at or above dense; `mean - dense` and `mean - BM25` are over the sets.",
        "",
        "| rule | " + " | ".join(sets) + " | mean | mean - dense | mean - BM25 | >= dense |",
        "|---" * (len(sets) + 5) + "|",
    ]
    mean_dense = sum(dense.values()) / len(dense)
    mean_bm25 = sum(bm25.values()) / len(bm25)
    for name, row in rows.items():
        values = row["per_set"]
        mean = sum(values.values()) / len(values)
        at_least = sum(values[s] >= dense[s] - 1e-9 for s in sets)
        cells = " | ".join(f"{values[s]:.3f}" for s in sets)
        lines.append(
            f"| {name} | {cells} | {mean:.3f} | {mean - mean_dense:+.3f} | "
            f"{mean - mean_bm25:+.3f} | {at_least}/{len(sets)} |"
        )
    lines += ["", "## What each fold chose", ""]
    for name, row in rows.items():
        if "chosen" in row:
            folds = "; ".join(f"{s}: `{c}`" for s, c in row["chosen"].items())
            lines.append(f"- {name}: {folds}; fit on every set: `{row['fit_on_every_set']}`")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Load, fit each fold's rule, judge, write results/fusion_rules-<model>.{json,md}."""
    args = _arguments()
    test, fit, all_folds = load(args)
    if args.load_only:
        say("loaded")
        return
    from ragbrain.models.embeddings import EMBEDDING_CHOICES

    payload = {
        "embedding_model": EMBEDDING_CHOICES[args.embedding],
        "test_queries": args.test_queries,
        "fit_queries": args.fit_queries,
        "subcorpus": " ".join(args.subcorpus),
        "rules": evaluate(test, fit, all_folds),
    }
    name = args.name or f"fusion_rules-{args.embedding}"
    save(name, payload, markdown(payload))


if __name__ == "__main__":
    main()
