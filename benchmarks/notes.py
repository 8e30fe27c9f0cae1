"""Notes folders as domains: each folder's questions asked of the shipped retriever, and the
hand-over rule (``ragbrain.critic.handover``) fit leave-one-domain-out across the folders.

For each notes folder (``notes/`` + ``questions.json``, e.g. ``../shared/data/notes_dev/*``):
the store is built once (cached, ``ragbrain.evaluation.notes``), every question asked at the
default and the strict level, and once with the critic threshold at 0 and no hand-over rule
(every judged candidate with its score). The hand-over ratio held-apart folder by folder is
fit on the other folders' fit-split answerable questions only: the largest ratio (fewest
chunks) at which every fit folder still finds an expected note for >= ``FOUND`` of its
questions. The held-apart folder's test split is judged with that ratio, by the node's own
code (``nodes.critic.handed_over`` then ``critic.handover.narrow``) on the recorded
candidates. ``--ship`` writes the ratio fit on every folder's fit split to
``src/ragbrain/critic/handover.json``.

    python -m benchmarks.notes ../shared/data/notes_dev/{tldr,simonw_til,gitlab_runbooks} \\
        [--ship] [--name notes]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import save, say

#: Every fit folder keeps an expected note in the handed-over set for this share of its
#: fit-split answerable questions (the target is 97% on the test splits).
FOUND = 0.975
RATIOS = tuple(round(0.05 * n, 2) for n in range(21))


def simulate(answer: dict[str, Any], threshold: float, ratio: float | None) -> list[str]:
    """The sources the graph hands over for ``answer``'s recorded candidates with the
    critic's ``threshold`` and the hand-over ``ratio`` (None: no rule)."""
    from ragbrain.critic.base import keep_mask
    from ragbrain.critic.handover import HandOverRule, narrow
    from ragbrain.nodes.critic import handed_over

    candidates = answer["candidates"]
    if not candidates:
        return []
    sources = [c[0] for c in candidates]
    scores = [float("nan") if c[2] is None else float(c[2]) for c in candidates]
    chosen = handed_over(scores, threshold, int(answer["depth"]), None)
    if ratio is not None and any(keep_mask(scores, threshold)):
        chosen, _ = narrow(chosen, scores, sources, HandOverRule(ratio, "fit"))
    return [sources[i] for i in chosen]


def answerable_stats(
    answers: Sequence[dict[str, Any]], threshold: float, ratio: float | None
) -> dict[str, float]:
    """Found, first, chunks and share from an expected note over answerable ``answers``."""
    found = first = chunks = share = 0.0
    for answer in answers:
        handed = simulate(answer, threshold, ratio)
        expect = set(answer["expect"])
        found += bool(set(handed) & expect)
        first += bool(handed) and handed[0] in expect
        chunks += len(handed)
        share += sum(s in expect for s in handed) / len(handed) if handed else 0.0
    n = max(len(answers), 1)
    return {
        "found": round(found / n, 4),
        "first": round(first / n, 4),
        "chunks": round(chunks / n, 3),
        "from_expected": round(share / n, 4),
    }


def rows(payload: dict[str, Any], split: str) -> list[dict[str, Any]]:
    """The answerable questions of ``split`` that were answered at the default level."""
    return [
        a
        for a in payload["answers"]
        if a["group"] == "answerable" and a["split"] == split and not a["refused"]
    ]


def fit_ratio(fit: Sequence[dict[str, Any]], threshold: float) -> float:
    """The largest ratio at which every fit folder finds >= ``FOUND`` (0.0 when none does)."""
    best = 0.0
    for ratio in RATIOS:
        if all(answerable_stats(rows(p, "fit"), threshold, ratio)["found"] >= FOUND for p in fit):
            best = ratio
    return best


def main() -> None:
    """Evaluate the folders, fit LODO, save ``results/<name>.{json,md}``; ``--ship``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--ship", action="store_true")
    parser.add_argument("--name", default="notes")
    args = parser.parse_args()
    from ragbrain.critic.evidence import EvidenceCritic
    from ragbrain.evaluation.notes import evaluate_notes, notes_table
    from ragbrain.models.embeddings import embeddings_for

    embeddings = embeddings_for(None)
    threshold = EvidenceCritic().threshold
    payloads: dict[str, dict[str, Any]] = {}
    for folder in args.folders:
        say(f"{folder.name}: ingesting (cached) and asking")
        payloads[folder.name] = evaluate_notes(folder, embeddings)
    names = list(payloads)
    lodo: dict[str, Any] = {}
    for held in names:
        fit = [payloads[n] for n in names if n != held]
        ratio = fit_ratio(fit, threshold) if fit else None
        test = rows(payloads[held], "test")
        lodo[held] = {
            "ratio": ratio,
            "without_rule": answerable_stats(test, threshold, None),
            "with_rule": answerable_stats(test, threshold, ratio),
        }
    shipped = fit_ratio(list(payloads.values()), threshold)
    lines = ["# Notes folders: the shipped retriever, and the hand-over rule fit LODO", ""]
    for name, payload in payloads.items():
        lines += [
            f"## {name} ({payload['chunks']} chunks), test split",
            "",
            notes_table(payload["summary"], "test"),
        ]
    lines += [
        "## Hand-over ratio, leave-one-folder-out (answerable questions, test split)",
        "",
        "| held-apart folder | ratio (fit on the others) | found / first | chunks | from an "
        "expected note | without the rule: found / first, chunks, from expected |",
        "|---|---|---|---|---|---|",
    ]
    for name, entry in lodo.items():
        w, o = entry["with_rule"], entry["without_rule"]
        lines.append(
            f"| {name} | {entry['ratio']} | {w['found']:.1%} / {w['first']:.1%} | "
            f"{w['chunks']:.2f} | {w['from_expected']:.1%} | {o['found']:.1%} / "
            f"{o['first']:.1%}, {o['chunks']:.2f}, {o['from_expected']:.1%} |"
        )
    lines += ["", f"Fit on every folder's fit split: ratio {shipped}.", ""]
    text = "\n".join(lines)
    print(text)
    save(
        args.name,
        {
            "threshold": threshold,
            "found_floor": FOUND,
            "lodo": lodo,
            "shipped_ratio": shipped,
            "summaries": {n: p["summary"] for n, p in payloads.items()},
        },
        text,
    )
    if args.ship:
        from ragbrain.critic.handover import default_rules_path
        from ragbrain.evaluation.report import write_json

        record = {
            "rules": {"evidence": {"ratio": shipped}},
            "fit": {
                "by": "python -m benchmarks.notes --ship",
                "folders": {n: "fit split, answerable" for n in names},
                "found_floor": FOUND,
            },
        }
        write_json(default_rules_path(), record)
        say(f"wrote {default_rules_path()}")


if __name__ == "__main__":
    main()
