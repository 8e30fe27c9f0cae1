"""Compound questions: does each part come back? Splitting on vs off, same run, same graph.

Compound questions are built from a BEIR set's *test* queries: two queries with relevant
documents and no relevant document in common, joined by one of four markers in turn ("What
is the difference between A and B?", "A vs B", "Compare A with B", "A versus B"; seeded).
Both halves' relevant documents are relevant. Measured, per question, on the chunks the full
pipeline hands over (adaptive depth, hybrid search, gate, fallback, the shipped critic): does
it include a relevant document of *both* halves ("both"), of at least one ("either"). The
same retriever graph runs with ``split_compound`` on and off, interleaved query by query.

The single-query test sets are run as they are, on and off, for nDCG@10 of what is handed
over (a question the splitter leaves alone runs the same either way).

Nothing is tuned here: the splitter's rules were written before this ran, and the test
queries only measure them.

    python -m benchmarks.compound_eval [--sets scifact nfcorpus] [--pairs 120] [--single scifact]
        [--name compound]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import save, say
from ragbrain.compound import split_compound
from ragbrain.context import RetrievalContext
from ragbrain.embeddings import default_embeddings
from ragbrain.evaluation.beir import Split, corpus_store, load_split
from ragbrain.evaluation.evaluate import eval_critic
from ragbrain.evaluation.metrics import ndcg_at_k
from ragbrain.graph import build_graph
from ragbrain.lexical.sync import LexicalSearcher
from ragbrain.retriever import CorrectiveRetriever

DATA = Path("/work/shared/data")
TEMPLATES = (
    "What is the difference between {a} and {b}?",
    "{a} vs {b}",
    "Compare {a} with {b}",
    "{a} versus {b}",
)
SEED = 23


def _half(text: str) -> str:
    return text.strip().rstrip("?.!").strip()


def compound_questions(split: Split, pairs: int, seed: int = SEED) -> list[dict[str, Any]]:
    """``pairs`` questions of two test queries each (disjoint relevant documents)."""
    relevant = {q: {d for d, s in docs.items() if s > 0} for q, docs in split.qrels.items()}
    ids = sorted(q for q, docs in relevant.items() if docs)
    random.Random(seed).shuffle(ids)
    built: list[dict[str, Any]] = []
    used: set[str] = set()
    for a in ids:
        if len(built) == pairs:
            break
        if a in used:
            continue
        b = next(
            (q for q in ids if q not in used and q != a and not relevant[a] & relevant[q]), None
        )
        if b is None:
            continue
        used |= {a, b}
        template = TEMPLATES[len(built) % len(TEMPLATES)]
        text = template.format(a=_half(split.queries[a]), b=_half(split.queries[b]))
        built.append(
            {
                "text": text,
                "halves": [a, b],
                "relevant": [sorted(relevant[a]), sorted(relevant[b])],
                "template": template,
                "split_as_built": split_compound(text)
                == [_half(split.queries[a]), _half(split.queries[b])],
            }
        )
    return built


def run(retriever: CorrectiveRetriever, text: str) -> tuple[list[str], float]:
    """The ids handed over for ``text`` and the seconds it took."""
    started = time.perf_counter()
    docs = retriever.invoke(text)
    return [str(d.id) for d in docs], time.perf_counter() - started


def measure_set(name: str, pairs: int, single: bool, seed: int = SEED) -> dict[str, Any]:
    """Both-halves coverage on the built questions, and (``single``) nDCG@10 on the set."""
    split = load_split(DATA / name, "test")
    say(f"{name}: opening the store (built once, cached)")
    store = corpus_store(split, default_embeddings(), progress=None)
    graph = build_graph(store, eval_critic(None), lexical=LexicalSearcher(store))
    sides = {
        "split": CorrectiveRetriever(graph=graph, context=RetrievalContext()),
        "no split": CorrectiveRetriever(
            graph=graph, context=RetrievalContext(split_compound=False)
        ),
    }
    questions = compound_questions(split, pairs, seed)
    rows: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for index, question in enumerate(questions):
        order = list(sides) if index % 2 == 0 else list(reversed(sides))
        for side in order:
            store.forget_queries()
            got, seconds = run(sides[side], question["text"])
            hit = [bool(set(got) & set(docs)) for docs in question["relevant"]]
            rows[side].append({"both": all(hit), "either": any(hit), "n": len(got), "s": seconds})
        if (index + 1) % 40 == 0:
            say(f"{name}: {index + 1}/{len(questions)} compound questions")
    result: dict[str, Any] = {
        "questions": len(questions),
        "split_as_built": sum(q["split_as_built"] for q in questions),
        "compound": {side: _coverage(r) for side, r in rows.items()},
        "by_template": {
            template: {
                side: _coverage(
                    [
                        r
                        for r, q in zip(rows[side], questions, strict=True)
                        if q["template"] == template
                    ]
                )
                for side in sides
            }
            for template in TEMPLATES
        },
        "examples": [q["text"] for q in questions[:4]],
    }
    if single:
        ndcg: dict[str, list[float]] = {side: [] for side in sides}
        split_single = 0
        for index, (query_id, text) in enumerate(sorted(split.queries.items())):
            split_single += bool(split_compound(text))
            order = list(sides) if index % 2 == 0 else list(reversed(sides))
            for side in order:
                store.forget_queries()
                got, _ = run(sides[side], text)
                ndcg[side].append(ndcg_at_k(got, split.qrels[query_id], 10))
        result["single"] = {
            "queries": len(split.queries),
            "split_by_the_rules": split_single,
            "ndcg@10": {side: statistics.fmean(v) for side, v in ndcg.items()},
        }
        say(f"{name}: single queries {result['single']}")
    return result


def _coverage(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    if not rows:
        return {"both": 0.0, "either": 0.0, "handed_over": 0.0, "p50_ms": 0.0}
    return {
        "both": sum(r["both"] for r in rows) / len(rows),
        "either": sum(r["either"] for r in rows) / len(rows),
        "handed_over": statistics.fmean(r["n"] for r in rows),
        "p50_ms": 1000 * statistics.median(r["s"] for r in rows),
    }


def markdown(payload: dict[str, Any]) -> str:
    """The results as Markdown."""
    lines = [
        "# Compound questions: each part handed over?",
        "",
        "Built from each set's test queries (two per question, four markers in turn, seed "
        f"{payload['seed']}); the full pipeline with the shipped critic, splitting on vs off, "
        "same run.",
        "",
        "| set | questions | split as built | both halves: split | both halves: no split | "
        "either: split | either: no split | chunks handed over (split / no split) | "
        "p50 ms (split / no split) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    total = {"questions": 0, "split": 0.0, "no split": 0.0}
    for name, result in payload["sets"].items():
        on, off = result["compound"]["split"], result["compound"]["no split"]
        lines.append(
            f"| {name} | {result['questions']} | {result['split_as_built']} | {on['both']:.3f} | "
            f"{off['both']:.3f} | {on['either']:.3f} | {off['either']:.3f} | "
            f"{on['handed_over']:.1f} / {off['handed_over']:.1f} | "
            f"{on['p50_ms']:.0f} / {off['p50_ms']:.0f} |"
        )
        total["questions"] += result["questions"]
        total["split"] += on["both"] * result["questions"]
        total["no split"] += off["both"] * result["questions"]
    n = total["questions"]
    lines += [
        f"| all | {n} | | {total['split'] / n:.3f} | {total['no split'] / n:.3f} | | | | |",
        "",
        "By marker (both halves, split / no split):",
        "",
        "| set | marker | split | no split |",
        "|---|---|---:|---:|",
    ]
    for name, result in payload["sets"].items():
        for template, by_side in result["by_template"].items():
            lines.append(
                f"| {name} | `{template}` | {by_side['split']['both']:.3f} | "
                f"{by_side['no split']['both']:.3f} |"
            )
    lines += ["", "Single-query test sets as they are (nDCG@10 of what is handed over):", ""]
    lines += ["| set | queries | split by the rules | split | no split | difference |"]
    lines += ["|---|---:|---:|---:|---:|---:|"]
    for name, result in payload["sets"].items():
        if "single" not in result:
            continue
        single = result["single"]
        on, off = single["ndcg@10"]["split"], single["ndcg@10"]["no split"]
        lines.append(
            f"| {name} | {single['queries']} | {single['split_by_the_rules']} | {on:.4f} | "
            f"{off:.4f} | {on - off:+.4f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["scifact", "nfcorpus"])
    parser.add_argument("--pairs", type=int, default=120, help="Compound questions per set.")
    parser.add_argument("--single", nargs="*", default=["scifact"], help="Sets run as they are.")
    parser.add_argument("--name", default="compound", help="Results file name (results/NAME).")
    parser.add_argument("--seed", type=int, default=SEED, help="Seed of the pairing.")
    options = parser.parse_args()
    sets = {
        name: measure_set(name, options.pairs, name in options.single, options.seed)
        for name in options.sets
    }
    payload = {"pairs_per_set": options.pairs, "seed": options.seed, "sets": sets}
    save(options.name, payload, markdown(payload))


if __name__ == "__main__":
    main()
