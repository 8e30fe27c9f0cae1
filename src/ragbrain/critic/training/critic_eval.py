"""`ragbrain critic eval`: judge the retriever's own top-k candidates with the critic and with
simple filters, against the qrels of one split."""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.critic.training.keep_metrics import keep_stats, roc_auc, threshold_for_recall
from ragbrain.store.search import Hit

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain.critic.model import TransformerCritic
    from ragbrain.evaluation.beir import Split
    from ragbrain.store import Store

Progress = Callable[[int, int], None]
#: LangChain's ``EmbeddingsFilter`` keeps documents with cosine similarity >= this by default.
EMBEDDINGS_FILTER_DEFAULT = 0.76
TUNE_QUERIES = 200


@dataclass
class Judged:
    """Every candidate of a split: labels, distances and each scorer's scores."""

    labels: list[bool] = field(default_factory=list)
    distances: list[float] = field(default_factory=list)
    critic: list[float] = field(default_factory=list)
    plain: list[float] = field(default_factory=list)  # the critic without its distance layer
    overlap: list[float] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


Candidates = Callable[[str, int], list[Hit]]


def retriever_candidates(store: Store, mode: str) -> Candidates:
    """The top-k search the retriever runs before its critic: ``hybrid`` (its default: BM25 and
    dense fused, with the language rule) or ``dense``."""
    if mode == "dense":
        return store.search
    from ragbrain.hybrid import bm25_power, dense_trusted, hybrid_search
    from ragbrain.models.embeddings import model_reads
    from ragbrain.store.lexical import LexicalSearcher

    index = LexicalSearcher(store).index
    reads, power = model_reads(store.model), bm25_power(store.model)

    def hybrid(query: str, k: int) -> list[Hit]:
        trust = dense_trusted(query, reads)
        return hybrid_search(store, index, query, k, trust_dense=trust, power=power)[0]

    return hybrid


def judge(
    split: Split,
    search: Candidates,
    critic: TransformerCritic,
    k: int,
    query_ids: Sequence[str],
    progress: Progress | None = None,
    *,
    score: bool = True,
    plain: TransformerCritic | None = None,
) -> Judged:
    """Search each query like the retriever does (``search``'s top ``k``) and score the hits
    (with ``score=False`` only the distances and lexical overlap, to tune the simple filters).
    ``plain``, the same critic without its distance layer, also scores the hits from the same
    forward pass (``Judged.plain``, not timed)."""
    out = Judged()
    for done, qid in enumerate(query_ids, start=1):
        query = split.queries[qid]
        hits = search(query, k)
        relevant = split.relevant(qid)
        texts = [h["text"] for h in hits]
        out.labels += [h["id"] in relevant for h in hits]
        out.distances += [h["distance"] for h in hits]
        if texts and critic.features is not None:
            out.overlap += critic.lexical(query, texts)[:, 0].tolist()
        if score and texts:
            distances = [h["distance"] for h in hits]
            started, cpu = time.perf_counter(), time.process_time()
            if plain is None:
                out.critic += critic.score(query, texts, distances)
            else:  # the same work as ``score``, its inputs kept for the distance-free view
                inputs = critic.inputs(query, texts)
                out.critic += critic.combined(inputs, distances)
            out.latencies_ms.append((time.perf_counter() - started) * 1000)
            out.cpu_ms.append((time.process_time() - cpu) * 1000)
            if plain is not None:
                out.plain += plain.combined(inputs)
        if progress:
            progress(done, len(query_ids))
    return out


def _tuning_ids(folder: Path, test: Split) -> tuple[Split | None, list[str]]:
    """A sample of the folder's dev split (else train) to tune the cut-offs on, never test."""
    import random

    from ragbrain.evaluation.beir import DataSetError, load_split

    for name in ("dev", "train"):
        if name == test.split:
            continue
        try:
            tune = load_split(folder, name)
        except DataSetError:
            continue
        ids = [q for q in sorted(tune.queries) if tune.relevant(q)]
        return tune, sorted(random.Random(0).sample(ids, min(TUNE_QUERIES, len(ids))))
    return None, []


def _row(
    name: str, scores: Sequence[float], labels: Sequence[bool], threshold: float
) -> dict[str, Any]:
    return {
        "scorer": name,
        "threshold": threshold,
        "auc": roc_auc(scores, labels),
        **keep_stats(scores, labels, threshold).as_dict(),
    }


def evaluate(
    folder: Path,
    split_name: str,
    critic: TransformerCritic,
    embeddings: Embeddings,
    *,
    k: int = 10,
    candidates: str = "hybrid",
    load_seconds: float = math.nan,
    rss_added_mb: float = math.nan,
    max_queries: int | None = None,
    stage: Callable[[str], Progress | None] = lambda _label: None,
) -> dict[str, Any]:
    """Compare the critic with keep-all, a tuned distance cut-off and an EmbeddingsFilter-style
    similarity filter on the same candidates; return the report as a JSON-ready dict."""
    from ragbrain.evaluation.beir import corpus_store, load_split

    split = load_split(folder, split_name)
    store = corpus_store(split, embeddings, progress=stage(f"embedding {split.name}"))
    query_ids = sorted(split.queries)
    if max_queries is not None and max_queries < len(query_ids):
        query_ids = sorted(random.Random(0).sample(query_ids, max_queries))
    search = retriever_candidates(store, candidates)
    critic = critic.for_model(store.embedding_model)  # as ``build_graph`` binds it
    plain = critic.for_model(None) if critic.uses_distance else None
    judged = judge(split, search, critic, k, query_ids, stage(f"judging {split.name}"), plain=plain)
    tune, tune_ids = _tuning_ids(folder, split)
    target = float(critic.calibration.get("recipe", {}).get("target_recall", 0.9))
    tuned = judge(tune, search, critic, k, tune_ids, score=False) if tune else None
    labels = judged.labels
    neg_distance = [-d for d in judged.distances]
    rows = [
        _row("keep everything", [1.0] * len(labels), labels, 0.0),
        _row(
            f"cosine-distance cut-off (tuned on {tune.split if tune else 'nothing'})",
            neg_distance,
            labels,
            threshold_for_recall([-d for d in tuned.distances], tuned.labels, target)
            if tuned
            else -math.inf,
        ),
        _row(
            f"EmbeddingsFilter-style (similarity >= {EMBEDDINGS_FILTER_DEFAULT})",
            [1.0 - d for d in judged.distances],
            labels,
            EMBEDDINGS_FILTER_DEFAULT,
        ),
    ]
    if judged.overlap and tuned is not None:
        rows.append(
            _row(
                f"IDF token overlap (tuned on {tune.split if tune else 'nothing'})",
                judged.overlap,
                labels,
                threshold_for_recall(tuned.overlap, tuned.labels, target),
            )
        )
    if plain is not None:
        rows.append(_row("Tiny-Critic without distance", judged.plain, labels, plain.threshold))
    rows.append(_row("Tiny-Critic", judged.critic, labels, critic.threshold))
    latencies = sorted(judged.latencies_ms)
    return {
        "data_set": split.name,
        "split": split_name,
        "queries": len(query_ids),
        "candidates": len(labels),
        "relevant_share": sum(labels) / len(labels) if labels else math.nan,
        "k": k,
        "candidate_search": candidates,
        "critic": str(critic.folder),
        "critic_uses_distance": critic.uses_distance,
        "target_recall": target,
        "rows": rows,
        "latency_ms": {
            "p50": statistics.median(latencies) if latencies else math.nan,
            "p95": latencies[int(0.95 * (len(latencies) - 1))] if latencies else math.nan,
            "cpu_p50": statistics.median(judged.cpu_ms) if judged.cpu_ms else math.nan,
            "runs": len(latencies),
        },
        "load_seconds": load_seconds,
        "rss_added_mb": rss_added_mb,
        "scores": {
            "critic": judged.critic,
            "plain": judged.plain,
            "labels": labels,
            "neg_distance": neg_distance,
        },
    }


def load_timed(folder: Path) -> tuple[TransformerCritic, float, float]:
    """Load a critic and return it with its load time (s) and the resident memory it added (MB)."""
    from ragbrain.critic.model import TransformerCritic

    before = _rss_mb()
    started = time.perf_counter()
    critic = TransformerCritic(folder)
    seconds = time.perf_counter() - started
    critic.score("warm-up", ["warm-up passage"] * 10)
    return critic, seconds, _rss_mb() - before
