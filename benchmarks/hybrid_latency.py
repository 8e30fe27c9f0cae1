"""What hybrid search costs: lexical index build/update/load times and the query latency it
adds over dense search, on the synthetic 100k-chunk store of the other speed benchmarks.

The synthetic texts are word salad over a 33-word vocabulary, so every query term matches
most chunks: a pessimistic case for BM25 (real notes have far sparser terms).

    python -m benchmarks.hybrid_latency [--size 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import time

from benchmarks.common import QUERIES, forget_queries, save, say, stats, synthetic_store, timed
from ragbrain.lexical.fusion import hybrid_search
from ragbrain.lexical.index import LexicalIndex
from ragbrain.lexical.sync import index_path, sync_lexical
from ragbrain.models.embeddings import default_embeddings


def main() -> None:
    """Measure and write ``benchmarks/results/hybrid_latency.{json,md}``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--keep-index", action="store_true", help="Reuse the saved index (no build timing)."
    )
    args = parser.parse_args()
    store = synthetic_store(args.size, default_embeddings())
    path = index_path(store)
    if not args.keep_index:
        path.unlink(missing_ok=True)
    started = time.perf_counter()
    index = sync_lexical(store)
    build_s = time.perf_counter() - started
    built = (
        "open (load + staleness check)"
        if args.keep_index
        else "full build (read, tokenize, index, save)"
    )
    say(f"{built}: {build_s:.1f} s")
    load_s = timed(lambda: LexicalIndex.load(path))
    say(f"load: {load_s:.2f} s")
    fingerprint_s = timed(store.all_ids)
    rebuild_s = timed(lambda: index.updated({index.ids[0]}, ["x"], ["backup alert"], ["bug"]))
    say(f"rebuild from kept terms (one chunk changed): {rebuild_s:.2f} s")
    dense_ms: list[float] = []
    hybrid_ms: list[float] = []
    bm25_ms: list[float] = []
    bm25s_ms: list[float] = []  # bm25s's scorer alone, without tokenizing and top-k
    for query in QUERIES[:3]:  # warm-up
        store.search(query, 10)
        hybrid_search(store, index, query, 10)
    for round_ in range(args.rounds):
        for i, query in enumerate(QUERIES):
            forget_queries(store)
            store.embed_query(query)  # both sides get the embedding for free: we time search
            pair = [
                (dense_ms, lambda q=query: store.search(q, 10)),
                (hybrid_ms, lambda q=query: hybrid_search(store, index, q, 10)),
            ]
            for sink, call in pair if (i + round_) % 2 else pair[::-1]:
                sink.append(timed(call))
            bm25_ms.append(timed(lambda q=query: index.search(q, 30)))
            terms = index.query_terms(query)
            bm25s_ms.append(timed(lambda t=terms: index.scores(t)))
    dense, hybrid, bm25 = stats(dense_ms), stats(hybrid_ms), stats(bm25_ms)
    bm25s_scorer = stats(bm25s_ms)
    payload = {
        "size": args.size,
        "build_s" if not args.keep_index else "open_s": round(build_s, 2),
        "load_s": round(load_s, 3),
        "list_ids_s": round(fingerprint_s, 3),
        "rebuild_from_terms_s": round(rebuild_s, 2),
        "dense_search_ms": dense,
        "hybrid_search_ms": hybrid,
        "bm25_only_ms": bm25,
        "bm25s_get_scores_ms": bm25s_scorer,
        "added_p50_ms": round(hybrid["p50_ms"] - dense["p50_ms"], 2),
    }
    markdown = "\n".join(
        [
            f"# Hybrid search cost, {args.size} synthetic chunks",
            "",
            "| what | time |",
            "|---|---|",
            f"| {built} | {build_s:.1f} s |",
            f"| rebuild from kept terms after a change | {rebuild_s:.2f} s |",
            f"| load from disk | {load_s:.2f} s |",
            f"| list the store's ids (staleness check) | {fingerprint_s:.2f} s |",
            f"| dense search k=10, p50 | {dense['p50_ms']:.1f} ms |",
            f"| hybrid search k=10, p50 | {hybrid['p50_ms']:.1f} ms |",
            f"| BM25 alone top 30, p50 | {bm25['p50_ms']:.1f} ms |",
            f"| (of which bm25s's scorer, p50) | {bm25s_scorer['p50_ms']:.1f} ms |",
            f"| **added by hybrid, p50** | **{payload['added_p50_ms']:.1f} ms** |",
            "",
        ]
    )
    save("hybrid_latency", payload, markdown)
    say(markdown)


if __name__ == "__main__":
    main()
