"""Compound questions: where does a half's relevant document get lost on its way out?

For each question built as ``benchmarks.compound_eval`` builds them (two queries of a split
joined by a marker), the full pipeline (splitting on) is run and each half is followed
through the stages: is a relevant document of that half in its part's own search (top
``--deep``), in the fused candidates the critic judges, kept by the critic, handed over?
The stage where it drops out is counted; for a half the critic dropped, whether its part's
best-judged chunk was relevant; for a half missing from the candidates, how deep its part's
search found it.

Meant for train/dev splits (choosing), not for the test split one reports.

    python -m benchmarks.compound_where [--set nfcorpus] [--split dev] [--pairs 60]
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from benchmarks.common import save, say
from benchmarks.compound_eval import DATA, SEED, compound_questions
from ragbrain.context import RetrievalContext
from ragbrain.evaluation.beir import corpus_store, load_split
from ragbrain.evaluation.evaluate import eval_critic
from ragbrain.graph import build_graph
from ragbrain.lexical.fusion import hybrid_search
from ragbrain.lexical.sync import LexicalSearcher
from ragbrain.models.embeddings import default_embeddings
from ragbrain.nodes.critic import bind_critic
from ragbrain.query.compound import split_compound
from ragbrain.query.parts import judge_parts
from ragbrain.state import Hit

STAGES = (
    "handed over",
    "kept by the critic, not handed over",
    "dropped by the critic",
    "in its part's search, not among the candidates",
    "not in its part's search",
)


def _run(graph: Any, text: str, judged: int) -> tuple[list[Hit], list[Any], int]:
    """The candidates the critic judged, the documents handed over, and the depth."""
    hits: list[Hit] = []
    documents: list[Any] = []
    depth = 0
    for update in graph.stream(
        {"query": text, "type_filter": None},
        context=RetrievalContext(judged_compound=judged),
        stream_mode="updates",
    ):
        for node, change in update.items():
            if change and "hits" in change:
                hits = change["hits"]
            if node == "critic_filter":
                documents = change["documents"]
            if node == "choose_depth":
                depth = change["depth"]
    return hits, documents, depth


def _kept(critic: Any, text: str, hits: list[Hit]) -> tuple[set[str], list[int]]:
    """The candidates the critic keeps (judged as ``critic_filter`` judges), and each part's
    best-judged candidate."""
    scores = critic.score(text, [h["text"] for h in hits], [h["distance"] for h in hits])
    parts = split_compound(text)
    bests: list[int] = []
    if parts and all("part_distances" in h for h in hits):
        scores, _, bests = judge_parts(critic, parts, hits, scores)
    return {h["id"] for h, s in zip(hits, scores, strict=True) if s >= critic.threshold}, bests


def follow(
    name: str, split_name: str, pairs: int, deep: int, seed: int, judged: int = 15
) -> dict[str, Any]:
    """Count, per half, the stage where its relevant documents drop out."""
    split = load_split(DATA / name, split_name)
    store = corpus_store(split, default_embeddings(), progress=None)
    lexical = LexicalSearcher(store)
    critic = eval_critic(None)
    if critic is None:
        raise SystemExit("The shipped critic is missing; this diagnosis needs it.")
    bound = bind_critic(critic, store)
    graph = build_graph(store, critic, lexical=lexical)
    stages: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    both = 0
    depths: Counter[int] = Counter()
    questions = compound_questions(split, pairs, seed)
    for index, question in enumerate(questions):
        store.forget_queries()
        parts = split_compound(question["text"])
        hits, documents, depth = _run(graph, question["text"], judged)
        depths[depth] += 1
        kept, bests = _kept(bound, question["text"], hits)
        out = {str(d.id) for d in documents}
        candidates = {h["id"] for h in hits}
        lost = 0
        for half, relevant in enumerate(question["relevant"]):
            relevant_set = set(relevant)
            if relevant_set & out:
                stages[STAGES[0]] += 1
                continue
            lost += 1
            if relevant_set & kept:
                stages[STAGES[1]] += 1
            elif relevant_set & candidates:
                stages[STAGES[2]] += 1
                if bests and bests[half] >= 0 and hits[bests[half]]["id"] in relevant_set:
                    notes["its part's best-judged chunk is relevant"] += 1
            else:
                part = parts[half] if len(parts) == 2 else question["text"]
                found = [h["id"] for h in hybrid_search(store, lexical.index, part, deep)[0]]
                ranks = [found.index(d) + 1 for d in relevant_set if d in found]
                stages[STAGES[3] if ranks else STAGES[4]] += 1
                if ranks:
                    notes[f"best rank in its part's search <= 5: {min(ranks) <= 5}"] += 1
        both += lost == 0
        if (index + 1) % 20 == 0:
            say(f"{name}/{split_name}: {index + 1}/{len(questions)}")
    return {
        "set": name,
        "split": split_name,
        "questions": len(questions),
        "both": both / len(questions),
        "halves": dict(stages),
        "of the dropped": dict(notes),
        "depths": dict(depths),
        "judged": judged,
    }


def markdown(result: dict[str, Any]) -> str:
    """The counts as Markdown."""
    halves = 2 * result["questions"]
    lines = [
        f"# Compound questions: where a half is lost ({result['set']} {result['split']})",
        "",
        f"{result['questions']} questions, both halves handed over: {result['both']:.3f}; "
        f"depths {result['depths']}; {result['judged']} candidates judged.",
        "",
        "| stage a half's relevant documents reach last | halves | share |",
        "|---|---:|---:|",
    ]
    lines += [
        f"| {stage} | {result['halves'].get(stage, 0)} | "
        f"{result['halves'].get(stage, 0) / halves:.3f} |"
        for stage in STAGES
    ]
    lines += ["", "Of the halves lost:", ""]
    lines += [f"- {what}: {n}" for what, n in sorted(result["of the dropped"].items())]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="nfcorpus")
    parser.add_argument("--split", default="dev", help="Not the test split you report.")
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--deep", type=int, default=30, help="How deep each part is searched.")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--judged", type=int, default=15, help="RetrievalContext.judged_compound.")
    parser.add_argument("--name", default=None, help="Results file name (results/NAME).")
    options = parser.parse_args()
    result = follow(
        options.set, options.split, options.pairs, options.deep, options.seed, options.judged
    )
    print(markdown(result))
    save(options.name or f"compound_where-{options.set}-{options.split}", result, markdown(result))


if __name__ == "__main__":
    main()
