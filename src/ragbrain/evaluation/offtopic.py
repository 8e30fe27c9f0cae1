"""The off-topic scenario: questions a store's notes are not about, to measure refusal.

For a held-apart data set, the off-topic questions are the other data sets' test queries,
never those of a related set (``RELATED``: SciFact and NFCorpus are both biomedical, CMRC 2018
and DRCD both Chinese Wikipedia), plus the evaluation bank (``offtopic_questions.jsonl``:
general questions in English, Japanese, Thai, Chinese and Arabic written for the project,
kept apart from the calibration bank the product ships and never fit on). The answerable
questions are the set's own test queries.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

EVALUATION_BANK = Path(__file__).with_name("offtopic_questions.jsonl")
#: Sets whose questions are not off-topic for each other.
RELATED: dict[str, frozenset[str]] = {
    "scifact": frozenset({"nfcorpus"}),
    "nfcorpus": frozenset({"scifact"}),
    "cmrc2018_ret": frozenset({"drcd_ret"}),
    "drcd_ret": frozenset({"cmrc2018_ret"}),
}


@cache
def evaluation_bank() -> tuple[dict[str, str], ...]:
    """The evaluation bank's questions: ``id``, ``lang``, ``topic``, ``text``."""
    lines = EVALUATION_BANK.read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line) for line in lines if line.strip())


def offtopic_sources(held: str, available: Sequence[str]) -> list[str]:
    """The data sets whose questions are off-topic for ``held``'s store."""
    related = RELATED.get(held, frozenset())
    return [name for name in available if name != held and name not in related]


@dataclass(frozen=True)
class Question:
    """One question of the scenario and where it comes from (a set's name, or ``bank``)."""

    id: str
    text: str
    origin: str


def offtopic_questions(
    held: str,
    queries: Mapping[str, Mapping[str, str]],
    *,
    per_set: int | None = None,
    seed: int = 0,
) -> list[Question]:
    """The off-topic questions for ``held``: each other set's queries (``queries``: a set's
    name to its test queries by id; ``per_set`` sampled, seeded) and the evaluation bank."""
    questions: list[Question] = []
    for name in offtopic_sources(held, sorted(queries)):
        ids = sorted(queries[name])
        if per_set is not None and per_set < len(ids):
            ids = sorted(random.Random(seed).sample(ids, per_set))
        questions += [Question(f"{name}:{i}", queries[name][i], name) for i in ids]
    questions += [Question(f"bank:{q['id']}", q["text"], "bank") for q in evaluation_bank()]
    return questions


@dataclass(frozen=True)
class OffTopicStats:
    """Refusal in the scenario: the share of off-topic questions refused (by origin too) and
    the share of answerable ones refused."""

    refused: float
    refused_by_origin: dict[str, float]
    false_refusal: float
    offtopic: int
    answerable: int


def offtopic_stats(
    offtopic: Mapping[Question, bool], answerable: Mapping[str, bool]
) -> OffTopicStats:
    """The scenario's figures from each question's refusal (True: refused)."""
    by_origin: dict[str, list[bool]] = {}
    for question, refused in offtopic.items():
        by_origin.setdefault(question.origin, []).append(refused)

    def share(flags: Sequence[bool]) -> float:
        return sum(flags) / len(flags) if flags else 0.0

    return OffTopicStats(
        refused=share(list(offtopic.values())),
        refused_by_origin={o: share(f) for o, f in sorted(by_origin.items())},
        false_refusal=share(list(answerable.values())),
        offtopic=len(offtopic),
        answerable=len(answerable),
    )


def judged_queries(folder: Path, split: str = "test") -> dict[str, str]:
    """A BEIR folder's ``split`` queries that have a judgement (without loading its corpus)."""
    import csv

    qrels = folder / "qrels" / f"{split}.tsv"
    with qrels.open(encoding="utf-8", newline="") as handle:
        judged = {row[0] for row in list(csv.reader(handle, delimiter="\t"))[1:] if row}
    queries: dict[str, str] = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                if str(row["_id"]) in judged:
                    queries[str(row["_id"])] = row["text"]
    return queries
