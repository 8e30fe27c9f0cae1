"""Folders of documents as notes folders: a BEIR set's corpus written as one Markdown file a
document, ingested as ``ragbrain ingest`` does (a document spans chunks as a note does), and a
seeded sample of its queries asked of the shipped retriever; and the hand-over rule fit
leave-one-domain-out over these folders and the notes folders.

For each set (``../shared/data/<set>``: ``corpus.jsonl``, ``queries.jsonl``, ``qrels/``) the
folder ``<out>/<set>/notes/<id>.md`` (``# title``, then the text) is written once
(``write_folder``: ``--docs`` documents), with a fit split (train or dev queries) and a test
split (test queries), ``--fit`` and ``--test`` of each drawn with ``--seed``. The store is
built and cached as a notes folder's is (``ragbrain.evaluation.notes.notes_store``, under
``$RAGBRAIN_CACHE``). Each query is asked at the default level, once more with the critic
threshold at 0, refusal off and no hand-over rule (every judged candidate with its critic
score, as ``benchmarks.notes --keep`` records them), and of a plain dense search of the same
store. Reported per set and split, over documents (a chunk counts as its document, at its first
chunk; graded qrels): nDCG@10, recall within ten documents, documents handed over, precision
and refused, for dense top 10 chunks, the default level (a refusal scores 0) and hand-overs
replayed on the recorded candidates with refusal off (``replay``: the node's own code).

``--rules`` fits the rule (``RULES``: ratio, others, order) leave-one-domain-out on recorded
answers, a folder of documents' and a notes folder's (``benchmarks.notes --keep``) alike: on
the other domains' fit splits, the most mean nDCG@10 (documents' queries, notes' broad
questions) that keeps every notes folder's answerable questions found (``FOUND``), short
(``CHUNKS``) and from the expected note (``FROM_EXPECTED``); judged on the held-out domain's
test split. ``--ship`` writes the rule fit on every domain to ``handover.json``. With ``--own``
(today's recorded answers of the same folders), the folders are another model's notes and the
rule is the evidence critic's for questions in the notes' language (``fit_own``, ``OWN_RULES``:
caps of chunks a note too): the fewest chunks at today's found share and share from the note.

    RAGBRAIN_CACHE=/tmp/issue-54-ir/cache python -m benchmarks.folders scifact nfcorpus \\
        --out /tmp/issue-54-ir [--docs 1200] [--fit 100] [--test 150] [--keep DIR]
    python -m benchmarks.notes ../shared/data/notes_dev/{tldr,simonw_til,gitlab_runbooks} \\
        --keep DIR
    python -m benchmarks.folders --rules DIR/{tldr,simonw_til,gitlab_runbooks}.json \\
        /tmp/issue-54-ir/keep/{scifact,nfcorpus}.json --name folders-rules [--ship]
    python -m benchmarks.folders --rules DIR/{ja,th,zh}.json --own TODAY/{ja,th,zh}.json \\
        --name notes-ml-rules [--ship --scripts cjk thai]
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

    from ragbrain.evaluation import cached_store_path, notes_store
    from ragbrain.evaluation.notes import load_questions
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
        update={"context": replace(base, abstain="off", critic_threshold=0.0, overview=False)}
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
    """Per split: dense top 10 chunks, the default level, and hand-overs replayed with refusal
    off (``replay``): the shipped rule, the rule of one ratio (0.5) for every note, none."""
    from ragbrain.critic.handover import HandOverRule, shipped_rules

    rule = shipped_rules().get("evidence")
    if rule is not None and payload["per_source"] < rule.min_per_source:
        rule = None
    sides = {"refusal off": rule, "ratio 0.5, refusal off": HandOverRule(0.5, "one ratio")}
    sides["no hand-over rule, refusal off"] = None
    out: dict[str, dict[str, Any]] = {}
    for split in ("fit", "test"):
        rows = [a for a in payload["answers"] if a["split"] == split]
        grades = [a["grades"] for a in rows]
        out[split] = {
            "queries": len(rows),
            "dense top 10": scores([a["dense"][:10] for a in rows], grades),
            "default": scores([a["sources"] for a in rows], grades),
        }
        for name, side in sides.items():
            out[split][name] = scores([replay(a, threshold, side) for a in rows], grades)
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


#: The hand-over rules tried (``ragbrain.critic.handover.HandOverRule``): ratio, others,
#: order, chunks a note, chunks of a note besides the best one's (0: no cap); the shipped
#: rule's family (ratio = others, rank order) among them.
RULES = tuple(
    (ratio, others, order, 0, 0)
    for ratio in (0.4, 0.5, 0.6, 0.7, 0.8)
    for others in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
    for order in ("rank", "score")
)
#: The rules tried for another model's notes asked in their own language (``--own``): those
#: of ``RULES`` with a cap of chunks a note and of another note's.
OWN_RULES = tuple(
    (ratio, others, order, per_note, others_per_note)
    for ratio, others, order, _, _ in RULES
    for per_note in (0, 1, 2, 3, 4)
    for others_per_note in (0, 1)
    if not (per_note == 1 and others_per_note)
)
#: A notes folder's fit-split answerable questions, under a rule: the expected note found for
#: at least this share, at most this many chunks, at least this share of them from it.
FOUND, CHUNKS, FROM_EXPECTED = 0.975, 3.0, 0.6


def replay(answer: dict[str, Any], threshold: float, rule: Any) -> list[str]:
    """The sources the graph hands over for ``answer``'s recorded candidates under ``rule``
    (None: every kept chunk), by the node's own code (``nodes.critic.handed_over``, then
    ``critic.handover.narrow``). A compound question (``split_compound``) is handed over
    without the rule, as the node does; the parts' own picks are not recorded, so its
    replay is the kept chunks up to the depth."""
    from ragbrain.critic.base import keep_mask
    from ragbrain.critic.handover import narrow
    from ragbrain.nodes.critic import handed_over
    from ragbrain.query.compound import split_compound

    candidates = answer["candidates"]
    if not candidates:
        return []
    sources = [c[0] for c in candidates]
    judged = [float("nan") if c[2] is None else float(c[2]) for c in candidates]
    chosen = handed_over(judged, threshold, int(answer["depth"]), None)
    if rule is not None and any(keep_mask(judged, threshold)) and not split_compound(answer["q"]):
        chosen, _ = narrow(chosen, judged, sources, rule)
    return [sources[i] for i in chosen]


def _mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def answer_scores(handed: Sequence[Sequence[str]], pointed: Sequence[dict[str, Any]]) -> Any:
    """Answerable questions' hand-overs (``handed``, one list of sources per question of
    ``pointed``): found, first, chunks and the share of them from an expected note."""
    pairs = list(zip(handed, pointed, strict=True))
    return {
        "found": _mean([float(bool(set(h) & set(a["expect"]))) for h, a in pairs]),
        "first": _mean([float(bool(h) and h[0] in a["expect"]) for h, a in pairs]),
        "chunks": _mean([float(len(h)) for h in handed]),
        "from_expected": _mean(
            [sum(s in a["expect"] for s in h) / len(h) if h else 0.0 for h, a in pairs]
        ),
    }


def recorded_scores(payload: dict[str, Any], split: str, lang: str | None = None) -> Any:
    """``answer_scores`` of ``payload``'s answerable questions of ``split`` (asked in ``lang``
    when given) answered at the default level, as the graph handed them over when recorded."""
    pointed = [
        a
        for a in payload["answers"]
        if a["split"] == split
        and a["group"] == "answerable"
        and not a["refused"]
        and (lang is None or a.get("lang") == lang)
    ]
    return answer_scores([a["sources"] for a in pointed], pointed)


def domain_scores(
    payload: dict[str, Any], threshold: float, rule: Any, split: str, lang: str | None = None
) -> Any:
    """A document folder's ``scores`` under ``rule``; a notes folder's answerable questions
    (found, first, chunks, share from an expected note; those answered at the default level)
    and broad ones (nDCG@10, recall, precision, notes; a refused one scores 0), with a plain
    dense top 10's; those asked in ``lang`` alone when given."""
    answers = [
        a
        for a in payload["answers"]
        if a["split"] == split and (lang is None or a.get("lang") == lang)
    ]
    if "grades" in (answers[0] if answers else {}):
        out = scores([replay(a, threshold, rule) for a in answers], [a["grades"] for a in answers])
        out["dense"] = scores([a["dense"][:10] for a in answers], [a["grades"] for a in answers])
        return out
    pointed = [a for a in answers if a["group"] == "answerable" and not a["refused"]]
    broad = [a for a in answers if a["group"] == "broad"]
    sides = {
        "": [[] if a["refused"] else replay(a, threshold, rule) for a in broad],
        "dense ": [a["dense"][:10] for a in broad],
    }
    out = answer_scores([replay(a, threshold, rule) for a in pointed], pointed)
    for side, lists in sides.items():
        grades = [dict.fromkeys(a["expect"], 1) for a in broad]
        got = scores(lists, grades)
        out[f"{side}broad"] = got | {
            "recall": _mean(
                [len(set(h) & set(g)) / len(g) for h, g in zip(lists, grades, strict=True)]
            ),
            "notes": got["documents"],
        }
    return out


def fit_own(
    payloads: Sequence[dict[str, Any]], threshold: float, today: dict[str, dict[str, float]]
) -> tuple[Any, float]:
    """For notes asked in their own language (a payload's questions whose ``lang`` is its
    ``dataset``): the rule of ``OWN_RULES`` handing the fewest chunks to the payloads' fit-split
    answerable questions (then the most from an expected note, then the most first) among
    those that find an expected note as often as today and hand over as large a share from it
    (``today[dataset]``: ``recorded_scores``) in every payload. Returns the rule and its mean
    chunks (None and 0.0 when none keeps today's)."""
    from ragbrain.critic.handover import HandOverRule

    best: tuple[Any, tuple[float, ...]] = (None, (-math.inf,))
    for ratio, others, order, per_note, others_per_note in OWN_RULES:
        rule = HandOverRule(
            ratio,
            "fit",
            others=others,
            order=order,
            per_note=per_note,
            others_per_note=others_per_note,
        )
        got = [domain_scores(p, threshold, rule, "fit", p["dataset"]) for p in payloads]
        floors = [today[p["dataset"]] for p in payloads]
        if any(
            g[name] < f[name] - 1e-9
            for g, f in zip(got, floors, strict=True)
            for name in ("found", "from_expected")
        ):
            continue
        key = tuple(
            sign * _mean([g[name] for g in got])
            for sign, name in ((-1, "chunks"), (1, "from_expected"), (1, "first"))
        )
        if key > best[1]:
            best = (rule, key)
    return best[0], (-best[1][0] if best[0] is not None else 0.0)


def fit_rule(payloads: Sequence[dict[str, Any]], threshold: float) -> tuple[Any, float]:
    """The rule of ``RULES`` with the highest mean nDCG@10 over the payloads' fit splits (a
    document folder's queries, a notes folder's broad questions) among those that keep every
    notes folder's fit-split answerable questions within ``FOUND``, ``CHUNKS`` and
    ``FROM_EXPECTED``; of rules as good, the one handing the fewest chunks to those answerable
    questions (the ratio decides which of a note's own chunks go, which no nDCG of notes
    sees). Returns the rule and its mean."""
    from ragbrain.critic.handover import HandOverRule

    best: tuple[Any, float, float] = (None, -1.0, 0.0)
    for ratio, others, order, _, _ in RULES:
        rule = HandOverRule(ratio, "fit", others=others, order=order)
        values, chunks = [], 0.0
        for payload in payloads:
            got = domain_scores(payload, threshold, rule, "fit")
            if "broad" in got:
                if (
                    got["found"] < FOUND
                    or got["chunks"] > CHUNKS
                    or got["from_expected"] < FROM_EXPECTED
                ):
                    break
                values.append(got["broad"]["ndcg"])
                chunks += got["chunks"]
            else:
                values.append(got["ndcg"])
        else:
            mean = sum(values) / len(values)
            if mean > best[1] + 1e-9 or (abs(mean - best[1]) <= 1e-9 and chunks < best[2]):
                best = (rule, mean, chunks)
    return best[0], best[1]


def rules_lodo(paths: Sequence[Path], threshold: float, ship: bool) -> tuple[dict[str, Any], str]:
    """``--rules``: fit a hand-over rule leave-one-domain-out over the recorded answers
    (``--keep`` here and ``benchmarks.notes --keep``), judge it on each held-out domain's
    test split beside one ratio (0.5) for every note, none, and dense top 10; ``ship``: write
    the rule fit on every domain to ``handover.json``."""
    from ragbrain.critic.handover import HandOverRule, default_rules_path, shipped_rules
    from ragbrain.evaluation import write_json

    payloads = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in paths}
    shipped = shipped_rules().get("evidence")
    out: dict[str, Any] = {}
    lines = [
        "## Hand-over rules, leave-one-domain-out (test split of the held-out domain)",
        "",
        "| held out | rule fit on the others | fit, ratio 0.5, none, dense top 10 |",
        "|---|---|---|",
    ]
    for held in [*payloads, ""]:
        rule, mean = fit_rule([p for n, p in payloads.items() if n != held], threshold)
        said = "none fits" if rule is None else f"{rule.ratio}, others {rule.others}, {rule.order}"
        if not held:
            out["all"] = {"rule": said, "fit_mean": round(mean, 4)}
            lines += ["", f"Fit on every domain's fit split: {said} (mean {mean:.4f}).", ""]
            if ship and rule is not None:
                path = default_rules_path()
                kept = (
                    json.loads(path.read_text(encoding="utf-8"))["rules"] if path.is_file() else {}
                )
                record = {
                    "rules": {  # the evidence critic's rule; other kinds' entries as they were
                        **kept,
                        "evidence": {
                            "ratio": rule.ratio,
                            "others": rule.others,
                            "order": rule.order,
                            "min_per_source": shipped.min_per_source if shipped else 0.0,
                        },
                    },
                    "fit": {
                        "by": "python -m benchmarks.folders --rules ... --ship",
                        "domains": sorted(payloads),
                        "found_floor": FOUND,
                        "chunks_cap": CHUNKS,
                        "from_expected_floor": FROM_EXPECTED,
                    },
                }
                write_json(default_rules_path(), record)
                say(f"wrote {default_rules_path()}")
            continue
        sides = {"fit": rule, "ratio 0.5": HandOverRule(0.5, "one ratio"), "none": None}
        got = {k: domain_scores(payloads[held], threshold, r, "test") for k, r in sides.items()}
        out[held] = {"rule": said, "fit_mean": round(mean, 4), **got}
        cells = []
        for name, entry in got.items():
            if "broad" in entry:
                b = entry["broad"]
                cells.append(
                    f"{name}: found {entry['found']:.1%} / first {entry['first']:.1%}, "
                    f"{entry['chunks']:.2f} chunks, {entry['from_expected']:.1%} from it; broad "
                    f"nDCG {b['ndcg']:.3f}, recall {b['recall']:.1%}, share {b['precision']:.1%}, "
                    f"{b['notes']:.2f} notes"
                )
            else:
                cells.append(
                    f"{name}: nDCG {entry['ndcg']:.3f}, recall {entry['recall']:.3f}, "
                    f"{entry['documents']:.2f} docs"
                )
        entry = got["none"]
        dense = entry["dense broad"] if "broad" in entry else entry["dense"]
        cells.append(
            f"dense top 10: nDCG {dense['ndcg']:.3f}, recall {dense['recall']:.3f}, "
            f"share {dense['precision']:.3f}"
        )
        lines.append(f"| {held} | {said} | " + "<br>".join(cells) + " |")
    return out, "\n".join(lines) + "\n"


def _cells(got: dict[str, Any]) -> str:
    return (
        f"{got['found']:.0%} / {got['first']:.0%}, {got['chunks']:.2f}, {got['from_expected']:.1%}"
    )


def own_lodo(
    paths: Sequence[Path],
    today: Sequence[Path],
    threshold: float,
    ship: bool,
    scripts: Sequence[str] | None = None,
) -> tuple[dict[str, Any], str]:
    """``--rules ... --own TODAY``: the evidence critic's rule for another model's notes asked in
    their own language (``fit_own``), fit leave-one-folder-out with each fit folder's found
    share and share from the expected note as floors, from ``today``'s recorded answers (the
    same folders, as the shipped code answers them); judged on each held-out folder's test
    split beside today's recorded hand-over, the shipped ``evidence@<model>`` rule replayed
    and every kept chunk. ``ship``: the rule fit on every folder goes to that entry of
    ``handover.json`` (its ``min_per_source`` kept; ``scripts`` when given, else its own)."""
    from ragbrain.critic.handover import default_rules_path, shipped_rules
    from ragbrain.evaluation import write_json

    payloads = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in paths}
    shipped = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in today}
    models = {p["model"] for p in payloads.values()}
    if len(models) != 1 or set(shipped) != set(payloads):
        raise SystemExit("--own: one model's folders, with today's answers for each of them")
    key = f"evidence@{models.pop()}"
    current = shipped_rules().get(key)
    floors = {
        p["dataset"]: recorded_scores(shipped[n], "fit", p["dataset"]) for n, p in payloads.items()
    }
    out: dict[str, Any] = {"floors": floors}
    lines = [
        f"## The {key} rule, leave-one-folder-out (questions in the notes' language)",
        "",
        "Today (fit split; found and share from the note are each fit folder's floors): "
        + ", ".join(f"{n} {_cells(v)}" for n, v in floors.items())
        + ".",
        "",
        "| held out (test split) | rule fit on the others (fit: chunks) | found / first, chunks, "
        "from the note: the fit rule | today (recorded) | shipped rule replayed | every kept "
        "chunk | broad recall: fit rule / every kept chunk |",
        "|---|---|---|---|---|---|---|",
    ]
    for held in [*payloads, ""]:
        rule, chunks = fit_own([p for n, p in payloads.items() if n != held], threshold, floors)
        said = "none keeps the floors"
        if rule is not None:
            said = (
                f"{rule.ratio}, others {rule.others}, {rule.order}, at most {rule.per_note} a "
                f"note, {rule.others_per_note} of another (0: any)"
            )
        if not held:
            out["all"] = {"rule": said, "fit_chunks": chunks}
            lines += ["", f"Fit on every folder's fit split: {said} ({chunks:.2f} chunks).", ""]
            if ship and rule is not None:
                path = default_rules_path()
                record = json.loads(path.read_text(encoding="utf-8"))
                entry = record["rules"].get(key, {})
                record["rules"][key] = {
                    "ratio": rule.ratio,
                    "others": rule.others,
                    "order": rule.order,
                    "per_note": rule.per_note,
                    "others_per_note": rule.others_per_note,
                    "min_per_source": entry.get("min_per_source", 0.0),
                    "scripts": list(scripts) if scripts else entry.get("scripts", []),
                    "fit": f"{', '.join(sorted(payloads))} fit splits, questions in the notes' "
                    "language: the fewest chunks finding an expected note as often, and as large "
                    "a share from it, as before (python -m benchmarks.folders --rules ... --own "
                    "... --ship; docs/decisions/e5-notes-handover-caps.md)",
                }
                write_json(path, record)
                say(f"wrote {path}")
            continue
        lang = payloads[held]["dataset"]
        got = {
            name: domain_scores(payloads[held], threshold, r, "test", lang)
            for name, r in (("fit", rule), ("shipped", current), ("none", None))
        }
        got["today"] = recorded_scores(shipped[held], "test", lang)
        out[held] = {"rule": said, "fit_chunks": chunks, **got}
        cells = [_cells(got[n]) for n in ("fit", "today", "shipped", "none")]
        recall = f"{got['fit']['broad']['recall']:.0%} / {got['none']['broad']['recall']:.0%}"
        lines.append(f"| {held} | {said} ({chunks:.2f}) | " + " | ".join(cells) + f" | {recall} |")
    return out, "\n".join(lines) + "\n"


def main() -> None:
    """Write, ingest and ask each set; save ``results/<name>.{json,md}``; ``--keep``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("sets", nargs="*")
    parser.add_argument("--out", type=Path, default=Path("/tmp/ragbrain-folders"))
    parser.add_argument(
        "--rules",
        nargs="+",
        type=Path,
        help="recorded answers (<domain>.json of --keep here and of benchmarks.notes --keep): "
        "fit a hand-over rule leave-one-domain-out instead of asking",
    )
    parser.add_argument("--ship", action="store_true", help="with --rules: write handover.json")
    parser.add_argument(
        "--own",
        nargs="+",
        type=Path,
        help="with --rules on another model's notes folders: today's recorded answers of the "
        "same folders (benchmarks.notes --keep on the shipped code); fit the rule for questions "
        "in the notes' language that hands over the fewest chunks, finding the expected note "
        "as often and as large a share from it as they do",
    )
    parser.add_argument(
        "--scripts", nargs="+", help="with --own --ship: the scripts the rule is for"
    )
    parser.add_argument(
        "--answers",
        type=Path,
        help="a folder of answers --keep wrote: summarize them instead of asking again",
    )
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
    if args.rules:
        if args.own:
            result, text = own_lodo(args.rules, args.own, critic.threshold, args.ship, args.scripts)
        else:
            result, text = rules_lodo(args.rules, critic.threshold, args.ship)
        print(text)
        save(args.name, {"threshold": critic.threshold, "lodo": result}, text)
        return
    embeddings = embeddings_for(critic.embedding_model)
    lines = ["# Folders of documents, ingested as notes folders", ""]
    summaries: dict[str, Any] = {}
    for name in args.sets:
        if args.answers is not None:
            payload = json.loads((args.answers / f"{name}.json").read_text(encoding="utf-8"))
        else:
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
            if not summary[split]["queries"]:
                continue
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
