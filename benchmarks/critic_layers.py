"""What the critic's last layer can and cannot buy: the shipped weights, other layers on top.

The shipped critic's cross-encoder and features stay as they are; only the layer that turns
them into a probability, and its threshold, change. For each layer (the shipped logistic form,
or a small MLP over the same columns), each input layout (with or without the retriever's
cosine distance), each calibration mix (the shipped dev lists of SciFact and NFCorpus, alone or
with 1,000 train queries of one converted QA set) and each weighting of the mix's rows (pooled,
or balanced so that every set counts the same), the layer is fit on the mix's hybrid top 10
lists, the threshold is chosen by the shipped rule (every set of the mix keeps at least 92% of
its relevant chunks) and the layer judges the test lists of SciFact, NFCorpus, iApp Thai,
JaQuAD Japanese and CoSQA (web queries -> Python functions). A set outside the mix is unseen by
the whole critic. It also splits NFCorpus's test AUC by relevance grade. Layer inputs are
computed once and cached (safetensors) under the cache folder; a rerun only refits.

    python -m benchmarks.critic_layers [--data-root ../shared/data] [--test-queries 1000]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import save, say
from ragbrain.paths import cache_root

if TYPE_CHECKING:
    import torch

    from ragbrain.critic.model import TransformerCritic
    from ragbrain.critic.training.recipe import Recipe

#: The shipped critic's own dev lists (its training command's sampling), then extra mixes.
SHIPPED = ("dev scifact", "dev nfcorpus")
#: The split each shipped set trains on (`--data scifact --data nfcorpus@dev`).
SHIPPED_SPLITS = {"scifact": "train", "nfcorpus": "dev"}
MIXES = {
    "SciFact + NFCorpus dev (shipped)": SHIPPED,
    "+ 1,000 iApp train queries": (*SHIPPED, "train iapp_th_ret"),
    "+ 1,000 JaQuAD train queries": (*SHIPPED, "train jaquad_ret"),
}
#: Test sets judged, with their names in the table.
TESTS = {
    "scifact": "SciFact",
    "nfcorpus": "NFCorpus",
    "iapp_th_ret": "iApp",
    "jaquad_ret": "JaQuAD",
    "cosqa": "CoSQA",
}
MLP_HIDDEN = 16


@dataclass
class Rows:
    """Layer inputs (``DISTANCE_LIST_INPUTS`` columns) of one set of lists, with labels."""

    x: torch.Tensor
    relevant: torch.Tensor  # bool
    grade: torch.Tensor  # the qrels' score, 0 when unjudged


def lists_for(
    name: str, root: Path, recipe: Recipe, test_queries: int
) -> tuple[list[Any], dict[str, dict[str, int]]]:
    """The retriever's hybrid top ``eval_k`` for the queries ``name`` stands for:
    ``dev SET`` the shipped critic's dev queries, ``train SET`` 1,000 sampled train queries,
    ``test SET`` up to ``test_queries`` sampled test queries."""
    from ragbrain.critic.training.data import QueryCandidates, as_retrieved, is_dev
    from ragbrain.critic.training.sources import sample_queries
    from ragbrain.evaluation.beir import corpus_store, load_split
    from ragbrain.models.embeddings import default_embeddings

    kind, dataset = name.split()
    split_name = SHIPPED_SPLITS[dataset] if kind == "dev" else kind
    split = load_split(root / dataset, split_name, drop_unknown_docs=True)
    store = corpus_store(split, default_embeddings(), progress=None)
    if kind == "dev":  # as `ragbrain critic train --data scifact --data nfcorpus@dev` samples
        ids = sample_queries(split.queries, recipe, recipe.seed + SHIPPED.index(name))
        ids = [q for q in ids if is_dev(split.name, q, recipe.dev_fraction, recipe.seed)]
    elif kind == "train":
        ids = sample_queries(split.queries, recipe, recipe.seed + 100)
    else:
        ids = sorted(split.queries)
        ids = sorted(random.Random(0).sample(ids, min(test_queries, len(ids))))
    items = [QueryCandidates(split.name, q, split.queries[q], (), (), ()) for q in ids]
    return as_retrieved(split, store, items, k=recipe.eval_k), split.qrels


def rows_for(
    name: str, critic: TransformerCritic, root: Path, recipe: Recipe, test_queries: int
) -> Rows:
    """``name``'s layer inputs, from the cache when this critic already computed them."""
    import torch
    from safetensors.torch import load_file, save_file

    from ragbrain.critic.model import INPUTS_VERSION
    from ragbrain.critic.training.layers import dev_inputs

    calibration = (critic.folder / "calibration.json").read_bytes()
    tag = f"{name}|{test_queries}|inputs {INPUTS_VERSION}"
    key = hashlib.sha256(calibration + tag.encode()).hexdigest()[:16]
    path = cache_root() / "critic-layers" / f"{name.replace(' ', '-')}-{key}.safetensors"
    if path.is_file():
        t = load_file(str(path))
        return Rows(t["x"], t["relevant"].bool(), t["grade"])
    say(f"layer inputs: {name}")
    lists, qrels = lists_for(name, root, recipe, test_queries)
    lists = [item for item in lists if item.candidates]
    assert critic.features is not None, "the shipped critic has a logistic layer"
    x, labels, _ = dev_inputs(critic.model, critic.tokenizer, critic.features, lists, recipe)
    grade = [
        qrels.get(item.query_id, {}).get(c.doc_id, 0)
        for item in lists
        for c in item.candidates[: recipe.eval_k]
    ]
    rows = Rows(x, torch.tensor(labels), torch.tensor(grade))
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {"x": rows.x.contiguous(), "relevant": rows.relevant.to(torch.uint8)}
    partial = path.with_suffix(".partial")  # renamed into place: never a half-written cache
    save_file({**tensors, "grade": rows.grade}, str(partial))
    partial.replace(path)
    return rows


Scorer = Callable[["torch.Tensor"], "torch.Tensor"]


def fit_linear(x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> Scorer:
    """The shipped layer's form and fit (``calibrate.fit_combiner``), with a weight per row."""
    from ragbrain.critic.training.layers import combine, fit_combiner

    combiner = fit_combiner(x, y, [f"c{i}" for i in range(x.shape[1])], weights=w)
    return lambda columns: combine(columns, combiner)


def fit_mlp(x: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> Scorer:
    """One hidden layer of ``MLP_HIDDEN`` tanh units over the standardised columns (Adam, full
    batch, 400 steps, weight decay 1e-3, seeded), with a weight per row."""
    import torch

    torch.manual_seed(0)
    mean, scale = x.mean(dim=0), x.std(dim=0).clamp_min(1e-6)
    net = torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], MLP_HIDDEN), torch.nn.Tanh(), torch.nn.Linear(MLP_HIDDEN, 1)
    )
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-2, weight_decay=1e-3)
    z = (x - mean) / scale
    for _ in range(400):
        optimizer.zero_grad()
        loss = _weighted_bce(net(z)[:, 0], y, w)
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()

    def score(columns: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            probs: torch.Tensor = net((columns - mean) / scale)[:, 0].sigmoid()
        return probs

    return score


def _weighted_bce(logits: torch.Tensor, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    from torch.nn import functional

    losses = functional.binary_cross_entropy_with_logits(logits, y, reduction="none")
    return (losses * w).sum() / w.sum()


def row_weights(sizes: Sequence[int], balanced: bool) -> torch.Tensor:
    """One weight per row of a mix: all 1 (pooled), or each set's rows summing to the same."""
    import torch

    if not balanced:
        return torch.ones(sum(sizes))
    return torch.cat([torch.full((n,), sum(sizes) / (len(sizes) * n)) for n in sizes])


def main() -> None:
    """Fit every layer on every mix, judge the test lists, write results/critic_layers.*."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument("--test-queries", type=int, default=1000)
    args = parser.parse_args()

    import torch

    from ragbrain.critic.folder import DISTANCE_LIST_INPUTS, PLAIN_LIST_INPUTS, default_critic_path
    from ragbrain.critic.model import TransformerCritic
    from ragbrain.critic.training.keep_metrics import keep_stats, roc_auc
    from ragbrain.critic.training.layers import choose_threshold
    from ragbrain.critic.training.recipe import Recipe

    recipe = Recipe()
    critic = TransformerCritic(default_critic_path())
    names = sorted({n for mix in MIXES.values() for n in mix}) + [f"test {t}" for t in TESTS]
    rows = {n: rows_for(n, critic, args.data_root, recipe, args.test_queries) for n in names}
    layouts = {"with distance": DISTANCE_LIST_INPUTS, "without distance": PLAIN_LIST_INPUTS}
    results = []
    variants = itertools.product(
        (("logistic (shipped form)", fit_linear), ("MLP", fit_mlp)),
        layouts.items(),
        (("pooled", False), ("balanced", True)),
        MIXES.items(),
    )
    for (layer, fit), (layout_name, layout), (weighting, balanced), (mix_name, mix) in variants:
        index = [DISTANCE_LIST_INPUTS.index(c) for c in layout]
        x = torch.cat([rows[n].x[:, index] for n in mix])
        y = torch.cat([rows[n].relevant for n in mix])
        w = row_weights([len(rows[n].relevant) for n in mix], balanced)
        scorer = fit(x, y.float(), w)
        sets = [n for n in mix for _ in range(len(rows[n].relevant))]
        threshold, _ = choose_threshold(scorer(x).tolist(), y.tolist(), sets, recipe.target_recall)
        judged = {}
        for test in TESTS:
            r = rows[f"test {test}"]
            scores, labels = scorer(r.x[:, index]).tolist(), r.relevant.tolist()
            kept = keep_stats(scores, labels, threshold)
            judged[test] = {
                "relevant_kept": kept.relevant_kept,
                "irrelevant_dropped": kept.irrelevant_dropped,
                "auc": roc_auc(scores, labels),
                "seen": any(test in n for n in mix),
            }
        results.append(
            {
                "layer": layer,
                "inputs": layout_name,
                "weights": weighting,
                "mix": mix_name,
                "threshold": threshold,
                "test": judged,
            }
        )
        say(f"{layer}, {layout_name}, {weighting}, {mix_name}: done")
    grades = nfcorpus_grades(rows["test nfcorpus"], critic)
    payload = {
        "recipe": recipe.to_json(),
        "test_queries": args.test_queries,
        "results": results,
        "nfcorpus_grades": grades,
    }
    save("critic_layers", payload, markdown(results, grades, args.test_queries))


def nfcorpus_grades(rows: Rows, critic: TransformerCritic) -> dict[str, Any]:
    """The shipped distance layer's AUC on NFCorpus test, each grade against the unjudged."""
    from ragbrain.critic.folder import DISTANCE_LIST_INPUTS, WITH_DISTANCE
    from ragbrain.critic.training.keep_metrics import roc_auc
    from ragbrain.critic.training.layers import combine

    combiner = critic.calibration[WITH_DISTANCE]["combiner"]
    index = [DISTANCE_LIST_INPUTS.index(c) for c in combiner["inputs"]]
    scores = combine(rows.x[:, index], combiner)
    out: dict[str, Any] = {}
    for grade in sorted({int(g) for g in rows.grade.tolist()} - {0}):
        mask = (rows.grade == 0) | (rows.grade == grade)
        labels = (rows.grade[mask] == grade).tolist()
        out[f"grade {grade}"] = {
            "pairs": int((rows.grade == grade).sum()),
            "auc": roc_auc(scores[mask].tolist(), labels),
        }
    out["unjudged pairs"] = int((rows.grade == 0).sum())
    out["all relevant auc"] = roc_auc(scores.tolist(), (rows.grade > 0).tolist())
    return out


def markdown(results: Sequence[dict[str, Any]], grades: dict[str, Any], queries: int) -> str:
    """One row per (layer, inputs, weighting, mix): kept / dropped / AUC on each test set."""
    head = " | ".join(TESTS.values())
    lines = [
        "# The critic's last layer, refit on the shipped weights",
        "",
        f"Test split, hybrid top 10 (exact dense search fused with BM25; up to {queries:,} "
        "seeded test queries a set): relevant kept / irrelevant dropped / ROC AUC. * marks a "
        "set whose other queries (dev or train) the layer was fit on; the weights saw only "
        "SciFact and NFCorpus, so iApp, JaQuAD or CoSQA without * is unseen by the whole critic.",
        "",
        f"| layer | inputs | rows | calibrated on | threshold | {head} |",
        "|---|---|---|---|---|" + "---|" * len(TESTS),
    ]
    for r in results:
        cells = []
        for test in TESTS:
            j = r["test"][test]
            mark = "*" if j["seen"] else ""
            cells.append(
                f"{100 * j['relevant_kept']:.1f} / {100 * j['irrelevant_dropped']:.1f} / "
                f"{j['auc']:.3f}{mark}"
            )
        head_cells = [r["layer"], r["inputs"], r["weights"], r["mix"], f"{r['threshold']:.3f}"]
        lines.append("| " + " | ".join([*head_cells, *cells]) + " |")
    lines += [
        "",
        "NFCorpus test, the shipped distance layer, by relevance grade:",
        "",
    ]
    for name, value in grades.items():
        if isinstance(value, dict):
            lines.append(
                f"- {name} against unjudged: {value['pairs']} pairs, AUC {value['auc']:.3f}"
            )
        else:
            lines.append(
                f"- {name}: {value:.3f}" if isinstance(value, float) else f"- {name}: {value}"
            )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
