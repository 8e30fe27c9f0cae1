"""The default pipeline on each backend: nDCG@10 of what it hands over, torch against ONNX.

What a user of ``RAGBRAIN_BACKEND=onnx`` gets end to end: the corpus embedded by that backend
(a store of its own), queries embedded by it, hybrid search and the shipped critic judging as
the graph does, and nDCG@10 of the documents handed over. Three sides on the same queries:

- *torch*: the torch-built store, torch queries, the critic on torch (the default);
- *onnx*: the ONNX-built store, ONNX queries, the critic on torch (``RAGBRAIN_BACKEND=onnx``
  as shipped: the setting moves the embedding model only);
- *onnx, critic on onnx*: the same with the critic on ONNX Runtime int8 too
  (``TransformerCritic(backend="onnx")``).

Stores are built once and cached (``corpus_store``; the ONNX ones under a key of their own).
A set's queries are a seeded sample (``--queries``) of its split; ``--root`` reads a set from
another folder (e.g. the LODO sub-corpus of a set too big to embed twice here: say so).
Nothing is fit here.

    python -m benchmarks.onnx_pipeline [--sets scifact nfcorpus iapp_th_ret]
        [--queries 300] [--data-root ../shared/data] [--root SET=FOLDER ...]
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import save, say

if TYPE_CHECKING:
    from ragbrain.critic.base import Critic
    from ragbrain.evaluation.beir import Split
    from ragbrain.graph import Graph

SIDES = ("torch", "onnx", "onnx, critic on onnx")


def handed_over(graph: Graph, query: str) -> list[str]:
    """The ids of the documents the graph hands over for ``query``."""
    from ragbrain.context import RetrievalContext

    output = graph.invoke({"query": query, "type_filter": None}, context=RetrievalContext())
    return [str(d.id) for d in output["documents"]]


def measure_set(split: Split, queries: int, seed: int = 0) -> dict[str, Any]:
    """nDCG@10 and the number handed over, per side, on a seeded sample of ``split``."""
    from ragbrain.critic.folder import default_critic_path
    from ragbrain.critic.model import TransformerCritic
    from ragbrain.evaluation.beir import corpus_store
    from ragbrain.evaluation.metrics import ndcg_at_k
    from ragbrain.graph import build_graph
    from ragbrain.lexical.sync import LexicalSearcher
    from ragbrain.models.backend import load_embeddings
    from ragbrain.models.embeddings import minilm_path

    models = {b: load_embeddings(minilm_path(), b) for b in ("torch", "onnx")}
    stores = {
        b: corpus_store(split, models[b], progress=_progress)  # each backend's own store
        for b in models
    }
    critics: dict[str, Critic] = {
        b: TransformerCritic(default_critic_path(), backend=b) for b in ("torch", "onnx")
    }
    store_of = {"torch": "torch", "onnx": "onnx", "onnx, critic on onnx": "onnx"}
    critic_of = {"torch": "torch", "onnx": "torch", "onnx, critic on onnx": "onnx"}
    graphs = {
        side: build_graph(
            stores[store_of[side]],
            critics[critic_of[side]],
            lexical=LexicalSearcher(stores[store_of[side]]),
        )
        for side in SIDES
    }
    ids = sorted(split.queries)
    ids = sorted(random.Random(seed).sample(ids, min(queries, len(ids))))
    ndcg: dict[str, list[float]] = {side: [] for side in SIDES}
    count: dict[str, list[int]] = {side: [] for side in SIDES}
    same = 0
    for index, query_id in enumerate(ids):
        got = {side: handed_over(graphs[side], split.queries[query_id]) for side in SIDES}
        for side in SIDES:
            ndcg[side].append(ndcg_at_k(got[side], split.qrels[query_id], 10))
            count[side].append(len(got[side]))
        same += got["torch"] == got["onnx"]
        if (index + 1) % 50 == 0:
            say(f"  {split.name}: {index + 1}/{len(ids)} queries")
    return {
        "queries": len(ids),
        "documents": len(split.corpus),
        "ndcg@10": {side: statistics.fmean(v) for side, v in ndcg.items()},
        "handed_over": {side: statistics.fmean(v) for side, v in count.items()},
        "same_documents": same / len(ids),
    }


def _progress(done: int, total: int) -> None:
    if done == total or done % 1024 == 0:
        say(f"  embedding the corpus: {done}/{total}")


def markdown(payload: dict[str, Any]) -> str:
    """The results as Markdown."""
    lines = [
        "# The default pipeline on each backend: nDCG@10 of what it hands over",
        "",
        "torch: torch-built store, queries and critic; onnx: ONNX int8 store and queries, "
        "the critic on torch (RAGBRAIN_BACKEND=onnx as shipped); onnx, critic on onnx: the "
        "critic on ONNX Runtime int8 too. Hybrid search and the shipped critic as the graph "
        "runs them.",
        "",
        "| set | documents | queries | torch | onnx | onnx - torch "
        "| onnx, critic on onnx | - torch | handed over: torch / onnx | same documents |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in payload["sets"].items():
        n, h = r["ndcg@10"], r["handed_over"]
        mixed = n["onnx, critic on onnx"]
        lines.append(
            f"| {name} | {r['documents']:,} | {r['queries']} | {n['torch']:.4f} "
            f"| {n['onnx']:.4f} | {n['onnx'] - n['torch']:+.4f} | {mixed:.4f} "
            f"| {mixed - n['torch']:+.4f} | {h['torch']:.1f} / {h['onnx']:.1f} "
            f"| {r['same_documents']:.0%} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Measure and write results/onnx_pipeline.json and .md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["scifact", "nfcorpus", "iapp_th_ret"])
    parser.add_argument("--split", default="test")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument(
        "--root", nargs="*", default=[], help="SET=FOLDER: read SET from FOLDER/SET instead."
    )
    args = parser.parse_args()

    from ragbrain.evaluation.beir import load_split
    from ragbrain.models.embeddings import set_offline

    set_offline()
    roots = dict(item.split("=", 1) for item in args.root)
    sets: dict[str, Any] = {}
    for name in args.sets:
        folder = Path(roots.get(name, args.data_root)) / name
        split = load_split(folder, args.split, drop_unknown_docs=True)
        say(f"{name} {args.split}: {len(split.corpus)} documents, {len(split.queries)} queries")
        label = name if name not in roots else f"{name} (sub-corpus)"
        sets[label] = measure_set(split, args.queries)
        say(f"{label}: {sets[label]}")
    payload = {"split": args.split, "sets": sets}
    save("onnx_pipeline", payload, markdown(payload))


if __name__ == "__main__":
    main()
