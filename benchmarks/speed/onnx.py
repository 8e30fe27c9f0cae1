"""torch fp32 against ONNX Runtime int8, side by side in one process: speed, agreement, quality.

Every timing interleaves the two backends (torch slice, onnx slice, torch slice, ...) so
load on a shared machine hits both alike; the tables give medians and the median of the
per-pair ratios. What it measures:

- passage encoding: chunks/s over slices of 32 corpus documents (title + text, cut at the
  model's 256 tokens), the corpus subsample below;
- query embedding p50 over the split's queries, one ``embed_query`` call each;
- critic step p50: one ``score`` call on 10 retrieved chunks (the default critic, bound to
  MiniLM distances as the retriever binds it);
- cold start: a fresh process importing ragbrain and loading the embedding model (the ONNX
  export already in the cache), medians of 3 each, alternated;
- agreement: cosine between the two backends' vectors of the first 500 passages and 500
  queries of the split; the critic's keep/drop decisions and score gaps on the top-10 lists;
- quality: nDCG@10 of dense search (exact, numpy) with each backend's vectors.

The corpus is subsampled honestly, the same for both backends: the documents judged for the
split's queries (a seeded sample of them when they are more than ``--docs``), then a seeded
sample of the rest, ``--docs`` in all (say so when you quote it).

    python -m benchmarks.speed onnx [--data ../shared/data/scifact] [--split test] [--docs 2000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import save, say

COLD = (
    "import time; t = time.perf_counter(); from ragbrain.models.backend import load_embeddings; "
    "from ragbrain.models.embeddings import minilm_path, set_offline; set_offline(); "
    "e = load_embeddings(minilm_path(), '{backend}'); e.embed_query('warm up'); "
    "print(time.perf_counter() - t)"
)


def cold_start(backend: str) -> float:
    """Seconds a fresh process needs to import ragbrain, load the model and embed a query."""
    out = subprocess.run(
        [sys.executable, "-c", COLD.format(backend=backend)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def sample_corpus(split: Any, size: int, seed: int = 0) -> list[Any]:
    """Judged documents first, then a seeded sample of the others, ``size`` in all (when the
    judged ones alone are more, a seeded sample of them: both backends search the same)."""
    judged = sorted({d for docs in split.qrels.values() for d in docs})
    if len(judged) > size:
        judged = sorted(random.Random(seed).sample(judged, size))
    others = sorted(set(split.corpus) - set(judged))
    random.Random(seed).shuffle(others)
    ids = judged + others[: max(0, size - len(judged))]
    return [split.corpus[i] for i in ids]


def ndcg(vectors: Any, ids: list[str], queries: Any, split: Any, qids: list[str]) -> float:
    from ragbrain.evaluation import ndcg_at_k

    scores = queries @ vectors.T
    values = []
    for row, qid in zip(scores, qids, strict=True):
        ranked = [ids[i] for i in row.argsort()[::-1][:10]]
        values.append(ndcg_at_k(ranked, split.qrels[qid], 10))
    return statistics.fmean(values)


def main() -> None:  # noqa: PLR0915 (one measurement after another, in one place)
    """Measure and write results/onnx_speed-<set>.json and .md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/scifact"))
    parser.add_argument("--split", default="test")
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=100, help="for the latency runs")
    parser.add_argument("--critic-lists", type=int, default=100)
    args = parser.parse_args()

    import numpy as np

    from ragbrain import TransformerCritic
    from ragbrain.critic.folder import default_critic_path
    from ragbrain.evaluation import load_split
    from ragbrain.models.backend import load_embeddings
    from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, minilm_path, set_offline

    set_offline()
    split = load_split(args.data, args.split, drop_unknown_docs=True)
    docs = sample_corpus(split, args.docs)
    texts = [d.content for d in docs]
    qids = sorted(split.queries)
    queries = [split.queries[q] for q in qids]
    say(f"{split.name} {args.split}: {len(docs)} of {len(split.corpus)} docs, {len(qids)} queries")

    started = time.perf_counter()
    models = {b: load_embeddings(minilm_path(), b) for b in ("torch", "onnx")}
    say(f"loaded both models in {time.perf_counter() - started:.1f} s (export included if new)")
    for model in models.values():
        model.embed_documents(texts[:32])

    # passage encoding, interleaved slices; the vectors serve agreement and nDCG too
    vectors: dict[str, list[list[float]]] = {"torch": [], "onnx": []}
    rates: dict[str, list[float]] = {"torch": [], "onnx": []}
    for i, start in enumerate(range(0, len(texts), 32)):
        part = texts[start : start + 32]
        order = ("torch", "onnx") if i % 2 == 0 else ("onnx", "torch")
        for backend in order:
            t = time.perf_counter()
            vectors[backend].extend(models[backend].embed_documents(part))
            rates[backend].append(len(part) / (time.perf_counter() - t))
        if i % 10 == 0:
            say(f"  passages {start + len(part)}/{len(texts)}")
    ratios = [o / t for o, t in zip(rates["onnx"], rates["torch"], strict=True)]

    # query embedding, interleaved per query
    latency: dict[str, list[float]] = {"torch": [], "onnx": []}
    query_vectors: dict[str, list[list[float]]] = {"torch": [], "onnx": []}
    for i, query in enumerate(queries):
        order = ("torch", "onnx") if i % 2 == 0 else ("onnx", "torch")
        for backend in order:
            t = time.perf_counter()
            query_vectors[backend].append(models[backend].embed_query(query))
            if i < args.queries:
                latency[backend].append(time.perf_counter() - t)
    say("  queries done")

    passages = {b: np.array(v, dtype=np.float32) for b, v in vectors.items()}
    qv = {b: np.array(v, dtype=np.float32) for b, v in query_vectors.items()}
    cos_p = (passages["torch"][:500] * passages["onnx"][:500]).sum(axis=1)
    cos_q = (qv["torch"][:500] * qv["onnx"][:500]).sum(axis=1)
    both = np.concatenate([cos_p, cos_q])
    ids = [d.id for d in docs]
    quality = {b: ndcg(passages[b], ids, qv[b], split, qids) for b in ("torch", "onnx")}
    mixed = ndcg(passages["torch"], ids, qv["onnx"], split, qids)

    # the critic: same top-10 lists (torch retrieval) to both, interleaved
    critics = {
        b: TransformerCritic(default_critic_path(), backend=b).for_model(DEFAULT_EMBEDDING_MODEL)
        for b in ("torch", "onnx")
    }
    top = (qv["torch"] @ passages["torch"].T).argsort(axis=1)[:, ::-1][:, :10]
    step: dict[str, list[float]] = {"torch": [], "onnx": []}
    kept = {"torch": [], "onnx": []}  # type: dict[str, list[bool]]
    gaps: list[float] = []
    same_lists = 0
    lists = min(args.critic_lists, len(qids))
    for i in range(lists):
        chunk_texts = [texts[j][:1200] for j in top[i]]
        distances = [float(1 - qv["torch"][i] @ passages["torch"][j]) for j in top[i]]
        scores = {}
        for backend in ("torch", "onnx") if i % 2 == 0 else ("onnx", "torch"):
            t = time.perf_counter()
            scores[backend] = critics[backend].score(queries[i], chunk_texts, distances)
            step[backend].append(time.perf_counter() - t)
        decisions = {b: [s >= critics[b].threshold for s in scores[b]] for b in scores}
        same_lists += decisions["torch"] == decisions["onnx"]
        for b, made in decisions.items():
            kept[b].extend(made)
        gaps.extend(abs(a - b) for a, b in zip(scores["torch"], scores["onnx"], strict=True))
    say("  critic done")

    cold: dict[str, list[float]] = {"torch": [], "onnx": []}
    for _ in range(3):
        for backend in ("torch", "onnx"):
            cold[backend].append(cold_start(backend))

    def p50_ms(values: list[float]) -> float:
        return 1000 * statistics.median(values)

    result: dict[str, Any] = {
        "data": split.name,
        "split": args.split,
        "docs": len(docs),
        "corpus": len(split.corpus),
        "queries": len(qids),
        "passages_per_s": {b: statistics.median(r) for b, r in rates.items()},
        "passage_speedup_median": statistics.median(ratios),
        "query_p50_ms": {b: p50_ms(v) for b, v in latency.items()},
        "critic_step_p50_ms": {b: p50_ms(v) for b, v in step.items()},
        "cold_start_s": {b: statistics.median(v) for b, v in cold.items()},
        "cosine": {
            "mean": float(both.mean()),
            "min": float(both.min()),
            "p1": float(np.percentile(both, 1)),
            "passages_mean": float(cos_p.mean()),
            "queries_mean": float(cos_q.mean()),
            "texts": len(both),
        },
        "ndcg_at_10": quality,
        "ndcg_at_10_onnx_queries_on_torch_passages": mixed,
        "critic": {
            "lists": lists,
            "same_decisions_lists": same_lists / lists,
            "same_decisions_chunks": statistics.fmean(
                a == b for a, b in zip(kept["torch"], kept["onnx"], strict=True)
            ),
            "kept_share": {b: statistics.fmean(v) for b, v in kept.items()},
            "score_gap_max": max(gaps),
            "score_gap_p99": float(np.percentile(gaps, 99)),
        },
    }
    r = result
    rows = [
        ("passage encoding, chunks/s (slices of 32)", r["passages_per_s"], ".1f"),
        ("query embedding p50, ms", r["query_p50_ms"], ".1f"),
        ("critic step p50 (10 chunks), ms", r["critic_step_p50_ms"], ".1f"),
        ("cold start (fresh process, load + 1 query), s", r["cold_start_s"], ".2f"),
        ("dense nDCG@10", quality, ".4f"),
    ]
    table = "\n".join(
        f"| {name} | {v['torch']:{f}} | {v['onnx']:{f}} | {v['onnx'] / v['torch']:.2f} |"
        for name, v, f in rows
    )
    md = f"""# torch fp32 vs ONNX Runtime int8 ({split.name} {args.split})

{len(docs)} of {len(split.corpus)} documents (judged ones first, then a seeded sample),
{len(qids)} queries; both backends interleaved in one process. Passage speed-up, median of
the pairs of slices: {r["passage_speedup_median"]:.2f}x; nDCG@10 onnx - torch:
{quality["onnx"] - quality["torch"]:+.4f}.

| measure | torch | onnx int8 | onnx / torch |
| --- | ---: | ---: | ---: |
{table}

Agreement: cosine(torch, onnx) over {r["cosine"]["texts"]} texts: mean {r["cosine"]["mean"]:.4f}
(passages {r["cosine"]["passages_mean"]:.4f}, queries {r["cosine"]["queries_mean"]:.4f}),
1st percentile {r["cosine"]["p1"]:.4f}, min {r["cosine"]["min"]:.4f}. onnx queries against
torch passages (a store built on the other backend): nDCG@10 {mixed:.4f}.

Critic (torch = its calibrated torch int8 model): same keep/drop decisions on
{100 * r["critic"]["same_decisions_lists"]:.1f}% of {lists} top-10 lists,
{100 * r["critic"]["same_decisions_chunks"]:.2f}% of chunks; score gap p99
{r["critic"]["score_gap_p99"]:.4f}, max {r["critic"]["score_gap_max"]:.4f}; kept share torch
{r["critic"]["kept_share"]["torch"]:.3f}, onnx {r["critic"]["kept_share"]["onnx"]:.3f}.
"""
    save(f"onnx_speed-{split.name}-{args.split}", result, md)
    print(md)


if __name__ == "__main__":
    main()
