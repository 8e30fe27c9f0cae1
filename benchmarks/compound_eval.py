"""Compound questions: does each part come back? Splitting on vs off, same run, same graph.

Compound questions are built from one split of a BEIR set (``--split``: test for reporting,
train or dev for choosing): two queries with relevant documents and no relevant document in
common, joined by one of four markers in turn ("What is the difference between A and B?",
"A vs B", "Compare A with B", "A versus B"; seeded), in the language of the set's queries
(``TEMPLATES_BY_LANGUAGE``: JaQuAD's with と...の違い/比較, iApp's with เปรียบเทียบ/กับ,
CMRC 2018's and DRCD's with 和...的区别/比较). Both halves' relevant documents are
relevant. Measured, per question, on the chunks the full pipeline hands over (adaptive depth,
hybrid search, gate, fallback, the shipped critic): does it include a relevant document of
*both* halves ("both"), of at least one ("either"). The same graph runs with
``split_compound`` on (``judged_compound`` 15, and 10) and off, interleaved question by
question; the run with 10 also gives what a critic judging against the whole question alone
would have handed over from the same candidates (the pipeline before chunks were judged
against parts and compound questions had more candidates). Each half is also
asked alone: a question whose halves, asked alone, each get a relevant document is the most
the compound question can get.

The split's queries are also run as they are, on and off, for nDCG@10 of what is handed over;
a query the splitter leaves alone takes the very same path either way and is run once.

Nothing is tuned here: the splitter's rules and the critic's part judging were fixed before
the test split ran.

    python -m benchmarks.compound_eval [--sets scifact nfcorpus] [--pairs 120] [--single scifact]
        [--split test] [--name compound] [--embedding {minilm,e5-small}]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import save, say
from ragbrain import RetrievalContext, build_graph
from ragbrain.evaluation import Split, corpus_store, eval_critic, load_split, ndcg_at_k
from ragbrain.lexical.sync import LexicalSearcher
from ragbrain.models.embeddings import EMBEDDING_CHOICES, embeddings_for, model_name_of
from ragbrain.nodes.critic import bind_critic
from ragbrain.query.compound import split_compound
from ragbrain.store.hits import Hit

if TYPE_CHECKING:
    from ragbrain import Critic

DATA = Path("/work/shared/data")
#: The markers questions are joined by, in the language of the set's queries (each a frame
#: ``ragbrain.query.compound`` splits), four per language, taken in turn.
TEMPLATES_BY_LANGUAGE: dict[str, tuple[str, ...]] = {
    "en": (
        "What is the difference between {a} and {b}?",
        "{a} vs {b}",
        "Compare {a} with {b}",
        "{a} versus {b}",
    ),
    "ja": ("{a}と{b}の違いは？", "{a}と{b}はどう違う？", "{a}と{b}を比較して", "{a}と{b}の比較"),
    "th": (
        "เปรียบเทียบ {a} กับ {b}",
        "ความแตกต่างระหว่าง {a} กับ {b}",
        "{a} กับ {b} ต่างกันอย่างไร",
        "เปรียบเทียบ {a} และ {b}",
    ),
    "zh": ("{a}和{b}的区别", "{a}与{b}有什么不同？", "比较{a}和{b}", "{a}跟{b}的差异"),
}
#: The language of each shared set's queries; any other set is taken as English.
LANGUAGES = {
    "jaquad_ret": "ja",
    "iapp_th_ret": "th",
    "cmrc2018_ret": "zh",
    "drcd_ret": "zh",
}
TEMPLATES = TEMPLATES_BY_LANGUAGE["en"]
SEED = 23


def templates_for(name: str) -> tuple[str, ...]:
    """The markers of the set ``name``'s query language."""
    return TEMPLATES_BY_LANGUAGE[LANGUAGES.get(name, "en")]


def _half(text: str) -> str:
    return text.strip().rstrip("?.!？。！").strip()


def compound_questions(
    split: Split, pairs: int, seed: int = SEED, templates: Sequence[str] = TEMPLATES
) -> list[dict[str, Any]]:
    """``pairs`` questions of two test queries each (disjoint relevant documents), joined by
    ``templates`` in turn."""
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
        template = templates[len(built) % len(templates)]
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


class Recording:
    """The critic as the graph uses it, remembering every batch it scores, so that one run
    also shows what a critic judging against the whole question alone would have kept."""

    def __init__(self, critic: Critic) -> None:
        self.critic = critic
        self.threshold = critic.threshold
        self.uses_distance = getattr(critic, "uses_distance", False)
        self.calls: list[tuple[str, list[float]]] = []

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        """The critic's scores, remembered."""
        scores = self.critic.score(query, passages, distances)
        self.calls.append((query, scores))
        return scores


def whole_judged(
    hits: Sequence[Hit], scores: Sequence[float], threshold: float, depth: int
) -> list[str]:
    """What ``critic_filter`` handed over before it judged chunks against a question's parts:
    the candidates scored at least the cut against the whole question, past the depth only
    those above it."""
    kept = [i for i, s in enumerate(scores) if not math.isnan(s) and s >= threshold]
    kept = kept[:depth] + [i for i in kept[depth:] if scores[i] > threshold]
    return [hits[i]["id"] for i in kept]


def run(
    graph: Any, critic: Recording | None, context: RetrievalContext, text: str
) -> tuple[list[str], float, list[str] | None]:
    """The ids handed over for ``text``, the seconds it took, and (critic on) the ids a
    critic judging against the whole question alone would have handed over."""
    hits: list[Hit] = []
    ids: list[str] = []
    depth = 0
    if critic is not None:
        critic.calls.clear()
    started = time.perf_counter()
    for update in graph.stream(
        {"query": text, "type_filter": None}, context=context, stream_mode="updates"
    ):
        for node, change in update.items():
            if change and "hits" in change:
                hits = change["hits"]
            if node == "choose_depth":
                depth = change["depth"]
            if node == "critic_filter":
                ids = [str(d.id) for d in change["documents"]]
    seconds = time.perf_counter() - started
    if critic is None or not critic.calls:
        return ids, seconds, None
    query, scores = critic.calls[0]
    assert query == text, "the critic's first batch is the whole question's"
    return ids, seconds, whole_judged(hits, scores, critic.threshold, depth)


def _row(got: Sequence[str], relevant: Sequence[Sequence[str]], seconds: float) -> dict[str, Any]:
    hit = [bool(set(got) & set(docs)) for docs in relevant]
    return {"both": all(hit), "either": any(hit), "n": len(got), "s": seconds}


#: "split": the pipeline as it is; "split, 10 judged": with judged_compound 10; "before":
#: the candidates of that run as a critic judging against the whole question alone hands them
#: over (the pipeline before chunks were judged against parts); "no split": splitting off.
SIDES = ("split", "split, 10 judged", "before", "no split")
RUNS = {
    "split": RetrievalContext(),
    "split, 10 judged": RetrievalContext(judged_compound=10),
    "no split": RetrievalContext(split_compound=False),
}


def measure_set(
    name: str,
    split_name: str,
    pairs: int,
    single: bool,
    seed: int = SEED,
    embedding: str | None = None,
) -> dict[str, Any]:
    """Both-halves coverage on the built questions, and (``single``) nDCG@10 on the set, on a
    store of the ``embedding`` model (``ragbrain.models.embeddings.embeddings_for``; None: the
    default)."""
    split = load_split(DATA / name, split_name, drop_unknown_docs=True)
    say(f"{name}/{split_name}: opening the store (built once, cached)")
    store = corpus_store(split, embeddings_for(embedding), progress=None)
    shipped = eval_critic(None)
    critic = Recording(bind_critic(shipped, store)) if shipped is not None else None
    graph = build_graph(store, critic, lexical=LexicalSearcher(store))
    contexts = {side: RUNS[side] for side in ("split", "no split")}
    templates = templates_for(name)
    questions = compound_questions(split, pairs, seed, templates)
    rows: dict[str, list[dict[str, Any]]] = {side: [] for side in SIDES}
    for index, question in enumerate(questions):
        order = list(RUNS) if index % 2 == 0 else list(reversed(RUNS))
        for side in order:
            store.forget_queries()
            got, seconds, whole = run(graph, critic, RUNS[side], question["text"])
            rows[side].append(_row(got, question["relevant"], seconds))
            if side == "split, 10 judged":
                rows["before"].append(_row(whole or got, question["relevant"], seconds))
        if (index + 1) % 40 == 0:
            say(f"{name}: {index + 1}/{len(questions)} compound questions")
    # Each half asked alone (the full pipeline): the most a compound question can get.
    alone: dict[str, list[str]] = {}
    result: dict[str, Any] = {
        "questions": len(questions),
        "split": split_name,
        "model": model_name_of(store.embeddings),
    }
    if single:
        ndcg: dict[str, list[float]] = {side: [] for side in contexts}
        split_single = 0
        for index, (query_id, text) in enumerate(sorted(split.queries.items())):
            parts = split_compound(text)
            split_single += bool(parts)
            # A question the rules leave alone takes the very same path on both sides.
            sides = list(contexts) if parts else ["split"]
            got_by: dict[str, list[str]] = {}
            for side in sides if index % 2 == 0 else list(reversed(sides)):
                store.forget_queries()
                got_by[side] = run(graph, critic, contexts[side], text)[0]
            alone[query_id] = got_by["split"]
            for side in contexts:
                ndcg[side].append(
                    ndcg_at_k(got_by.get(side, got_by["split"]), split.qrels[query_id], 10)
                )
        result["single"] = {
            "queries": len(split.queries),
            "split_by_the_rules": split_single,
            "ndcg@10": {side: statistics.fmean(v) for side, v in ndcg.items()},
        }
        say(f"{name}: single queries {result['single']}")
    for question in questions:
        for query_id in question["halves"]:
            if query_id not in alone:
                store.forget_queries()
                alone[query_id] = run(graph, critic, contexts["split"], split.queries[query_id])[0]
    each_alone = [
        all(
            bool(set(alone[q]) & set(docs))
            for q, docs in zip(question["halves"], question["relevant"], strict=True)
        )
        for question in questions
    ]
    on_answerable = [r["both"] for r, ok in zip(rows["split"], each_alone, strict=True) if ok]
    result.update(
        {
            "split_as_built": sum(q["split_as_built"] for q in questions),
            "compound": {side: _coverage(r) for side, r in rows.items()},
            "each_half_alone": sum(each_alone) / len(questions),
            "both_where_each_alone": sum(on_answerable) / max(len(on_answerable), 1),
            "by_template": {
                template: {
                    side: _coverage(
                        [
                            r
                            for r, q in zip(rows[side], questions, strict=True)
                            if q["template"] == template
                        ]
                    )
                    for side in SIDES
                }
                for template in templates
            },
            "examples": [q["text"] for q in questions[:4]],
        }
    )
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
    both = " | ".join(f"both: {side}" for side in SIDES)
    lines = [
        "# Compound questions: each part handed over?",
        "",
        "Built from each set's queries (two per question, four markers in turn, seed "
        f"{payload['seed']}); the full pipeline with the shipped critic, in the same run, "
        "interleaved: *split* (the pipeline as it is: parts searched, 15 candidates judged, "
        "each chunk judged against the whole question and each part), *split, 10 judged* "
        "(the same with 10 candidates), *before* (that run's candidates handed over as a "
        "critic judging against the whole question alone does: the pipeline before parts "
        "were judged), *no split*. *Each half alone*: both halves, asked alone, get a "
        "relevant document handed over (the most a compound question can get); *where each "
        "alone*: the share, with *split*, among those.",
        "",
        f"| set | split | questions | split as built | {both} | each half alone "
        "| both where each alone | either: split / no split | handed over: "
        + " / ".join(SIDES)
        + " | p50 ms: split / no split |",
        "|---|---|---:|---:|" + "---:|" * (len(SIDES) + 5),
    ]
    total: dict[str, float] = {"questions": 0, **dict.fromkeys(SIDES, 0.0), "alone": 0.0}
    for name, result in payload["sets"].items():
        by = result["compound"]
        on, off = by["split"], by["no split"]
        cells = " | ".join(f"{by[side]['both']:.3f}" for side in SIDES)
        counts = " / ".join(f"{by[side]['handed_over']:.1f}" for side in SIDES)
        lines.append(
            f"| {name} ({result.get('model', 'all-MiniLM-L6-v2')}) | {result['split']} "
            f"| {result['questions']} | {result['split_as_built']} "
            f"| {cells} | {result['each_half_alone']:.3f} | {result['both_where_each_alone']:.3f} "
            f"| {on['either']:.3f} / {off['either']:.3f} | {counts} "
            f"| {on['p50_ms']:.0f} / {off['p50_ms']:.0f} |"
        )
        total["questions"] += result["questions"]
        for side in SIDES:
            total[side] += by[side]["both"] * result["questions"]
        total["alone"] += result["each_half_alone"] * result["questions"]
    n = total["questions"]
    cells = " | ".join(f"{total[side] / n:.3f}" for side in SIDES)
    lines += [
        f"| all | | {n:.0f} | | {cells} | {total['alone'] / n:.3f} | | | | |",
        "",
        "By marker (both halves):",
        "",
        "| set | marker | " + " | ".join(SIDES) + " |",
        "|---|---|" + "---:|" * len(SIDES),
    ]
    for name, result in payload["sets"].items():
        for template, by_side in result["by_template"].items():
            cells = " | ".join(f"{by_side[side]['both']:.3f}" for side in SIDES)
            lines.append(f"| {name} | `{template}` | {cells} |")
    lines += ["", "Single-query sets as they are (nDCG@10 of what is handed over):", ""]
    lines += ["| set | split | queries | split by the rules | split | no split | difference |"]
    lines += ["|---|---|---:|---:|---:|---:|---:|"]
    for name, result in payload["sets"].items():
        if "single" not in result:
            continue
        single = result["single"]
        on_, off_ = single["ndcg@10"]["split"], single["ndcg@10"]["no split"]
        lines.append(
            f"| {name} | {result['split']} | {single['queries']} | "
            f"{single['split_by_the_rules']} | {on_:.4f} | {off_:.4f} | {on_ - off_:+.4f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=["scifact", "nfcorpus"])
    parser.add_argument("--pairs", type=int, default=120, help="Compound questions per set.")
    parser.add_argument("--single", nargs="*", default=["scifact"], help="Sets run as they are.")
    parser.add_argument("--name", default="compound", help="Results file name (results/NAME).")
    parser.add_argument("--seed", type=int, default=SEED, help="Seed of the pairing.")
    parser.add_argument(
        "--split",
        default="test",
        help="The split the questions come from: train or dev for choosing, test for reporting.",
    )
    parser.add_argument(
        "--embedding",
        choices=sorted(EMBEDDING_CHOICES),
        help="The stores' embedding model (default: the default for a new store).",
    )
    options = parser.parse_args()
    sets = {
        name: measure_set(
            name,
            options.split,
            options.pairs,
            name in options.single,
            options.seed,
            options.embedding,
        )
        for name in options.sets
    }
    payload = {
        "pairs_per_set": options.pairs,
        "seed": options.seed,
        "split": options.split,
        "embedding": options.embedding,
        "sets": sets,
    }
    save(options.name, payload, markdown(payload))


if __name__ == "__main__":
    main()
