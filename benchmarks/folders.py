"""Folders of documents as notes folders: a BEIR set's corpus written as one Markdown file a
document, ingested as ``ragbrain ingest`` does (so a document spans chunks as a note does), and
a seeded sample of its queries asked of the shipped retriever.

For each set (``../shared/data/<set>``: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/``) the
folder ``<out>/<set>/notes/<id>.md`` (``# title``, then the text) is written once, with a fit
split (train or dev queries) and a test split (test queries), ``--fit`` and ``--test`` of each
drawn with ``--seed``. The store is built and cached as a notes folder's is
(``ragbrain.evaluation.notes.notes_store``, under ``$RAGBRAIN_CACHE``). Each query is asked
at the default level, and once more with the critic threshold at 0, refusal off and no
hand-over rule (every judged candidate with its critic score, as ``benchmarks.notes --keep``
records them: a hand-over rule is replayed on them by the node's own code), and of a plain
dense search of the same store (its top chunks' documents).

Reported per set and split, over documents (a chunk counts as its document, at its first
chunk; graded qrels): nDCG@10, recall within ten documents, documents handed over, precision
and refused, for dense top 10 chunks, the default level (a refusal scores 0) and the default
level's hand-over with refusal off (replayed).

    RAGBRAIN_CACHE=/tmp/issue-54-ir/cache python -m benchmarks.folders scifact nfcorpus \\
        --out /tmp/issue-54-ir [--docs 1200] [--fit 100] [--test 150] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import save, say

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
#: Which qrels file is each set's fit split (its test split is ``test.tsv``).
FIT_SPLIT = {"scifact": "train", "nfcorpus": "dev", "cosqa": "dev"}
#: How many of a plain dense search's chunks are recorded per query.
DENSE_DEPTH = 30


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        rows = csv.reader(handle, delimiter="\t")
        next(rows)
        for query, doc, score in rows:
            if int(score) > 0:
                out.setdefault(query, {})[doc] = int(score)
    return out


def file_name(doc: str) -> str:
    """The Markdown file a document is written to (its id, made safe for a path)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", doc) + ".md"


def _sample(name: str, fit: int, test: int, seed: int) -> list[tuple[str, str, dict[str, int]]]:
    """The sampled queries of ``name``: (split, query id, its graded relevant documents)."""
    out = []
    for split, qrels_name, count in (("fit", FIT_SPLIT[name], fit), ("test", "test", test)):
        qrels = _qrels(DATA / name / "qrels" / f"{qrels_name}.tsv")
        ids = sorted(qrels)
        out += [(split, q, qrels[q]) for q in random.Random(seed).sample(ids, min(count, len(ids)))]
    return out


def write_folder(name: str, out: Path, fit: int, test: int, seed: int, docs: int) -> Path:
    """``out/<name>``: ``notes/`` (a file a document, written once: the store's cache is keyed
    by the files' times), ``questions.json`` (the sampled queries with a relevant document in
    the folder, group ``broad``) and ``qrels.json`` (their grades).

    The folder holds ``docs`` documents: the sampled queries' relevant ones with others drawn
    at random, or, where those are more than half of ``docs`` (NFCorpus: 35 a query), a random
    ``docs`` of the corpus, each query judged on the relevant documents the folder holds."""
    source = DATA / name
    folder = out / name
    notes = folder / "notes"
    sampled = _sample(name, fit, test, seed)
    corpus: dict[str, tuple[str, str]] = {}
    with (source / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            corpus[str(row["_id"])] = (str(row.get("title") or ""), str(row.get("text") or ""))
    relevant = sorted({d for _, _, grades in sampled for d in grades if d in corpus})
    rng = random.Random(seed)
    if len(relevant) <= docs // 2:
        others = sorted(set(corpus) - set(relevant))
        chosen = set(relevant) | set(rng.sample(others, min(docs - len(relevant), len(others))))
    else:
        chosen = set(rng.sample(sorted(corpus), min(docs, len(corpus))))
    if not notes.is_dir():
        tmp = folder / "notes.partial"
        tmp.mkdir(parents=True, exist_ok=True)
        for doc in sorted(chosen):
            title, text = (part.strip() for part in corpus[doc])
            body = f"# {title}\n\n{text}\n" if title else f"{text}\n"
            (tmp / file_name(doc)).write_text(body, encoding="utf-8")
        tmp.rename(notes)
    queries = {}
    with (source / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            queries[str(row["_id"])] = str(row["text"])
    questions: list[dict[str, Any]] = []
    grades: dict[str, dict[str, int]] = {}
    for split, query, relevant_grades in sampled:
        held = {file_name(d): g for d, g in relevant_grades.items() if d in chosen}
        if query not in queries or not held or queries[query] in grades:
            continue
        questions.append({"q": queries[query], "expect": sorted(held), "split": split})
        grades[queries[query]] = held
    (folder / "questions.json").write_text(json.dumps({"broad": questions}), encoding="utf-8")
    (folder / "qrels.json").write_text(json.dumps(grades), encoding="utf-8")
    return folder


def documents(sources: Sequence[str], k: int = 10) -> list[str]:
    """The first ``k`` documents of ``sources`` (chunks' documents, in order)."""
    return list(dict.fromkeys(s for s in sources if s))[:k]


def ndcg(sources: Sequence[str], grades: dict[str, int], k: int = 10) -> float:
    """nDCG@``k`` of the documents in ``sources`` (graded)."""
    gain = sum(grades.get(d, 0) / math.log2(i + 2) for i, d in enumerate(documents(sources, k)))
    ideal = sorted(grades.values(), reverse=True)[:k]
    best = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return gain / best if best else 0.0


def scores(handed: Sequence[Sequence[str]], grades: Sequence[dict[str, int]]) -> dict[str, Any]:
    """nDCG@10, recall within ten documents and refused over every query (a refused one scores
    0); documents handed over and precision over the answered ones."""
    n = max(len(handed), 1)
    answered = [(d, g) for d, g in zip(handed, grades, strict=True) if d]
    recall = [len(set(documents(d)) & set(g)) / len(g) for d, g in zip(handed, grades, strict=True)]
    return {
        "ndcg": round(sum(ndcg(d, g) for d, g in zip(handed, grades, strict=True)) / n, 4),
        "recall": round(sum(recall) / n, 4),
        "documents": round(sum(len(documents(d)) for d, _ in answered) / max(len(answered), 1), 2),
        "precision": round(
            sum(len(set(documents(d)) & set(g)) / len(documents(d)) for d, g in answered)
            / max(len(answered), 1),
            4,
        ),
        "refused": round(sum(not d for d in handed) / n, 4),
    }


def ask_folder(folder: Path, embeddings: Any, progress: Callable[[int, int], None]) -> Any:
    """Ingest ``folder`` (cached) and ask its questions: the default level, the probe (every
    judged candidate with its score) and a plain dense search."""
    from dataclasses import replace

    from ragbrain.evaluation.notes import cached_store_path, load_questions, notes_store
    from ragbrain.graph import build_graph
    from ragbrain.retriever import CorrectiveRetriever
    from ragbrain.settings import resolve_model
    from ragbrain.store.lexical import LexicalSearcher

    store = notes_store(folder, embeddings, progress=progress)
    path = cached_store_path(folder, resolve_model(embeddings).name)
    retriever = CorrectiveRetriever.from_store(path, embeddings=embeddings)
    graph = build_graph(store, "default", lexical=LexicalSearcher(store), handover=None)
    base = retriever.context
    probe = CorrectiveRetriever(graph=graph).model_copy(
        update={"context": replace(base, abstain="off", critic_threshold=0.0)}
    )
    questions = load_questions(folder)
    grades = json.loads((folder / "qrels.json").read_text(encoding="utf-8"))
    answers = []
    for n, question in enumerate(questions):
        run = retriever.run(question.text)
        judged = probe.run(question.text)["documents"]
        hits = store.search(question.text, DENSE_DEPTH)
        dense = [str(h["metadata"].get("source", "")) for h in hits]
        answers.append(
            {
                "q": question.text,
                "group": "broad",
                "split": question.split,
                "expect": list(question.expect),
                "grades": grades[question.text],
                "sources": [str(d.metadata.get("source", "")) for d in run["documents"]],
                "refused": not run["documents"],
                "reason": run.get("abstain_reason"),
                "depth": int(run["depth"]),
                "candidates": [
                    [
                        str(d.metadata.get("source", "")),
                        float(d.metadata["retrieval"]["distance"]),
                        d.metadata["retrieval"].get("critic_score"),
                    ]
                    for d in judged
                ],
                "dense": dense,
            }
        )
        progress(n + 1, len(questions))
    per_source = store.count() / max(len(list((folder / "notes").glob("*.md"))), 1)
    return {
        "dataset": folder.name,
        "model": resolve_model(embeddings).name,
        "chunks": store.count(),
        "per_source": round(per_source, 3),
        "answers": answers,
    }


def summarize(payload: dict[str, Any], threshold: float) -> dict[str, dict[str, Any]]:
    """Per split: dense top 10 chunks, the default level, and its hand-over replayed with
    refusal off (``benchmarks.notes.simulate`` at the shipped rule)."""
    from benchmarks.notes import simulate
    from ragbrain.critic.handover import shipped_rules

    rule = shipped_rules().get("evidence")
    applies = rule is not None and payload["per_source"] >= rule.min_per_source
    ratio = rule.ratio if rule is not None and applies else None
    out: dict[str, dict[str, Any]] = {}
    for split in ("fit", "test"):
        rows = [a for a in payload["answers"] if a["split"] == split]
        grades = [a["grades"] for a in rows]
        out[split] = {
            "queries": len(rows),
            "dense top 10": scores([a["dense"][:10] for a in rows], grades),
            "default": scores([a["sources"] for a in rows], grades),
            "refusal off": scores([simulate(a, threshold, ratio) for a in rows], grades),
            "no hand-over rule, refusal off": scores(
                [simulate(a, threshold, None) for a in rows], grades
            ),
        }
    return out


def table(summary: dict[str, dict[str, Any]], split: str) -> str:
    """One split's rows as Markdown."""
    lines = [
        "| run | nDCG@10 | recall@10 | documents handed over | precision | refused |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in summary[split].items():
        if name == "queries":
            continue
        lines.append(
            f"| {name} | {s['ndcg']:.3f} | {s['recall']:.3f} | {s['documents']:.2f} "
            f"| {s['precision']:.3f} | {s['refused']:.1%} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Write, ingest and ask each set; save ``results/<name>.{json,md}``; ``--keep``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sets", nargs="+")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--fit", type=int, default=100)
    parser.add_argument("--test", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--docs", type=int, default=1200, help="documents in each folder")
    parser.add_argument("--name", default="folders")
    parser.add_argument("--keep", type=Path, help="a folder to write each set's answers to")
    args = parser.parse_args()
    from ragbrain.critic.evidence import EvidenceCritic
    from ragbrain.evaluation import write_json
    from ragbrain.models.embeddings import embeddings_for

    critic = EvidenceCritic()
    embeddings = embeddings_for(critic.embedding_model)
    lines = ["# Folders of documents, ingested as notes folders", ""]
    summaries: dict[str, Any] = {}
    for name in args.sets:
        folder = write_folder(name, args.out, args.fit, args.test, args.seed, args.docs)

        def progress(done: int, total: int, name: str = name) -> None:
            if done == total or done % 50 == 0:
                say(f"{name}: {done}/{total}")

        payload = ask_folder(folder, embeddings, progress)
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
            write_json(args.keep / f"{name}.json", payload)
        summary = summarize(payload, critic.threshold)
        summaries[name] = {"chunks": payload["chunks"], "per_source": payload["per_source"]}
        summaries[name] |= summary
        for split in ("test", "fit"):
            lines += [
                f"## {name}, {split} split ({summary[split]['queries']} queries; "
                f"{payload['chunks']} chunks, {payload['per_source']} a document)",
                "",
                table(summary, split),
            ]
    text = "\n".join(lines)
    print(text)
    save(args.name, {"threshold": critic.threshold, "summaries": summaries}, text)


if __name__ == "__main__":
    main()
