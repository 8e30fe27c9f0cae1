"""Cross-language refusal: on a store of notes in one language (multilingual-e5-small), is a
question in another language refused more often than the same question in the notes' own?

Two sources, neither a copy of shared data:

- the shared Thai, Japanese and Chinese sets: a seeded sub-corpus of each (every passage that
  answers one of the questions below, and random others) written out as Markdown notes and
  ingested as a user would; each question is asked in the set's language (its test query) and
  in English (``benchmarks/data/crosslang_questions.json``, written for the project);
- the cross-lingual fixture (``tests/support/data/crosslingual.json``): its notes of one
  language alone in a store (a small store: the shipped cut), asked in the other language.

Reported per store: refused (default level) and found in the handed-over set, per language.

    python -m benchmarks.crosslang --data-root ../shared/data --docs 300
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.common import save, say

HERE = Path(__file__).parent
QUESTIONS = HERE / "data" / "crosslang_questions.json"
#: Other domains' queries asked of each store as off-topic questions (English, another
#: script than the notes'), the first ``OTHER_QUERIES`` of each.
OTHER_DOMAINS = ("scifact", "cosqa")
OTHER_QUERIES = 100
FIXTURE = HERE.parent / "tests" / "support" / "data" / "crosslingual.json"


def _notes_folder(root: Path, name: str, wanted: set[str], docs: int, seed: int) -> Path:
    """A notes folder of ``name``'s passages: the ``wanted`` ones and random others."""
    rows = [json.loads(line) for line in (root / name / "corpus.jsonl").open(encoding="utf-8")]
    rest = [r for r in rows if r["_id"] not in wanted]
    random.Random(seed).shuffle(rest)
    chosen = [r for r in rows if r["_id"] in wanted] + rest[: max(docs - len(wanted), 0)]
    folder = Path(tempfile.mkdtemp(prefix=f"crosslang-{name}-"))
    notes = folder / "notes"
    notes.mkdir()
    for row in chosen:
        title = str(row.get("title") or "").strip()
        text = f"# {title}\n\n{row['text']}\n" if title else f"{row['text']}\n"
        (notes / f"{row['_id']}.md").write_text(text, encoding="utf-8")
    return folder


def _ask(retriever: Any, question: str, expect: set[str], cut: Any) -> dict[str, Any]:
    """One question's run; ``store_wide``: whether the store-wide cut alone (no cut across
    scripts) would refuse it, from the same run's evidence."""
    from dataclasses import replace

    from ragbrain.refusal.offtopic import refusal_reason

    run = retriever.run(question)
    sources = [Path(str(d.metadata.get("source", ""))).stem for d in run["documents"]]
    nearest, support = run.get("nearest_distance"), run.get("lexical_support")
    wide = None if cut is None else replace(cut, across=None)
    return {
        "refused": not run["documents"],
        "found": bool(set(sources) & expect),
        "nearest": nearest,
        "reason": run.get("abstain_reason"),
        "store_wide_refuses": wide is not None
        and refusal_reason(question, nearest, wide, support=support) is not None,
    }


def shared_sets(root: Path, docs: int, seed: int, embeddings: Any) -> dict[str, Any]:
    """Each set's same-language and English questions on its store."""
    from ragbrain import CorrectiveRetriever
    from ragbrain.evaluation import cached_store_path, evaluation_bank, notes_store
    from ragbrain.models.embeddings import model_name_of
    from ragbrain.refusal.offtopic import crosses, script_of, store_cut

    written = json.loads(QUESTIONS.read_text(encoding="utf-8"))["sets"]
    out: dict[str, Any] = {}
    for name, items in written.items():
        queries = {
            (row := json.loads(line))["_id"]: row["text"]
            for line in (root / name / "queries.jsonl").open(encoding="utf-8")
        }
        relevant: dict[str, set[str]] = {}
        with (root / name / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
            for qid, doc, *_ in list(csv.reader(handle, delimiter="\t"))[1:]:
                relevant.setdefault(qid, set()).add(doc)
        wanted = set().union(*(relevant[i["id"]] for i in items))
        cache = Path(tempfile.gettempdir()) / "ragbrain-crosslang" / f"{name}-{docs}-{seed}"
        folder = cache if (cache / "notes").is_dir() else None
        if folder is None:
            made = _notes_folder(root, name, wanted, docs, seed)
            cache.parent.mkdir(parents=True, exist_ok=True)
            made.rename(cache)
            folder = cache
        say(f"{name}: ingesting {docs} notes")
        store = notes_store(folder, embeddings)
        path = cached_store_path(folder, model_name_of(embeddings))
        retriever = CorrectiveRetriever.from_store(path, embeddings=embeddings)
        cut = store_cut(store, save=False)
        rows = []
        for item in items:
            expect = relevant[item["id"]]
            rows.append(
                {
                    "id": item["id"],
                    "native": _ask(retriever, queries[item["id"]], expect, cut),
                    "en": _ask(retriever, item["en"], expect, cut),
                }
            )
        offtopic = []
        for question in evaluation_bank():
            asked = _ask(retriever, question["text"], set(), cut)
            asked["across"] = cut is not None and crosses(script_of(question["text"]), cut)
            offtopic.append(asked)
        others = []
        for other in OTHER_DOMAINS:
            lines = (root / other / "queries.jsonl").open(encoding="utf-8")
            for line in list(lines)[:OTHER_QUERIES]:
                text = json.loads(line)["text"]
                asked = _ask(retriever, text, set(), cut)
                asked["across"] = cut is not None and crosses(script_of(text), cut)
                others.append(asked)
        out[name] = {
            "others": others,
            "chunks": store.count(),
            "cut": cut and cut.to_json(),
            "rows": rows,
            "offtopic": offtopic,
        }
    return out


def fixture_stores(embeddings: Any) -> dict[str, Any]:
    """The fixture's notes of one language in a store, asked in the other language."""
    from ragbrain import CorrectiveRetriever, Store
    from ragbrain.ingest import ingest
    from ragbrain.refusal.offtopic import general_distance, store_cut

    pairs = json.loads(FIXTURE.read_text(encoding="utf-8"))["pairs"]
    out: dict[str, Any] = {}
    for language in sorted({p["note_language"] for p in pairs}):
        mine = [p for p in pairs if p["note_language"] == language]
        with tempfile.TemporaryDirectory() as tmp:
            notes, folder = Path(tmp) / "notes", Path(tmp) / "store"
            notes.mkdir()
            for pair in mine:
                (notes / f"{pair['id']}.md").write_text(pair["note"] + "\n", encoding="utf-8")
            ingest(notes, Store.open(folder, embeddings, create=True))
            store = Store.open(folder, embeddings)
            retriever = CorrectiveRetriever.from_store(folder, embeddings=embeddings)
            cut = store_cut(store, save=False)
            general = general_distance(store)
            rows = [
                {"id": p["id"], "asked_in": p["question_language"]}
                | _ask(retriever, p["question"], {p["id"]}, cut)
                | {"general": general(p["question"])}
                for p in mine
            ]
        out[f"fixture-{language}"] = {"rows": rows}
    return out


def slim(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` with each store's off-topic questions counted, not listed (the file kept in
    ``results/``)."""
    out: dict[str, Any] = json.loads(json.dumps(result))
    for entry in out["sets"].values():
        for key in ("offtopic", "others"):
            rows = entry.pop(key, [])
            same = [r for r in rows if not r["across"]]
            other = [r for r in rows if r["across"]]
            entry[key] = {
                "same_script": _counts(same),
                "another_script": _counts(other),
            }
    return out


def _counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {
        "questions": len(rows),
        "refused": sum(r["refused"] for r in rows),
        "store_wide_refuses": sum(r["store_wide_refuses"] for r in rows),
    }


def _rate(rows: list[dict[str, Any]], key: str) -> str:
    return f"{sum(r[key] for r in rows)}/{len(rows)}"


def markdown(result: dict[str, Any]) -> str:
    """The results table."""
    lines = [
        "# Cross-language refusal on single-language e5 stores",
        "",
        "| store | chunks | same language: refused / found | English: refused / found "
        "| English, store-wide cut only: refused |",
        "|---|---|---|---|---|",
    ]
    for name, entry in result["sets"].items():
        native = [r["native"] for r in entry["rows"]]
        english = [r["en"] for r in entry["rows"]]
        lines.append(
            f"| {name} | {entry['chunks']} | {_rate(native, 'refused')} / "
            f"{_rate(native, 'found')} | {_rate(english, 'refused')} / "
            f"{_rate(english, 'found')} | {_rate(english, 'store_wide_refuses')} |"
        )
    lines += [
        "",
        "Off-topic questions (the evaluation bank, never calibrated on): refused, in the notes' "
        "script / in another script (store-wide cut only)",
        "",
        "| store | same script | another script | another script, store-wide cut only "
        "| other domains' queries (English) | the same, store-wide cut only |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in result["sets"].items():
        same = [r for r in entry["offtopic"] if not r["across"]]
        other = [r for r in entry["offtopic"] if r["across"]]
        lines.append(
            f"| {name} | {_rate(same, 'refused')} | {_rate(other, 'refused')} "
            f"| {_rate(other, 'store_wide_refuses')} | {_rate(entry['others'], 'refused')} "
            f"| {_rate(entry['others'], 'store_wide_refuses')} |"
        )
    lines += [
        "",
        "| fixture store (notes' language) | asked in another: refused / found "
        "| store-wide cut only: refused |",
        "|---|---|---|",
    ]
    for name, entry in result["fixture"].items():
        rows = entry["rows"]
        lines.append(
            f"| {name} | {_rate(rows, 'refused')} / {_rate(rows, 'found')} "
            f"| {_rate(rows, 'store_wide_refuses')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    """Run and save ``results/crosslang.{json,md}`` (``--name`` to save under another)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-root", type=Path, default=Path("../shared/data"))
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="crosslang")
    parser.add_argument(
        "--ship",
        action="store_true",
        help="Write the median cut across scripts of the shared sets' stores into "
        "the model's profile (offtopic.across: the cut small e5 stores get).",
    )
    args = parser.parse_args()
    from ragbrain.models.embeddings import embeddings_for, model_name_of

    embeddings = embeddings_for("e5-small")
    result: dict[str, Any] = {
        "sets": shared_sets(args.data_root, args.docs, args.seed, embeddings),
        "fixture": fixture_stores(embeddings),
    }
    acrosses = sorted(
        json.loads(e["cut"])["across"]
        for e in result["sets"].values()
        if e["cut"] and json.loads(e["cut"]).get("across") is not None
    )
    result["across_median"] = statistics.median(acrosses) if acrosses else None
    # The margin: the fixture's questions (asked across scripts, each answered by its note)
    # are never closer to a general question than to the notes by more than it.
    result["margin"] = round(
        max(
            r["nearest"] - r["general"]
            for e in result["fixture"].values()
            for r in e["rows"]
            if r["nearest"] is not None
        ),
        4,
    )
    text = markdown(result)
    text += (
        f"\nCuts across scripts of the shared sets' stores: {acrosses}; margin fit on the "
        f"fixture: {result['margin']}.\n"
    )
    print(text)
    save(args.name, slim(result), text)
    if args.ship and acrosses:
        from ragbrain.models.profiles import AcrossScripts, profile, write_profile

        shipped_profile = profile(model_name_of(embeddings))
        assert shipped_profile is not None
        kept = shipped_profile.offtopic.across
        across = AcrossScripts(
            level=kept.level if kept is not None else 0.98,
            margin=result["margin"],
            cut=round(statistics.median(acrosses), 4),
            by="python -m benchmarks.crosslang --ship",
        )
        levels = replace(shipped_profile.offtopic, across=across)
        say(f"wrote {write_profile(replace(shipped_profile, offtopic=levels))}")


if __name__ == "__main__":
    main()
