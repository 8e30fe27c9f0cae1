"""A LangChain app's own Chroma under ragbrain (``CorrectiveRetriever.from_vectorstore``)
against the same documents ingested by ragbrain.

Quality (SciFact, its test queries): a store built by ``Chroma.from_documents`` with
``HuggingFaceEmbeddings(all-MiniLM-L6-v2)`` and default settings (the l2 space), one Document
per abstract, wrapped, against the corpus ingested by ragbrain one chunk per abstract (its
default embedding backend): nDCG@10 of what each hands over, the share of relevant candidates
the critic keeps and of irrelevant ones it drops, and the largest |distance - (1 - cosine)| in
the wrapped side's trace, the cosine computed from the stored vectors.

Speed (``--chunks``, default 100k): synthetic chunks (word-salad texts, random unit vectors
from a hash of the text: no model), once as a ragbrain store and once as a LangChain ``Chroma``
(l2); each side opened in a fresh process: the wrapped one's one-time lexical build (with
progress), then the first query on each side and the p50 of the next ones. The critic is off
on both sides here: it costs the same on both, and would hide what the store path costs.

    python -m benchmarks.wrapped_store --data ../shared/data/scifact --queries 300
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from langchain_core.embeddings import Embeddings

from benchmarks.common import DIMENSION, TYPE_SHARES, WORDS, save, say
from ragbrain.evaluation import ndcg_at_k, percentile
from ragbrain.paths import cache_root

if TYPE_CHECKING:
    from chromadb.api.types import Metadata

NAME = "wrapped_store"
#: Queries timed after the first one, per side.
LATER_QUERIES = 20
#: The gate both speed sides use, set in their context (so neither calibrates one).
GATE = 0.55


class HashedUnitEmbeddings(Embeddings):
    """Cheap synthetic vectors: a random unit vector seeded by a hash of the text."""

    def __init__(self, size: int = DIMENSION) -> None:
        self.size = size
        self.model_name = f"hashed-unit-{size}"

    def _embed(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
        vector = np.random.default_rng(seed).standard_normal(self.size)
        unit: list[float] = (vector / np.linalg.norm(vector)).tolist()
        return unit

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


# --- quality on SciFact


class RecordingCritic:
    """A critic that records every (passage, score) it judges, for kept/dropped: around the
    shipped choice, which the graph binds to its store (``for_store``: the side's model and
    lexical index pick the critic, as in the product)."""

    def __init__(self, critic: Any) -> None:
        self._critic = critic
        self.bound: Any = critic
        self.judged: list[tuple[str, float]] = []

    @property
    def threshold(self) -> float:
        return float(self.bound.threshold)

    def for_store(self, store: Any, lexical: Any = None) -> RecordingCritic:
        from ragbrain.settings import bind_critic

        self.bound = bind_critic(self._critic, store, lexical)
        return self

    def score(self, query: str, passages: Any, distances: Any = None) -> list[float]:
        scores = list(self.bound.score(query, passages, distances))
        self.judged += list(zip(passages, scores, strict=True))
        return scores


def wrapped_scifact(split: Any, embeddings: Embeddings) -> Any:
    """The SciFact corpus stored the LangChain way, built once in the cache folder."""
    from langchain_chroma import Chroma
    from langchain_core.documents import Document

    folder = cache_root() / "bench" / f"langchain-{split.name}-minilm"
    if (folder / "complete.json").is_file():
        return Chroma("langchain", embeddings, persist_directory=str(folder / "chroma"))
    docs = [
        Document(page_content=doc.content, metadata={"source": doc.id, "title": doc.title})
        for doc in split.corpus.values()
    ]
    say(f"embedding {len(docs)} abstracts with HuggingFaceEmbeddings (once)")
    started = time.perf_counter()
    vectorstore = Chroma.from_documents(
        docs,
        embeddings,
        ids=[d.metadata["source"] for d in docs],
        persist_directory=str(folder / "chroma"),
    )
    (folder / "complete.json").write_text(
        json.dumps({"documents": len(docs), "seconds": time.perf_counter() - started})
    )
    return vectorstore


def judge(
    retriever: Any, critic: RecordingCritic, split: Any, queries: list[str]
) -> dict[str, Any]:
    """nDCG@10 of what ``retriever`` hands over and the critic's keep/drop shares."""
    text_to_id = {doc.content: doc.id for doc in split.corpus.values()}
    scores, kept, relevant_total, dropped, irrelevant_total = [], 0, 0, 0, 0
    for query_id in queries:
        critic.judged.clear()
        docs = retriever.invoke(split.queries[query_id])
        scores.append(ndcg_at_k([str(d.id) for d in docs], split.qrels[query_id], 10))
        relevant = split.relevant(query_id)
        for passage, score in critic.judged:
            keep = not math.isnan(score) and score >= critic.threshold
            if text_to_id.get(passage) in relevant:
                relevant_total += 1
                kept += keep
            else:
                irrelevant_total += 1
                dropped += not keep
    from ragbrain.critic.base import threshold_label

    label = threshold_label(critic.bound, critic.threshold)
    return {
        "critic": f"{type(critic.bound).__name__}, {label}",
        "ndcg@10": float(np.mean(scores)),
        "relevant_kept": kept / max(relevant_total, 1),
        "irrelevant_dropped": dropped / max(irrelevant_total, 1),
        "judged": relevant_total + irrelevant_total,
    }


def quality(data: Path, split_name: str, limit: int) -> dict[str, Any]:
    """Wrapped LangChain store against the ragbrain-ingested one, on the same queries."""
    from langchain_huggingface import HuggingFaceEmbeddings

    from ragbrain import CorrectiveRetriever
    from ragbrain.critic.choice import ShippedCritic
    from ragbrain.evaluation import corpus_store, load_split
    from ragbrain.models.embeddings import default_embeddings, minilm_path, set_offline

    set_offline()
    split = load_split(data, split_name)
    queries = sorted(q for q in split.queries if split.relevant(q))[:limit]
    huggingface = HuggingFaceEmbeddings(model_name=str(minilm_path()))
    vectorstore = wrapped_scifact(split, huggingface)
    shipped = ShippedCritic()

    say("wrapping the LangChain store (the lexical index is built once)")
    # Each side's critic is the shipped choice bound to the side, recording what it judges.
    wrapped_critic = RecordingCritic(shipped)
    wrapped = CorrectiveRetriever.from_vectorstore(vectorstore, critic=wrapped_critic)
    say("ingesting the corpus with ragbrain, one chunk per abstract (once)")
    ingested_store = corpus_store(split, default_embeddings())
    ingested_critic = RecordingCritic(shipped)
    ingested = CorrectiveRetriever.from_store(
        ingested_store.location, embeddings=ingested_store.embeddings, critic=ingested_critic
    )
    say(f"running {len(queries)} queries on each side")
    sides = {
        "wrapped (Chroma.from_documents, l2)": judge(wrapped, wrapped_critic, split, queries),
        "ragbrain-ingested": judge(ingested, ingested_critic, split, queries),
    }
    worst, checked = 0.0, 0
    for query_id in queries[:100]:
        query = split.queries[query_id]
        docs = wrapped.invoke(query)
        if not docs:
            continue
        stored = vectorstore._collection.get(ids=[str(d.id) for d in docs], include=["embeddings"])
        vectors = dict(zip(stored["ids"], np.asarray(stored["embeddings"]), strict=True))
        q = np.asarray(huggingface.embed_query(query))
        for doc in docs:
            v = vectors[str(doc.id)]
            cosine = float(v @ q / (np.linalg.norm(v) * np.linalg.norm(q)))
            worst = max(worst, abs(doc.metadata["retrieval"]["distance"] - (1 - cosine)))
            checked += 1
    return {
        "data": f"{split.name} {split.split}",
        "queries": len(queries),
        "documents": len(split.corpus),
        "sides": sides,
        "max_distance_error": worst,
        "distances_checked": checked,
        "notes": wrapped.run(split.queries[queries[0]])["notes"][:2],
    }


# --- speed at scale


def synthetic_rows(n: int, seed: int = 0) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """``n`` word-salad chunks with types drawn from ``TYPE_SHARES``."""
    rng = random.Random(seed)
    types, weights = list(TYPE_SHARES), list(TYPE_SHARES.values())
    ids = [f"chunk-{i}" for i in range(n)]
    texts = [" ".join(rng.choices(WORDS, k=40)) for _ in ids]
    metas = [
        {"source": f"s{i // 4}.md", "type": t, "chunk": 0}
        for i, t in enumerate(rng.choices(types, weights, k=n))
    ]
    return ids, texts, metas


def build_speed_stores(chunks: int) -> Path:
    """Both stores of ``chunks`` synthetic chunks, built once in the cache folder."""
    import chromadb
    from chromadb.config import Settings

    from ragbrain import Store
    from ragbrain.store.lexical import sync_lexical

    folder = cache_root() / "bench" / f"wrapped-speed-{chunks}"
    if (folder / "complete.json").is_file():
        return folder
    embeddings = HashedUnitEmbeddings()
    ids, texts, metas = synthetic_rows(chunks)
    store = Store.open(folder / "ragbrain", embeddings, create=True)
    client = chromadb.PersistentClient(
        path=str(folder / "langchain"), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.get_or_create_collection("langchain", embedding_function=None)
    started = time.perf_counter()
    for start in range(0, chunks, 5000):
        end = min(start + 5000, chunks)
        vectors = embeddings.embed_documents(texts[start:end])
        store.upsert(ids[start:end], texts[start:end], metas[start:end], vectors)
        # What Chroma.add_texts does, without embedding the same texts again.
        chroma_metas: list[Metadata] = list(metas[start:end])
        collection.upsert(
            ids=ids[start:end],
            documents=texts[start:end],
            metadatas=chroma_metas,
            embeddings=vectors,  # type: ignore[arg-type]
        )
        say(f"  synthetic stores: {end}/{chunks} ({time.perf_counter() - started:.0f} s)")
    index = sync_lexical(store)  # as `ragbrain ingest` ends
    store.keep_small_types(index)
    (folder / "complete.json").write_text(json.dumps({"chunks": chunks}))
    return folder


def child(side: str, folder: Path) -> dict[str, Any]:
    """One side in this fresh process: open it, then the first query and later ones."""
    from ragbrain import CorrectiveRetriever, RetrievalContext

    embeddings = HashedUnitEmbeddings()
    context = RetrievalContext(gate_threshold=GATE)
    progress: list[tuple[float, int]] = []
    started = time.perf_counter()
    if side == "ragbrain":
        retriever = CorrectiveRetriever.from_store(
            folder / "ragbrain", embeddings=embeddings, critic=None, context=context
        )
    else:
        from langchain_chroma import Chroma

        vectorstore = Chroma("langchain", embeddings, persist_directory=str(folder / "langchain"))

        def report(done: int, total: int) -> None:
            progress.append((time.perf_counter() - started, done))
            say(f"  lexical index: {done}/{total}")

        retriever = CorrectiveRetriever.from_vectorstore(
            vectorstore, critic=None, context=context, progress=report
        )
    opened = time.perf_counter() - started
    rng = random.Random(1)
    queries = [" ".join(rng.choices(WORDS, k=6)) for _ in range(LATER_QUERIES + 1)]
    first = time.perf_counter()
    retriever.invoke(queries[0])
    first_ms = (time.perf_counter() - first) * 1000
    later = []
    for query in queries[1:]:
        start = time.perf_counter()
        retriever.invoke(query)
        later.append((time.perf_counter() - start) * 1000)
    return {
        "open_s": opened,
        "lexical_build": bool(progress),
        "first_query_ms": first_ms,
        "later_p50_ms": percentile(later, 50),
    }


def speed(chunks: int) -> dict[str, Any]:
    """Each side in fresh processes: the wrapped one first with its one-time lexical build,
    then again with the index kept, then the ragbrain-ingested one."""
    folder = build_speed_stores(chunks)
    runs = {}
    for label, side in (
        ("wrapped, first open (builds the lexical index)", "wrapped"),
        ("wrapped, later open", "wrapped"),
        ("ragbrain-ingested", "ragbrain"),
    ):
        say(f"speed: {label}")
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "benchmarks.wrapped_store",
                "--child",
                side,
                "--folder",
                str(folder),
            ],
            capture_output=True,
            text=True,
            check=True,
            env=dict(os.environ),
        )
        runs[label] = json.loads(done.stdout.strip().splitlines()[-1])
    wrapped = runs["wrapped, first open (builds the lexical index)"]["first_query_ms"]
    ingested = runs["ragbrain-ingested"]["first_query_ms"]
    return {"chunks": chunks, "runs": runs, "first_query_ratio": wrapped / ingested}


def markdown(result: dict[str, Any]) -> str:
    lines = ["# A LangChain app's Chroma under ragbrain (`from_vectorstore`)", ""]
    q = result.get("quality")
    if q:
        lines += [
            f"Quality: {q['data']}, {q['queries']} queries, {q['documents']} abstracts.",
            "",
            "| side | nDCG@10 | critic | relevant kept | irrelevant dropped | candidates judged |",
            "|---|---|---|---|---|---|",
        ]
        for name, s in q["sides"].items():
            lines.append(
                f"| {name} | {s['ndcg@10']:.3f} | {s.get('critic', '-')} | "
                f"{s['relevant_kept']:.1%} | {s['irrelevant_dropped']:.1%} | {s['judged']} |"
            )
        lines += [
            "",
            f"Largest |distance - (1 - cosine)| in the wrapped side's trace: "
            f"{q['max_distance_error']:.1e} ({q['distances_checked']} distances).",
            "",
            "The wrapped side's first notes: " + "; ".join(f"`{n}`" for n in q["notes"]),
            "",
        ]
    s = result.get("speed")
    if s:
        lines += [
            f"Speed: {s['chunks']:,} synthetic chunks, each side in a fresh process, the "
            f"critic off on both (first query after opening; p50 of the {LATER_QUERIES} next).",
            "",
            "| side | open s | first query ms | later p50 ms |",
            "|---|---|---|---|",
        ]
        for name, r in s["runs"].items():
            lines.append(
                f"| {name} | {r['open_s']:.1f} | {r['first_query_ms']:.1f} | "
                f"{r['later_p50_ms']:.1f} |"
            )
        lines += [
            "",
            f"First query, wrapped / ragbrain-ingested: {s['first_query_ratio']:.2f}x.",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="a BEIR folder (SciFact); none: no quality")
    parser.add_argument("--split", default="test")
    parser.add_argument("--queries", type=int, default=300, help="at most this many queries")
    parser.add_argument("--chunks", type=int, default=100_000, help="0: no speed run")
    parser.add_argument("--child", choices=["wrapped", "ragbrain"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.folder)))
        return
    result: dict[str, Any] = {}
    if args.data:
        result["quality"] = quality(args.data, args.split, args.queries)
    if args.chunks:
        result["speed"] = speed(args.chunks)
    save(NAME, result, markdown(result))


if __name__ == "__main__":
    main()
