"""Dense, BM25, hybrid and the full pipeline on a BEIR split, each query embedded once.

`ragbrain eval` times every configuration separately (and so embeds each query once per
configuration); this script measures quality only, so it shares one embedding per query
across every side, which makes the four data sets affordable on a small shared machine.
It also scores the fusion variants (RRF depth and constant, a min-max weighted score) from
the same two candidate lists.

    python -m benchmarks.hybrid_eval --data ../shared/data/scifact [--split test] [--limit N]
    python -m benchmarks.hybrid_eval --data ../shared/data/jaquad_ret --bm25-only
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import RESULTS, say
from ragbrain import CorrectiveRetriever, RetrievalContext, build_graph
from ragbrain.evaluation import Split, corpus_store, load_split, ndcg_at_k, recall_at_k
from ragbrain.lexical.index import LexicalIndex
from ragbrain.lexical.sync import LexicalSearcher
from ragbrain.models.embeddings import default_embeddings

Ranked = list[tuple[str, float]]
Fuser = Callable[[Ranked, Ranked], list[str]]


def rrf(depth: int, k: int = 60) -> Fuser:
    """RRF over the first ``depth`` of each list."""

    def fuse(dense: Ranked, lexical: Ranked) -> list[str]:
        scores: dict[str, float] = {}
        for ranking in (dense[:depth], lexical[:depth]):
            for rank, (id_, _) in enumerate(ranking, start=1):
                scores[id_] = scores.get(id_, 0.0) + 1.0 / (k + rank)
        return sorted(scores, key=lambda i: -scores[i])[:10]

    return fuse


def minmax(alpha: float, depth: int = 100) -> Fuser:
    """``alpha`` * min-max(cosine similarity) + (1 - ``alpha``) * min-max(BM25)."""

    def norm(ranked: Ranked) -> dict[str, float]:
        if not ranked:
            return {}
        low, high = min(v for _, v in ranked), max(v for _, v in ranked)
        return {i: (v - low) / ((high - low) or 1.0) for i, v in ranked}

    def fuse(dense: Ranked, lexical: Ranked) -> list[str]:
        d, lx = norm(dense[:depth]), norm(lexical[:depth])
        scores = {i: alpha * d.get(i, 0.0) + (1 - alpha) * lx.get(i, 0.0) for i in {*d, *lx}}
        return sorted(scores, key=lambda i: -scores[i])[:10]

    return fuse


VARIANTS: dict[str, Fuser] = {
    "rrf depth 10": rrf(10),
    "rrf depth 30 (the fusion before the score fusion)": rrf(30),
    "rrf depth 100": rrf(100),
    "rrf depth 30, k=10": rrf(30, 10),
    "weighted 0.3": minmax(0.3),
    "weighted 0.5": minmax(0.5),
    "weighted 0.7": minmax(0.7),
}


def bm25_only(split: Split, limit: int | None) -> None:
    """BM25 alone over the corpus indexed in memory (for sets whose store is not built yet)."""
    docs = list(split.corpus.values())
    started = time.perf_counter()
    index = LexicalIndex.build([d.id for d in docs], [d.content for d in docs], ["doc"] * len(docs))
    say(f"indexed {len(docs)} documents in {time.perf_counter() - started:.1f} s")
    ndcg, recall = [], []
    for qid, text in list(split.queries.items())[:limit]:
        ranked = [hit.id for hit in index.search(text, 10)]
        ndcg.append(ndcg_at_k(ranked, split.qrels[qid]))
        recall.append(recall_at_k(ranked, split.qrels[qid]))
    say(
        f"{split.name} {split.split} BM25 alone, {len(ndcg)} queries: "
        f"nDCG@10 {statistics.mean(ndcg):.4f}, Recall@10 {statistics.mean(recall):.4f}"
    )


def main() -> None:
    """Measure and write ``benchmarks/results/hybrid-<set>-<split>.json`` and ``.md``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--bm25-only", action="store_true", help="BM25 alone, indexed in memory: no store needed."
    )
    args = parser.parse_args()
    split = load_split(args.data, args.split)
    if args.bm25_only:
        bm25_only(split, args.limit)
        return
    store = corpus_store(split, default_embeddings())
    started = time.perf_counter()
    searcher = LexicalSearcher(store)
    say(f"lexical index in step in {time.perf_counter() - started:.1f} s")
    graph = build_graph(store, lexical=searcher)
    pipelines = {
        "hybrid (graph, k=10, gate off)": RetrievalContext(k=10, gate_threshold=2.0),
        "full pipeline (hybrid, k=10, gate + fallback)": RetrievalContext(k=10),
        "dense pipeline (k=10, gate + fallback + lexical rescue)": RetrievalContext(
            k=10, search_mode="dense"
        ),
    }
    retrievers = {n: CorrectiveRetriever(graph=graph, context=c) for n, c in pipelines.items()}
    rows: dict[str, list[tuple[float, float]]] = {}
    queries = list(split.queries.items())[: args.limit]

    def record(name: str, ranked: list[str], qid: str) -> None:
        qrels = split.qrels[qid]
        rows.setdefault(name, []).append((ndcg_at_k(ranked, qrels), recall_at_k(ranked, qrels)))

    for number, (qid, text) in enumerate(queries, start=1):
        dense = [(h["id"], 1.0 - h["distance"]) for h in store.search(text, 100)]
        lexical = [(h.id, h.score) for h in searcher.index.search(text, 100)]
        record("dense", [i for i, _ in dense[:10]], qid)
        record("bm25", [i for i, _ in lexical[:10]], qid)
        for name, fuse in VARIANTS.items():
            record(f"fusion: {name}", fuse(dense, lexical), qid)
        for name, retriever in retrievers.items():
            record(name, [str(d.id) for d in retriever.invoke(text)], qid)
        if number % 50 == 0:
            say(f"  {number}/{len(queries)}")
    table = {
        name: {
            "ndcg@10": round(statistics.mean(v[0] for v in values), 4),
            "recall@10": round(statistics.mean(v[1] for v in values), 4),
        }
        for name, values in rows.items()
    }
    payload = {"dataset": split.name, "split": split.split, "queries": len(queries), "table": table}
    lines = [
        f"# {split.name} / {split.split}: {len(queries)} queries, {len(split.corpus)} documents",
        "",
        "| configuration | nDCG@10 | Recall@10 |",
        "|---|---|---|",
        *(f"| {n} | {r['ndcg@10']:.3f} | {r['recall@10']:.3f} |" for n, r in table.items()),
        "",
    ]
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"hybrid-{split.name}-{split.split}"
    stem.with_suffix(".json").write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text("\n".join(lines), encoding="utf-8")
    say("\n".join(lines))


if __name__ == "__main__":
    main()
