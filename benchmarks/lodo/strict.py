"""The strict level's evidence cuts (``ragbrain.refusal.abstain``) with notes folders as domains
beside the English BEIR sets, leave-one-domain-out.

Domains: the English sets of ``benchmarks.lodo.evidence`` (all-MiniLM-L6-v2 stores, the
missing-answer scenario of their sampled queries) and notes folders (``notes/`` +
``questions.json``, e.g. ``../shared/data/notes_dev/*``; each ingested as a user would, cached
by ``ragbrain.evaluation.notes_store``), whose answerable questions are the answerable side and
whose ``missing`` questions (on the notes' topic, answered by no note) the answerless side.

Each domain is held apart in turn; the cuts are fit (``fit_thresholds``: the most answerless
refused while every fit domain refuses <= 5% of its answerable) on the other domains' fit
data only (BEIR: train/dev queries; notes: the ``fit`` split) and judged on the held-apart
domain's test data (BEIR: test queries; notes: the ``test`` split). Four rules:

- ``BEIR``: the cuts fit on the English sets alone (the critic's own, which other stores keep);
- ``pooled``: one set of cuts fit on the English sets and the notes folders together;
- ``store chooses``: a store whose notes span at least ``NOTES_LIKE`` chunks a note (the
  hand-over rule's test, ``OffTopicCut.per_source``; every notes folder here spans 1.5-11, a
  BEIR store holds one chunk a document) takes the cuts fit on the notes folders, any other
  store the English sets' cuts;
- ``one note kept``: "store chooses", and on a store of notes a set to hand over whose chunks
  all come from one note, confident by the critic or by BM25, is kept whatever the cuts say
  (``ragbrain.refusal.abstain.one_note``; ``fit_one_note`` fits it beside the cuts).

Each notes folder's questions about a name its notes use (``IDENTIFIERS``, never fit on) are
judged by each rule too.

A BEIR fold's critic is the evidence layer fit on the other English sets (as
``benchmarks.lodo.evidence``); the notes rows it fits on are scored by that layer. A notes
fold's critic is the shipped layer (fit on the English sets' train/dev, never on notes).
On a notes folder the strict level refuses what its lower off-topic cut refuses as well; the
notes rows report both together, the BEIR rows the evidence rule alone (as
``results/english-critic.md``).

``--ship`` writes the notes cuts and their one-note rule, fit on every folder's fit split, to
``src/ragbrain/refusal/abstain_notes.json`` (when the fit refuses anything).

    python -m benchmarks.lodo.strict ../shared/data/notes_dev/{tldr,simonw_til,gitlab_runbooks} \\
        --data-root ../shared/data --test-queries 100 --fit-queries 60 \\
        --subcorpus scifact=2000 cosqa=2000 [--ship]
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import save, say
from benchmarks.lodo.data import SetData
from benchmarks.lodo.evidence import (
    Evidence as ColumnCache,
)
from benchmarks.lodo.evidence import (
    fit_critic,
    layer_scorer,
    load_english,
    scenario_of,
)
from benchmarks.lodo.fit import evidence_rows, fit_dense_share
from ragbrain.refusal.abstain import (
    AbstainThresholds,
    Evidence,
    EvidenceRow,
    fit_thresholds,
    one_note,
    should_abstain,
)
from ragbrain.refusal.offtopic import NOTES_SPAN

#: Chunks a note from which a store reads as a notes folder: the runtime's own test.
NOTES_LIKE = NOTES_SPAN
#: Questions about a name the notes use, asked of each notes folder (never fit on).
IDENTIFIERS = 100
ONE_NOTE = "one note kept"
RULES = ("BEIR", "pooled", "store chooses", ONE_NOTE)
#: The one-note rule's sizes tried: the fewest chunks of one note a kept set holds.
ONE_NOTE_CHUNKS = (1, 2, 3)


def notes_evidence(folder: Path, embeddings: Any, identifiers: int = 0) -> dict[str, Any]:
    """Each answerable and missing question of ``folder`` (and ``identifiers`` questions
    about a name the notes use, ``identifier_questions``), asked of the shipped graph with
    the critic's cut at 0 and no hand-over rule (every judged hit with its distance, its
    support and the shipped critic's score), BM25's coverage, whether the strict level's
    off-topic cut refuses it (the node's own check), and what the shipped graph refuses and
    hands over at the default level (each chunk's note and critic score)."""
    from dataclasses import replace

    from ragbrain.critic.evidence import supports
    from ragbrain.evaluation import identifier_questions, notes_store
    from ragbrain.evaluation.notes import load_questions
    from ragbrain.graph import build_graph
    from ragbrain.nodes.critic import offtopic_refusal
    from ragbrain.refusal.offtopic import store_cut
    from ragbrain.retriever import CorrectiveRetriever
    from ragbrain.store.lexical import LexicalSearcher

    store = notes_store(folder, embeddings)
    lexical = LexicalSearcher(store)
    probe = CorrectiveRetriever(graph=build_graph(store, "default", lexical=lexical, handover=None))
    probe = probe.model_copy(
        update={
            "context": replace(probe.context, abstain="off", critic_threshold=0.0, overview=False)
        }
    )
    # The shipped graph at the default level: the set the strict level would hand over.
    shipped = CorrectiveRetriever(graph=build_graph(store, "default", lexical=lexical))
    shipped = shipped.model_copy(update={"context": replace(shipped.context, abstain="on")})
    cut = store_cut(store, save=False)
    rows = []
    questions = [q for q in load_questions(folder) if q.group in (*QUESTIONS, "offtopic")]
    if identifiers:
        questions += identifier_questions(folder, identifiers)
    for question in questions:
        run = probe.run(question.text)
        handed = shipped.run(question.text)
        docs = run["documents"]
        distances = [float(d.metadata["retrieval"]["distance"]) for d in docs]
        texts = [d.page_content for d in docs]
        state: Any = {
            "query": question.text,
            "hits": [{"distance": d} for d in distances],
            "nearest_distance": run.get("nearest_distance"),
            "lexical_support": run.get("lexical_support"),
        }
        answered, _, _ = offtopic_refusal(state, "strict", cut, None)
        rows.append(
            {
                "group": question.group,
                "answerable": question.group in ("answerable", "identifier"),
                "split": question.split,
                "distances": distances,
                "supports": supports(lexical.index, question.text, texts) if texts else [],
                "scores": [d.metadata["retrieval"].get("critic_score") for d in docs],
                "coverage": run.get("bm25_coverage") or 0.0,
                "support": run.get("lexical_support"),
                "offtopic": not answered,
                # The default level's refusal, and what it hands over (source, critic score).
                "offtopic_on": not handed["answerable"],
                "handed": [
                    [str(d.metadata.get("source", "")), d.metadata["retrieval"].get("critic_score")]
                    for d in handed["documents"]
                ],
            }
        )
    return {"per_source": 0.0 if cut is None else cut.per_source, "rows": rows}


#: The notes groups the cuts are fit and judged on; off-topic questions (general and traps)
#: are fit on by the one-note rule and judged beside them, identifier questions only judged.
QUESTIONS = ("answerable", "missing")


def taken(row: dict[str, Any], split: str, groups: Sequence[str]) -> bool:
    """Whether a notes row is of ``split`` and of one of ``groups``."""
    return row["split"] == split and row.get("group", "answerable") in groups


def notes_rows(
    domain: dict[str, Any],
    split: str,
    layer: dict[str, Any] | None = None,
    groups: Sequence[str] = QUESTIONS,
) -> list[tuple[EvidenceRow, bool]]:
    """``split``'s rows of a notes folder (``notes_evidence``) as the evidence rule sees them,
    each with whether the off-topic cut refuses it anyway; ``layer``: score the hits with that
    evidence layer instead of the shipped critic's recorded scores; ``groups``: the question
    groups taken (``identifier``, ``offtopic``; an off-topic row is an answerless one)."""
    from ragbrain.critic.evidence import evidence_columns, probabilities
    from ragbrain.refusal.abstain import best_score

    out = []
    for row in domain["rows"]:
        if not taken(row, split, groups):
            continue
        scores = [float("nan") if s is None else float(s) for s in row["scores"]]
        if layer is not None and row["distances"]:
            scores = probabilities(evidence_columns(row["distances"], row["supports"]), layer)
        best = best_score(scores)
        distance = min(row["distances"], default=2.0)
        evidence = (row["answerable"], -1.0 if best is None else best, distance, row["coverage"])
        out.append((evidence, bool(row["offtopic"])))
    return out


#: What the default level refuses of a notes question, the set it hands over (each chunk's
#: note and critic score) and the run's lexical support: what the one-note rule reads.
Handed = tuple[bool, list[str], list[float], float | None]
#: The one-note rule's lexical supports tried (None: the critic's score alone).
ONE_NOTE_SUPPORTS = (None, 0.65, 0.7, 0.8, 0.9, 1.0)


def handed_rows(
    domain: dict[str, Any], split: str, groups: Sequence[str] = QUESTIONS
) -> list[Handed]:
    """``split``'s rows of a notes folder as ``notes_rows`` orders them: the default level's
    refusal and the set handed over."""
    return [
        (
            bool(row["offtopic_on"]),
            [source for source, _ in row["handed"]],
            [float("nan") if s is None else float(s) for _, s in row["handed"]],
            row.get("support"),
        )
        for row in domain["rows"]
        if taken(row, split, groups)
    ]


def offtopic_rows(
    domain: dict[str, Any], split: str
) -> tuple[list[tuple[EvidenceRow, bool]], list[Handed]]:
    """``split``'s off-topic questions (general and traps) of a notes folder: their rows and
    the sets handed over."""
    groups = ("offtopic",)
    return notes_rows(domain, split, groups=groups), handed_rows(domain, split, groups=groups)


def kept_by(row: Handed, cuts: AbstainThresholds) -> bool:
    """Whether the one-note rule of ``cuts`` keeps the set ``row`` hands over."""
    _, sources, scores, support = row
    return one_note(sources, scores, cuts, support) is not None


def cuts_of(fitted: Mapping[str, Any], source: str) -> AbstainThresholds:
    return AbstainThresholds(
        fitted["critic_below"],
        fitted["distance_above"],
        source,
        coverage_below=fitted.get("coverage_below"),
        one_note_above=fitted.get("one_note_above"),
        one_note_chunks=fitted.get("one_note_chunks", 2),
        one_note_support=fitted.get("one_note_support"),
    )


def judge(
    rows: Sequence[tuple[EvidenceRow, bool]],
    cuts: AbstainThresholds,
    handed: Sequence[Handed] | None = None,
) -> dict[str, Any]:
    """The share of the answerless and of the answerable rows refused (the evidence rule, or
    the off-topic cut); with ``handed``, a set the one-note rule keeps is refused only when
    the default level refuses it."""
    refused = {True: [], False: []}  # type: dict[bool, list[bool]]
    for n, ((answerable, best, distance, cover), offtopic) in enumerate(rows):
        if handed is not None and kept_by(handed[n], cuts):
            refused[answerable].append(handed[n][0])
            continue
        evidence = Evidence(distance, [best], 1, bm25_coverage=cover)
        refused[answerable].append(offtopic or should_abstain(evidence, cuts)[0])
    return {
        "answerless_refused": sum(refused[False]) / max(len(refused[False]), 1),
        "answerable_refused": sum(refused[True]) / max(len(refused[True]), 1),
        "answerless": len(refused[False]),
        "answerable": len(refused[True]),
    }


def fit(per_domain: Mapping[str, Sequence[tuple[EvidenceRow, bool]]]) -> dict[str, Any]:
    return fit_thresholds({name: [row for row, _ in rows] for name, rows in per_domain.items()})


def fit_one_note(
    per_domain: Mapping[str, Sequence[tuple[EvidenceRow, bool]]],
    handed: Mapping[str, Sequence[Handed]],
    offtopic: Mapping[str, tuple[Sequence[tuple[EvidenceRow, bool]], Sequence[Handed]]],
) -> dict[str, Any]:
    """The strict cuts (``fit``, as "store chooses") with the one-note rule fit beside them on
    notes folders' fit rows. Rules tried: at least ``ONE_NOTE_CHUNKS`` chunks of one note,
    confident by the critic (its best score reaches a quantile of the fit one-note sets' best
    scores) or by BM25 (``ONE_NOTE_SUPPORTS``), or both. Chosen: the rule under which the
    cuts refuse the most missing questions (the mean over the folders, off-topic refusals
    counted), then the most off-topic questions (``offtopic``: each folder's general and trap
    questions, rows and sets), then the fewest answerable ones (the mean), then the one that
    keeps the most answerable sets, the lowest floors (keep what the fit data does not say
    to refuse)."""
    import numpy as np

    from ragbrain.refusal.abstain import best_score

    cuts = fit(per_domain)
    tops = [
        best
        for name in per_domain
        for _, sources, scores, _ in handed[name]
        if sources and len(set(sources)) == 1 and (best := best_score(scores)) is not None
    ]
    floors = sorted({round(float(q), 4) for q in np.quantile(tops, np.linspace(0, 1, 21))})
    rules: list[tuple[float | None, int, float | None]] = [(None, 2, None)]
    rules += [
        (floor, chunks, held)
        for chunks in ONE_NOTE_CHUNKS
        for floor in [None, *floors]
        for held in ONE_NOTE_SUPPORTS
        if floor is not None or held is not None
    ]
    best_key, chosen = None, dict(cuts)
    for floor, chunks, held in rules:
        fitted = {
            **cuts,
            "one_note_above": floor,
            "one_note_chunks": chunks,
            "one_note_support": held,
        }
        rule = cuts_of(fitted, ONE_NOTE)
        judged = [judge(per_domain[n], rule, handed[n]) for n in per_domain]
        missing = sum(j["answerless_refused"] for j in judged) / len(judged)
        off = [
            judge(offtopic[n][0], rule, offtopic[n][1])["answerless_refused"] for n in per_domain
        ]
        refused = sum(j["answerable_refused"] for j in judged) / len(judged)
        kept = sum(
            kept_by(row, rule)
            for n in per_domain
            for ((answerable, *_), _), row in zip(per_domain[n], handed[n], strict=True)
            if answerable
        )
        key = (
            round(missing, 9),
            round(sum(off) / len(off), 9),
            -round(refused, 9),
            kept,
            -(2.0 if floor is None else floor),
            -(2.0 if held is None else held),
            -chunks,
        )
        if best_key is None or key > best_key:
            best_key = key
            chosen = {**fitted, "fit_missing": missing, "fit_answerable_refused": refused}
    return chosen


def beir_fold(
    held: str,
    names: Sequence[str],
    test: Mapping[str, SetData],
    fit_sets: Mapping[str, SetData],
    notes: Mapping[str, dict[str, Any]],
    columns: ColumnCache,
) -> dict[str, Any]:
    """An English set held apart: the fold's layer, each rule's cuts and what they refuse."""
    others = [fit_sets[n] for n in names if n != held]
    weight, _ = fit_dense_share(others)
    fitted = fit_critic(others, weight, columns)
    scorer = layer_scorer(fitted["layer"], columns.columns)

    def rows(data: SetData) -> list[tuple[EvidenceRow, bool]]:
        return [(row, False) for row in evidence_rows(data, scenario_of(data), weight, scorer)]

    beir = {d.name: rows(d) for d in others}
    notes_fit = {n: notes_rows(d, "fit", fitted["layer"]) for n, d in notes.items()}
    chosen = {"BEIR": fit(beir), "pooled": fit({**beir, **notes_fit})}
    chosen["store chooses"] = chosen["BEIR"]  # a BEIR store holds one chunk a document
    chosen[ONE_NOTE] = chosen["BEIR"]  # the notes cuts, and their one-note rule, stay off
    held_rows = rows(test[held])
    return {
        rule: {"cuts": cuts, **judge(held_rows, cuts_of(cuts, rule))}
        for rule, cuts in chosen.items()
    }


def notes_fold(
    held: str,
    beir: Mapping[str, Sequence[tuple[EvidenceRow, bool]]],
    notes: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    """A notes folder held apart (the shipped layer): each rule's cuts, what they refuse."""
    notes_fit = {n: notes_rows(d, "fit") for n, d in notes.items() if n != held}
    chosen = {"BEIR": fit(beir), "pooled": fit({**beir, **notes_fit})}
    notes_like = notes[held]["per_source"] >= NOTES_LIKE
    chosen["store chooses"] = fit(notes_fit) if notes_like else chosen["BEIR"]
    handed_fit = {n: handed_rows(d, "fit") for n, d in notes.items() if n != held}
    off_fit = {n: offtopic_rows(d, "fit") for n, d in notes.items() if n != held}
    chosen[ONE_NOTE] = (
        fit_one_note(notes_fit, handed_fit, off_fit) if notes_like else chosen["BEIR"]
    )
    held_rows = notes_rows(notes[held], "test")
    held_handed = handed_rows(notes[held], "test")
    fit_rows = [row for rows in notes_fit.values() for row in rows]
    fit_handed = [row for rows in handed_fit.values() for row in rows]
    names_rows = notes_rows(notes[held], "test", groups=("identifier",))
    names_handed = handed_rows(notes[held], "test", groups=("identifier",))
    off_rows, off_handed = offtopic_rows(notes[held], "test")
    out = {
        rule: {
            "cuts": cuts,
            **judge(held_rows, cuts_of(cuts, rule), held_handed),
            "fit": judge(fit_rows, cuts_of(cuts, rule), fit_handed),
            "identifier": judge(names_rows, cuts_of(cuts, rule), names_handed),
            "offtopic": judge(off_rows, cuts_of(cuts, rule), off_handed),
        }
        for rule, cuts in chosen.items()
    }
    off = [offtopic for _, offtopic in held_rows]
    out["off-topic cut alone"] = judge(held_rows, AbstainThresholds(0.0, 2.0, "none"))
    out["per_source"] = notes[held]["per_source"]
    say(f"{held}: {sum(off)} of {len(off)} test rows refused by the off-topic cut")
    return out


def main() -> None:
    from benchmarks.lodo import set_arguments
    from ragbrain.critic.evidence import default_evidence_path, read_layer
    from ragbrain.hybrid import DENSE_SHARE
    from ragbrain.models.embeddings import embeddings_for

    parser = set_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]))
    parser.add_argument("folders", nargs="+", type=Path, help="Notes folders (domains).")
    parser.add_argument("--ship", action="store_true", help=f"Write {NOTES_CUTS_PATH}.")
    parser.add_argument("--name", default="strict-notes")
    args = parser.parse_args()
    model, _, names, test, fit_sets, indexes = load_english(args)
    embeddings = embeddings_for(model)
    notes = {}
    for folder in args.folders:
        say(f"{folder.name}: asking (store cached)")
        notes[folder.name] = notes_evidence(folder, embeddings, IDENTIFIERS)
    columns = ColumnCache(indexes)
    shipped = read_layer(default_evidence_path())
    shipped_scorer = layer_scorer(shipped, columns.columns)
    beir_shipped = {
        n: [
            (row, False)
            for row in evidence_rows(
                fit_sets[n], scenario_of(fit_sets[n]), DENSE_SHARE, shipped_scorer
            )
        ]
        for n in names
    }
    folds: dict[str, Any] = {}
    for held in names:
        folds[held] = beir_fold(held, names, test, fit_sets, notes, columns)
        say(f"{held}: done")
    for held in notes:
        folds[held] = notes_fold(held, beir_shipped, notes)
    all_notes = {n: notes_rows(d, "fit") for n, d in notes.items()}
    shipping = fit_one_note(
        all_notes,
        {n: handed_rows(d, "fit") for n, d in notes.items()},
        {n: offtopic_rows(d, "fit") for n, d in notes.items()},
    )
    payload = {
        "embedding_model": model,
        "notes_like": NOTES_LIKE,
        "beir": list(names),
        "notes": {
            n: {"per_source": d["per_source"], "rows": len(d["rows"])} for n, d in notes.items()
        },
        "folds": folds,
        "notes_cuts": shipping,
        "beir_cuts_shipped_layer": fit(beir_shipped),
    }
    save(args.name, payload, markdown(payload))
    if args.ship:
        ship(shipping, list(notes))


NOTES_CUTS_PATH = Path("src/ragbrain/refusal/abstain_notes.json")


def ship(fitted: Mapping[str, Any], folders: Sequence[str]) -> None:
    """Write the notes cuts of the evidence critic (nothing when the fit refuses nothing:
    every store keeps the critic's own cuts); the file's other entries (the cuts fit for
    another model's notes) stay as they are."""
    import json

    from ragbrain.critic.evidence import EvidenceCritic
    from ragbrain.evaluation import write_json

    if fitted["refusal_recall"] <= 0:
        say("the notes fit refuses nothing: not shipped")
        return
    others = {}
    if NOTES_CUTS_PATH.is_file():
        cuts = json.loads(NOTES_CUTS_PATH.read_text(encoding="utf-8")).get("cuts", {})
        others = {kind: entry for kind, entry in cuts.items() if kind != "evidence"}
    record = {
        "cuts": {
            "evidence": {
                "critic_below": fitted["critic_below"],
                "distance_above": fitted["distance_above"],
                "coverage_below": fitted["coverage_below"],
                "one_note_above": fitted.get("one_note_above"),
                "one_note_chunks": fitted.get("one_note_chunks", 2),
                "one_note_support": fitted.get("one_note_support"),
                "min_per_source": NOTES_LIKE,
                "layer": EvidenceCritic().fingerprint,
            },
            **others,
        },
        "fit": {
            "by": "python -m benchmarks.lodo.strict --ship",
            "folders": {n: "fit split: answerable and missing" for n in folders},
            "refusal_recall": fitted["refusal_recall"],
            "false_refusal_worst": fitted["false_refusal_worst"],
        },
    }
    write_json(NOTES_CUTS_PATH, record)
    say(f"wrote {NOTES_CUTS_PATH}")


def one_note_text(c: Mapping[str, Any]) -> str:
    """The one-note rule of a fit, in words."""
    said = []
    if c.get("one_note_above") is not None:
        said.append(f"the critic's best >= {c['one_note_above']:.3f}")
    if c.get("one_note_support") is not None:
        said.append(f"a chunk holding >= {c['one_note_support']:.2f} of its rare words")
    return " or ".join(said)


def _pct(v: float) -> str:
    return f"{v:.1%}"


def markdown(payload: dict[str, Any]) -> str:
    lines = [
        "# The strict level's evidence cuts, notes folders beside the English sets (LODO)",
        "",
        "Each domain held apart; the cuts fit on the other domains' fit data. Cells: "
        "answerless (BEIR: the missing-answer scenario; notes: `missing`) refused / "
        "answerable refused, on the held-apart domain's test data. Notes rows count the "
        "strict off-topic cut's refusals too.",
        "",
        "| held-apart domain | " + " | ".join(RULES) + " | off-topic cut alone |",
        "|---" * (len(RULES) + 2) + "|",
    ]
    for name, fold in payload["folds"].items():
        cells = [
            f"{_pct(fold[r]['answerless_refused'])} / {_pct(fold[r]['answerable_refused'])}"
            for r in RULES
        ]
        alone = fold.get("off-topic cut alone")
        last = (
            "-"
            if alone is None
            else f"{_pct(alone['answerless_refused'])} / {_pct(alone['answerable_refused'])}"
        )
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {last} |")
    lines += [
        "",
        "What chooses between the rules is the fit data: on the other notes folders' fit "
        "split (missing refused / answerable refused, the folds' own fit rows):",
        "",
    ]
    for name, fold in payload["folds"].items():
        if "fit" in fold["BEIR"]:
            cells = [
                f"{r} {_pct(fold[r]['fit']['answerless_refused'])} / "
                f"{_pct(fold[r]['fit']['answerable_refused'])}"
                for r in RULES
            ]
            lines.append(f"- {name} held apart: " + "; ".join(cells))
    lines += [
        "",
        f"Questions about a name the notes use ({IDENTIFIERS} a folder, "
        "`identifier_questions`, never fit on), refused at the strict level, held apart:",
        "",
    ]
    for name, fold in payload["folds"].items():
        if "identifier" in fold["BEIR"]:
            cells = [f"{r} {_pct(fold[r]['identifier']['answerable_refused'])}" for r in RULES]
            lines.append(f"- {name}: " + "; ".join(cells))
    lines += [
        "",
        "Off-topic questions (general and traps, test split) refused at the strict level:",
        "",
    ]
    for name, fold in payload["folds"].items():
        if "offtopic" in fold["BEIR"]:
            cells = [f"{r} {_pct(fold[r]['offtopic']['answerless_refused'])}" for r in RULES]
            lines.append(f"- {name}: " + "; ".join(cells))
    lines += ["", "## Cuts per fold (critic below / distance above / coverage below)", ""]
    for name, fold in payload["folds"].items():
        cells = []
        for r in RULES:
            c = fold[r]["cuts"]
            cover = "-" if c["coverage_below"] is None else f"{c['coverage_below']:.3f}"
            cell = f"{r}: {c['critic_below']:.3f} / {c['distance_above']:.3f} / {cover}"
            if c.get("one_note_above") is not None or c.get("one_note_support") is not None:
                cell += f" (one note of >= {c['one_note_chunks']} chunks: {one_note_text(c)})"
            cells.append(cell)
        lines.append(f"- {name}: " + "; ".join(cells))
    c = payload["notes_cuts"]
    lines += [
        "",
        f"Fit on every notes folder's fit split: critic below {c['critic_below']:.3f}, "
        f"distance above {c['distance_above']:.3f}, coverage below {c['coverage_below']}, "
        f"refusing {c['refusal_recall']:.0%} of the missing at worst "
        f"{c['false_refusal_worst']:.0%} of a folder's answerable. Chunks a note: "
        + ", ".join(f"{n} {d['per_source']}" for n, d in payload["notes"].items())
        + f" (notes-like from {payload['notes_like']}). One note kept: "
        + (
            f"a set of >= {c['one_note_chunks']} chunks of one note, {one_note_text(c)}."
            if c.get("one_note_above") is not None or c.get("one_note_support") is not None
            else "no rule."
        ),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
