"""Per-store critic threshold from pseudo-queries: does it transfer better than one threshold?

The critic's threshold is fit on other domains (``benchmarks.lodo``: every fit set keeps >= 92%
of its relevant candidates) and fails to transfer to some held-apart sets. A store could say
where its own scores lie without labels: pseudo-queries made from its chunks (title and first
sentence, ``ragbrain.evaluation.calibrate.pseudo_query``, as ``calibrate --store`` makes them
for the gate), searched hybrid, judged by the shipped critic. Their own chunk is a positive,
the rest of their top 10 mostly negatives.

Each rule sets a store's threshold as ``sigmoid(logit(statistic) + offset)``, the statistic a
quantile of the store's pseudo-query scores (positives or negatives), the offset the largest
that keeps >= 92% of the relevant candidates on every fit set of the fold (their own
statistics, their labelled train/dev queries). The held-apart set is judged on its test
queries at its own threshold, beside the one-threshold rule. Nothing here reads a held-apart
set's labels before judging it.

    python -m benchmarks.critic_selfcal --data-root ../shared/data --test-queries 100 \\
        --fit-queries 60 --subcorpus scifact=2000 jaquad_ret=2000 cosqa=2000
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import save, say
from benchmarks.lodo import SUBCORPUS_QUERIES, set_arguments, shipped_critic_and_sets
from benchmarks.lodo_data import SetData, ensure_rows, load_role, subcorpus
from benchmarks.lodo_fit import JUDGE_K, candidates, labelled_scores
from benchmarks.lodo_fit import shipped_scorer as lodo_scorer
from ragbrain.evaluation.metrics import percentile
from ragbrain.evaluation.report import write_atomic
from ragbrain.lexical.fusion import DENSE_SHARE

if TYPE_CHECKING:
    from benchmarks.lodo_fit import Scorer

RECALL = 0.92
PSEUDO_QUERIES = 100
#: (which pseudo-query scores, quantile): the statistics tried, each a rule.
STATISTICS = (("positives", 0.1), ("positives", 0.5), ("negatives", 0.5), ("negatives", 0.9))


def _logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def pseudo_root(root: Path, name: str, n: int = PSEUDO_QUERIES, seed: int = 0) -> Path:
    """A BEIR folder beside the cache's stores: ``name``'s corpus (linked: the same store) and
    ``n`` pseudo-queries from seeded random chunks, each judged relevant to its own chunk."""
    from ragbrain.evaluation.beir import cache_root
    from ragbrain.evaluation.calibrate import pseudo_query

    folder = cache_root() / "lodo-pseudo" / f"{root.resolve().as_posix().strip('/')}" / name
    source = root / name / "corpus.jsonl"
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.jsonl"
    if not corpus.exists():
        corpus.symlink_to(source.resolve())
    with source.open(encoding="utf-8") as handle:
        docs = [json.loads(line) for line in handle if line.strip()]
    queries: list[dict[str, str]] = []
    for doc in random.Random(seed).sample(docs, min(4 * n, len(docs))):
        title, text = str(doc.get("title") or ""), str(doc.get("text") or "")
        query = pseudo_query(f"{title}\n{text}" if title else text, title)
        if query and len(queries) < n:
            queries.append({"_id": f"pseudo-{doc['_id']}", "text": query, "doc": doc["_id"]})
    rows = [json.dumps({"_id": q["_id"], "text": q["text"]}, ensure_ascii=False) for q in queries]
    write_atomic(folder / "queries.jsonl", "\n".join(rows) + "\n")
    lines = [f"{q['_id']}\t{q['doc']}\t1" for q in queries]
    write_atomic(
        folder / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\n" + "\n".join(lines) + "\n"
    )
    return folder.parent


def judged_scores(data: SetData, scorer: Scorer) -> tuple[list[float], list[bool]]:
    """The critic's scores of every query's hybrid top ``JUDGE_K``, and which are relevant."""
    scores, labels, _ = labelled_scores([data], DENSE_SHARE, scorer)
    return scores, labels


def main() -> None:
    """Pseudo-query statistics per set, each rule's LODO thresholds, results/critic_selfcal."""
    parser = set_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    args = parser.parse_args()
    from ragbrain.critic.training.keep_metrics import keep_stats, threshold_for_recall
    from ragbrain.evaluation.lodo import folds

    model, critic, (names, splits, test, fit) = shipped_critic_and_sets(args)
    scorer = lodo_scorer(critic)
    sub_docs = {n: int(d) for n, _, d in (item.partition("=") for item in args.subcorpus)}
    pseudo: dict[str, tuple[list[float], list[bool]]] = {}
    for name in names:
        root = args.data_root
        if name in sub_docs:  # the same sub-corpus (and store) benchmarks.lodo judged
            fit_splits = [s for s in ("train", "dev") if s in splits[name]]
            roles = [(["test"], SUBCORPUS_QUERIES[0]), (fit_splits, SUBCORPUS_QUERIES[1])]
            root = subcorpus(root, name, roles, sub_docs[name])
        data = load_role(
            pseudo_root(root, name), name, ["test"], PSEUDO_QUERIES, critic, model=model
        )
        lists = {r.id: candidates(r, frozenset(), DENSE_SHARE)[:JUDGE_K] for r in data.records}
        ensure_rows(data, lists, critic)
        pseudo[name] = judged_scores(data, scorer)
        say(f"{name}: {len(data.records)} pseudo-queries judged")
    labelled = {name: judged_scores(fit[name], scorer) for name in names}
    own = {name: threshold_for_recall(*labelled[name], RECALL) for name in names}

    def statistic(name: str, side: str, q: float) -> float:
        scores, labels = pseudo[name]
        values = [s for s, y in zip(scores, labels, strict=True) if y == (side == "positives")]
        return percentile([v for v in values if not math.isnan(v)], 100 * q)

    sets: dict[str, Any] = {}
    for name in names:
        sets[name] = {
            "fit_threshold_keeping_92": own[name],
            **{f"{side} q{q}": statistic(name, side, q) for side, q in STATISTICS},
        }
    results: dict[str, Any] = {}
    for fold in folds(splits, only=names):
        fit_sets = [n for n in fold.fit_sets if n in names]
        scores, labels = judged_scores(test[fold.held_out], scorer)
        rules: dict[str, dict[str, float]] = {}
        one = min(own[n] for n in fit_sets)
        stats = keep_stats(scores, labels, one)
        rules["one threshold"] = {
            "threshold": one,
            "relevant_kept": stats.relevant_kept,
            "irrelevant_dropped": stats.irrelevant_dropped,
        }
        for side, q in STATISTICS:
            offset = min(_logit(own[n]) - _logit(statistic(n, side, q)) for n in fit_sets)
            mine = 1 / (1 + math.exp(-(_logit(statistic(fold.held_out, side, q)) + offset)))
            stats = keep_stats(scores, labels, mine)
            rules[f"{side} q{q}"] = {
                "threshold": mine,
                "offset": offset,
                "relevant_kept": stats.relevant_kept,
                "irrelevant_dropped": stats.irrelevant_dropped,
            }
        results[fold.held_out] = rules
    payload = {"embedding_model": model, "recall": RECALL, "sets": sets, "results": results}
    save(
        "critic_selfcal" if args.embedding == "minilm" else "critic_selfcal-e5",
        payload,
        markdown(payload),
    )


def markdown(payload: dict[str, Any]) -> str:
    """The statistics per set and each rule's kept / dropped on the held-apart test queries."""
    names = list(payload["results"])
    rules = list(next(iter(payload["results"].values())))
    lines = [
        "# The critic's threshold per store, from pseudo-queries (LODO)",
        "",
        f"{payload['embedding_model']} stores; the shipped critic judging the hybrid top 10. "
        "Each held-apart set: relevant kept / irrelevant dropped on its test queries, and the "
        "threshold, for one threshold fit on the other domains and for each per-store rule.",
        "",
        "| rule | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for rule in rules:
        cells = [
            f"{r['relevant_kept']:.0%} / {r['irrelevant_dropped']:.0%} ({r['threshold']:.3f})"
            for r in (payload["results"][n][rule] for n in names)
        ]
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    columns = list(next(iter(payload["sets"].values())))
    lines += [
        "",
        "Each set's pseudo-query statistics, and the threshold its own fit queries would want "
        "(keeping 92% of their relevant candidates):",
        "",
        "| set | " + " | ".join(columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for name, row in payload["sets"].items():
        lines.append(f"| {name} | " + " | ".join(f"{row[c]:.3f}" for c in columns) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
