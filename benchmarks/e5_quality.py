"""Dense and pipeline nDCG@10, e5-small against MiniLM, on seeded subcorpora of each data set.

On this shared 2-core machine embedding whole corpora with e5-small takes hours, so each set
is cut down honestly and the cut is the same for both models: a seeded sample of test
queries (and, for SciFact and NFCorpus, of train / dev queries too, for the gate), every
document relevant to one of them, and seeded distractors up to ``--docs`` documents. A
smaller corpus makes every number higher than on the full set; the comparison between the
two models, on the same documents and queries, is what this measures.

Per set and model: dense (exact cosine top 10 over the subcorpus), and the default pipeline
(a store of those vectors, its lexical index, ``build_graph`` with the shipped critic,
``RetrievalContext(k=10)``); BM25 alone once. The gate: each train/dev query's best distance
and whether its top 10 holds nothing relevant, pooled over SciFact train + NFCorpus dev (the
data of MiniLM's shipped gate), and ``operating_point`` chooses e5-small's threshold.
Results are written per set as they finish (``--resume`` keeps finished sets).

    nice -n 10 python -m benchmarks.e5_quality --data-root ../shared/data \
        --sets iapp_th_ret,jaquad_ret,cmrc2018_ret,drcd_ret,arcd_ret,scifact,nfcorpus
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import RESULTS, save, say
from ragbrain.evaluation.beir import Split, load_split
from ragbrain.evaluation.metrics import ndcg_at_k, recall_at_k

#: The split each set's gate samples come from (None: the set is not used for the gate).
GATE_SPLIT = {"scifact": "train", "nfcorpus": "dev"}


def subcorpus(
    test: Split, gate: Split | None, queries: int, gate_queries: int, docs: int, seed: int
) -> tuple[list[str], dict[str, list[str]]]:
    """Document ids of the cut, and the sampled query ids per split."""
    rng = random.Random(seed)
    chosen = {"test": sorted(rng.sample(sorted(test.qrels), min(queries, len(test.qrels))))}
    if gate is not None:
        pool = sorted(gate.qrels)
        chosen["gate"] = sorted(rng.sample(pool, min(gate_queries, len(pool))))
    keep: set[str] = set()
    for qid in chosen["test"]:
        keep |= test.relevant(qid) & test.corpus.keys()
    if gate is not None:
        for qid in chosen["gate"]:
            keep |= gate.relevant(qid) & gate.corpus.keys()
    others = sorted(test.corpus.keys() - keep)
    rng.shuffle(others)
    keep |= set(others[: max(0, docs - len(keep))])
    return sorted(keep), chosen


def evaluate(
    name: str, root: Path, args: argparse.Namespace, models: dict[str, Any]
) -> dict[str, Any]:
    from ragbrain.lexical.index import LexicalIndex

    test = load_split(root / name, "test")
    gate = load_split(root / name, GATE_SPLIT[name]) if name in GATE_SPLIT else None
    ids, chosen = subcorpus(test, gate, args.queries, args.gate_queries, args.docs, args.seed)
    texts = [test.corpus[i].content for i in ids]
    out: dict[str, Any] = {
        "docs": len(ids),
        "corpus_docs": len(test.corpus),
        "queries": len(chosen["test"]),
    }
    bm25 = LexicalIndex.build(ids, texts, ["doc"] * len(ids))
    out["bm25"] = _score(test, chosen["test"], lambda q: [h.id for h in bm25.search(q, 10)])
    for model, embeddings in models.items():
        started = time.perf_counter()
        vectors = np.asarray(embeddings.embed_documents(texts), dtype=np.float32)
        seconds = time.perf_counter() - started
        say(f"  {name} {model}: {len(ids)} docs in {seconds:.0f} s")
        result: dict[str, Any] = {"embed_docs_per_s": round(len(ids) / seconds, 2)}

        def dense(query: str, embeddings: Any = embeddings, vectors: Any = vectors) -> list[str]:
            q = np.asarray(embeddings.embed_query(query), dtype=np.float32)
            return [ids[i] for i in np.argsort(-(vectors @ q), kind="stable")[:10]]

        result["dense"] = _score(test, chosen["test"], dense)
        result["pipeline"] = _pipeline(test, chosen["test"], ids, texts, vectors, embeddings)
        if gate is not None:
            result["gate_samples"] = _gate_samples(gate, chosen["gate"], ids, vectors, embeddings)
        out[model] = result
    return out


def _score(split: Split, qids: list[str], ranker: Any) -> dict[str, float]:
    ndcg, recall = [], []
    for qid in qids:
        ranked = ranker(split.queries[qid])
        ndcg.append(ndcg_at_k(ranked, split.qrels[qid]))
        recall.append(recall_at_k(ranked, split.qrels[qid]))
    return {
        "ndcg@10": round(statistics.mean(ndcg), 4),
        "recall@10": round(statistics.mean(recall), 4),
    }


def _pipeline(
    split: Split, qids: list[str], ids: list[str], texts: list[str], vectors: Any, embeddings: Any
) -> dict[str, float]:
    from ragbrain.context import RetrievalContext
    from ragbrain.factory import resolve_critic
    from ragbrain.graph import build_graph
    from ragbrain.lexical.sync import LexicalSearcher
    from ragbrain.retriever import CorrectiveRetriever
    from ragbrain.store import Store

    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "store", embeddings, create=True)
        metadatas = [
            {"source": i, "root": f"beir:{split.name}", "type": "doc", "chunk": 0} for i in ids
        ]
        store.upsert(ids, texts, metadatas, vectors.tolist())
        critic, reason = resolve_critic("default", "disable")
        graph = build_graph(store, critic, critic_off_reason=reason, lexical=LexicalSearcher(store))
        retriever = CorrectiveRetriever(graph=graph, context=RetrievalContext(k=10))
        return _score(split, qids, lambda q: [str(d.id) for d in retriever.invoke(q)])


def _gate_samples(
    split: Split, qids: list[str], ids: list[str], vectors: Any, embeddings: Any
) -> dict[str, list[float] | list[bool]]:
    distances: list[float] = []
    no_relevant: list[bool] = []
    for qid in qids:
        q = np.asarray(embeddings.embed_query(split.queries[qid]), dtype=np.float32)
        scores = vectors @ q
        top = np.argsort(-scores, kind="stable")[:10]
        distances.append(round(float(1.0 - scores[top[0]]), 5))
        no_relevant.append(not any(ids[i] in split.relevant(qid) for i in top))
    return {"distances": distances, "no_relevant": no_relevant}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", type=Path, required=True)
    parser.add_argument("--sets", required=True)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--gate-queries", type=int, default=120)
    parser.add_argument("--docs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--resume", action="store_true")
    parser.add_argument("--name", default="e5_quality", help="Results file stem.")
    args = parser.parse_args()
    partial = RESULTS / f"{args.name}.partial.json"

    from ragbrain.evaluation.calibrate import operating_point
    from ragbrain.models.embeddings import default_embeddings, e5_embeddings

    models = {"minilm": default_embeddings(), "e5-small": e5_embeddings()}
    done: dict[str, Any] = (
        json.loads(partial.read_text()) if args.resume and partial.is_file() else {}
    )
    for name in args.sets.split(","):
        if name in done:
            continue
        say(f"{name}")
        done[name] = evaluate(name, args.data_root, args, models)
        partial.write_text(json.dumps(done, indent=1, ensure_ascii=False))
    gates = {}
    for model in models:
        distances: list[float] = []
        flags: list[bool] = []
        for name in GATE_SPLIT:
            samples = done.get(name, {}).get(model, {}).get("gate_samples")
            if samples:
                distances += samples["distances"]
                flags += samples["no_relevant"]
        if distances and 0 < sum(flags) < len(flags):
            sets = " + ".join(f"{n} {s}" for n, s in GATE_SPLIT.items() if n in done)
            gates[model] = operating_point(distances, flags, f"{sets} subcorpora").as_dict()
    payload = {
        "settings": vars(args) | {"data_root": str(args.data_root)},
        "sets": done,
        "gates": gates,
    }
    rows = []
    for name, r in done.items():
        m, e = r["minilm"], r["e5-small"]
        rows.append(
            f"| {name} | {r['docs']}/{r['corpus_docs']} | {r['queries']} | "
            f"{m['dense']['ndcg@10']:.3f} | {e['dense']['ndcg@10']:.3f} | "
            f"{r['bm25']['ndcg@10']:.3f} | {m['pipeline']['ndcg@10']:.3f} | "
            f"{e['pipeline']['ndcg@10']:.3f} | {m['embed_docs_per_s']} | {e['embed_docs_per_s']} |"
        )
    gate_lines = "\n".join(
        f"- {model}: threshold {g['threshold']} (AUC {g['auc']:.3f}, {g['poor_searches']} poor / "
        f"{g['good_searches']} good searches, {g['source']})"
        for model, g in gates.items()
    )
    markdown = (
        "# e5-small vs MiniLM on seeded subcorpora (test queries; same cut for both)\n\n"
        "| set | docs (cut/full) | queries | dense MiniLM | dense e5 | BM25 | pipeline MiniLM "
        "| pipeline e5 | MiniLM docs/s | e5 docs/s |\n|---|---|---|---|---|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\nnDCG@10. Gate thresholds (train/dev queries only):\n\n{gate_lines}\n"
    )
    save(args.name, payload, markdown)


if __name__ == "__main__":
    main()
