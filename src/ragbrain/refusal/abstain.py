"""Saying "the notes do not have this": abstention from the critic's and the gate's evidence.

The run abstains only when the evidence agrees that nothing fits: the critic scores every
judged chunk below ``critic_below``, the best cosine distance is above ``distance_above``, and
(when the thresholds use it) BM25's best hit matches less than ``coverage_below`` of what the
query can score (its score over the sum of the query terms' IDF: a question asked of a note
that holds its answer usually repeats some of its rarer words). A poor gate verdict alone
never empties an answer, nor does a critic that is off. The thresholds are fit
on the missing-answer scenario (``python -m benchmarks.lodo``): the most answerless queries
refused while at most 5% of the answerable ones are, on every fit set. The critic ships the
cuts fit on every shared set with each distance layer (``TransformerCritic.abstain_thresholds``;
``RetrievalContext.abstain`` turns them on).

``hand_over`` is the other half of the decision: which judged chunks are handed over. The
critic judges a fixed number of candidates (10), and the query's adaptive depth caps how many
of the kept ones go out; when the run does not abstain but the critic kept nothing, the best
chunk still goes out (the answer may be there; only abstention may empty the list).

``fit_thresholds`` fits the cuts on missing-answer rows: ``benchmarks.lodo`` on the shared
sets, ``ragbrain critic calibrate`` on a user's own labelled queries.

Notes folders want other cuts than the BEIR sets the critic's own are fit on (short notes, one
topic each, questions sharing the notes' words: BM25's coverage tells less there). A store
whose notes span at least ``min_per_source`` chunks a note takes the cuts fit on notes folders
(``notes_cuts``; ``abstain_notes.json``, written by ``python -m benchmarks.lodo.strict
--ship``), when they were fit with the scores of the critic's own layer; without that file, or
with one that cannot be read, every store keeps the critic's cuts. The notes cuts carry a
one-note rule (``one_note``): a set to hand over whose chunks all come from one note, which
the critic is confident of, or whose question's rare words a chunk holds, is not refused by
the strict level's cuts.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ragbrain.errors import InvalidInputError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Evidence:
    """What a run knows when it decides: the gate's best distance, the critic's scores."""

    best_distance: float | None
    critic_scores: Sequence[float] | None  # None: the critic is off
    candidates: int  # how many chunks were judged
    #: BM25's best score over the query's IDF sum; None when no lexical search ran.
    bm25_coverage: float | None = None


@dataclass(frozen=True)
class AbstainThresholds:
    """Abstain when every critic score is below ``critic_below``, the best distance is above
    ``distance_above`` (0 leaves the decision to the other sides) and, unless
    ``coverage_below`` is None, BM25's coverage of the query is below ``coverage_below``."""

    critic_below: float
    distance_above: float
    source: str = "set by the caller"
    coverage_below: float | None = None
    #: A set to hand over of at least ``one_note_chunks`` chunks, all of one note, whose best
    #: critic score reaches ``one_note_above``, or, of any notes, with a chunk among BM25's
    #: that holds ``one_note_support`` of the question's rare words, is kept whatever the
    #: strict cuts say (``one_note``); both None: the strict cuts alone decide.
    one_note_above: float | None = None
    one_note_chunks: int = 2
    one_note_support: float | None = None

    def __post_init__(self) -> None:
        """Refuse thresholds outside their ranges, naming the field."""
        if self.one_note_above is not None and not 0.0 <= self.one_note_above <= 1.0:
            raise InvalidInputError(
                f"one_note_above must be a probability in [0, 1], got {self.one_note_above}."
            )
        if self.one_note_support is not None and not 0.0 <= self.one_note_support <= 1.0:
            raise InvalidInputError(
                f"one_note_support must be a share in [0, 1], got {self.one_note_support}."
            )
        if self.one_note_chunks < 1:
            raise InvalidInputError(
                f"one_note_chunks must be at least 1, got {self.one_note_chunks}."
            )
        if not 0.0 <= self.critic_below <= 1.0:
            raise InvalidInputError(
                f"critic_below must be a probability in [0, 1], got {self.critic_below}."
            )
        if not 0.0 <= self.distance_above <= 2.0:
            raise InvalidInputError(
                f"distance_above must be a cosine distance in [0, 2], got {self.distance_above}."
            )
        if self.coverage_below is not None and not 0.0 <= self.coverage_below <= 1.0:
            raise InvalidInputError(
                f"coverage_below must be a share of the query in [0, 1], got {self.coverage_below}."
            )

    @classmethod
    def from_record(cls, record: dict[str, object], source: str) -> AbstainThresholds:
        """The cuts a record holds (a critic layer's ``abstain``, a LODO fold's, a context
        given as JSON); ``coverage_below`` may be null. ``source`` names it in errors.

        Raises:
            InvalidInputError: A field is missing or not a number, or a cut is out of its range.
        """
        try:
            cut, floor = record.get("coverage_below"), record.get("one_note_above")
            held = record.get("one_note_support")
            one_note_support = None if held is None else float(held)  # type: ignore[arg-type]
            critic_below = float(record["critic_below"])  # type: ignore[arg-type]
            distance_above = float(record["distance_above"])  # type: ignore[arg-type]
            coverage_below = None if cut is None else float(cut)  # type: ignore[arg-type]
            one_note_above = None if floor is None else float(floor)  # type: ignore[arg-type]
            chunks = record.get("one_note_chunks", 2)
            if isinstance(chunks, bool) or not isinstance(chunks, int):
                raise TypeError("one_note_chunks")
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(
                f"{source}: abstention cuts need critic_below, distance_above and "
                f"coverage_below (a number or null), and optionally one_note_above and "
                f"one_note_support (numbers or null) and one_note_chunks (a whole number), "
                f"got {record!r}."
            ) from exc
        return cls(
            critic_below,
            distance_above,
            source,
            coverage_below=coverage_below,
            one_note_above=one_note_above,
            one_note_chunks=chunks,
            one_note_support=one_note_support,
        )


def best_score(scores: Sequence[float]) -> float | None:
    """The highest finite score (None when there is none)."""
    finite = [s for s in scores if not math.isnan(s)]
    return max(finite) if finite else None


def should_abstain(evidence: Evidence, thresholds: AbstainThresholds) -> tuple[bool, str | None]:
    """Whether the run should hand over nothing, and the reason for the trace.

    Args:
        evidence: The gate's best distance and the critic's scores of the judged chunks.
        thresholds: Where the critic's and the gate's sides call "nothing fits".

    Returns:
        ``(abstain, reason)``; the reason is None when the run answers.
    """
    if evidence.candidates == 0 or evidence.best_distance is None:
        return True, "the search found no chunk to judge"
    if evidence.critic_scores is None:
        return False, None  # the gate alone never abstains
    best = best_score(evidence.critic_scores)
    critic_says = best is None or best < thresholds.critic_below
    gate_says = evidence.best_distance > thresholds.distance_above
    cut, coverage = thresholds.coverage_below, evidence.bm25_coverage
    # A threshold set on coverage needs a coverage to agree with it: no lexical search, no say.
    lexical_says = cut is None or (coverage is not None and coverage < cut)
    if critic_says and gate_says and lexical_says:
        shown = "none finite" if best is None else f"{best:.3f}"
        lexical = "" if cut is None else f", BM25's best hit covers {coverage:.2f} < {cut:.2f}"
        return True, (
            f"nothing fits: the critic's best score ({shown}) is below "
            f"{thresholds.critic_below:.3f}, the best distance "
            f"({evidence.best_distance:.3f}) is above {thresholds.distance_above:.3f}"
            f"{lexical} ({thresholds.source})"
        )
    return False, None


def one_note(
    sources: Sequence[str],
    scores: Sequence[float],
    thresholds: AbstainThresholds | None,
    support: float | None = None,
) -> str | None:
    """Whether the set the run would hand over is a confident answer, which the strict level
    keeps whatever its cuts say (its off-topic cut, its evidence rule): at least
    ``thresholds.one_note_chunks`` chunks, and either one of BM25's chunks holding at least
    ``thresholds.one_note_support`` of the question's rare words (the set may span notes: a
    question naming what two notes use is not missing its answer), or every chunk from the
    same note with the best scored at least ``thresholds.one_note_above`` by the critic.

    Args:
        sources: The note of each chunk to hand over.
        scores: The critic's score of each (NaN: not scored).
        thresholds: The strict level's cuts; without a one-note floor nothing is kept so.
        support: The share of the question's rare words BM25's best chunk holds
            (``ragbrain.lexical.support``); None: not measured.

    Returns:
        The trace's line when the set is kept; None otherwise.
    """
    if thresholds is None or len(sources) < thresholds.one_note_chunks:
        return None
    best, floor, held = best_score(scores), thresholds.one_note_above, thresholds.one_note_support
    count = f"the {len(sources)} chunk{'s' if len(sources) != 1 else ''} to hand over"
    if held is not None and support is not None and support >= held:
        # The words the question names are in a chunk: its answer is not missing, whether the
        # set is one note's or spreads over several (a name two notes use).
        why = f"a chunk holds {support:.2f} of its rare words (>= {held:.2f})"
        return f"strict: kept, {count}: {why} ({thresholds.source})"
    if len(set(sources)) == 1 and floor is not None and best is not None and best >= floor:
        why = f"the critic's best score ({best:.3f}) reaches {floor:.3f}"
        return f"strict: kept, {count} all come from one note and {why} ({thresholds.source})"
    return None


def hand_over(
    scores: Sequence[float], threshold: float, depth: int, *, abstain: bool = False
) -> list[int]:
    """Indices (in the judged order) of the chunks to hand over.

    Args:
        scores: The critic's scores of the judged candidates, best-ranked first.
        threshold: The critic's cut: a chunk scoring below it is dropped.
        depth: The most chunks handed over (the query's adaptive depth).
        abstain: The run abstains: nothing is handed over.

    Returns:
        The kept candidates, at most ``depth``; the best-scored one alone when the critic kept
        none and the run does not abstain.
    """
    if abstain or not scores:
        return []
    kept = [i for i, s in enumerate(scores) if not math.isnan(s) and s >= threshold][:depth]
    if kept:
        return kept
    finite = [i for i, s in enumerate(scores) if not math.isnan(s)]
    return [max(finite, key=lambda i: scores[i])] if finite else []


#: Each fit set may see at most this share of its answerable queries refused.
MAX_FALSE_REFUSAL = 0.05
#: One query of the missing-answer scenario: (answerable, the critic's best score, the best
#: distance of the judged hits, BM25's coverage of the query; 0 when BM25 found nothing).
EvidenceRow = tuple[bool, float, float, float]


def fit_thresholds(
    per_set: Mapping[str, Sequence[EvidenceRow]],
    *,
    lexical: bool = True,
    max_false_refusal: float = MAX_FALSE_REFUSAL,
) -> dict[str, Any]:
    """The cuts that refuse the most answerless queries (mean over the sets) while refusing at
    most ``max_false_refusal`` of every set's answerable ones; a query is refused when every
    side agrees nothing fits (``should_abstain``).

    A grid search: each side's grid holds the pooled rows' quantiles and a value that leaves
    the side out (critic below 1.0, distance above 0.0; BM25's coverage, with ``lexical``,
    below 2.0), so a side that only costs answerable queries drops out of the rule.

    Args:
        per_set: Each data set's scenario rows (its answerable and answerless queries).
        lexical: Let BM25's coverage take part (else its cut is None).
        max_false_refusal: The most of any set's answerable queries the cuts may refuse.

    Returns:
        ``critic_below``, ``distance_above``, ``coverage_below`` (None: left out) and the
        ``refusal_recall`` (mean over the sets) and ``false_refusal_worst`` they reach; cuts
        that never refuse (``critic_below`` 0) when no cut refuses anything within the bound.

    Raises:
        InvalidInputError: No rows.
    """
    import numpy as np

    rows = [row for set_rows in per_set.values() for row in set_rows]
    if not rows:
        raise InvalidInputError("No scenario queries to fit abstention thresholds on.")
    pooled = np.array([row[1:] for row in rows], dtype=float)
    steps = np.linspace(0, 1, 26)
    critic_grid = np.unique(np.r_[0.0, np.quantile(pooled[:, 0], steps), 1.0])
    distance_grid = np.unique(np.r_[0.0, np.quantile(pooled[:, 1], steps)])
    coverage_grid = np.array([2.0])  # above any coverage: the lexical side left out
    if lexical:
        coverage_grid = np.unique(np.r_[np.quantile(pooled[:, 2], steps), 2.0])
    grid = np.stack(np.meshgrid(critic_grid, distance_grid, coverage_grid, indexing="ij"), -1)
    grid = grid.reshape(-1, 3)
    recall = np.zeros(len(grid))
    worst = np.zeros(len(grid))
    sets = [set_rows for set_rows in per_set.values() if set_rows]
    for set_rows in sets:
        a = np.array([row[1:] for row in set_rows], dtype=float)
        answerable = np.array([row[0] for row in set_rows], dtype=bool)
        refused = (
            (a[None, :, 0] < grid[:, None, 0])
            & (a[None, :, 1] > grid[:, None, 1])
            & (a[None, :, 2] < grid[:, None, 2])
        )
        worst = np.maximum(worst, refused[:, answerable].mean(1) if answerable.any() else 0.0)
        recall += (refused[:, ~answerable].mean(1) if (~answerable).any() else 0.0) / len(sets)
    recall[worst > max_false_refusal] = -1.0
    i = int(np.argmax(recall))
    if recall[i] <= 0:
        return {
            "critic_below": 0.0,
            "distance_above": 2.0,
            "coverage_below": None,
            "refusal_recall": 0.0,
            "false_refusal_worst": 0.0,
        }
    c, g, v = (float(x) for x in grid[i])
    return {
        "critic_below": c,
        "distance_above": g,
        "coverage_below": None if v > 1.0 else v,
        "refusal_recall": float(recall[i]),
        "false_refusal_worst": float(worst[i]),
    }


NOTES_CUTS_FILE = "abstain_notes.json"


def default_notes_cuts_path() -> Path:
    """Where the package keeps the cuts fit on notes folders."""
    return Path(__file__).parent / NOTES_CUTS_FILE


@dataclass(frozen=True)
class NotesCuts:
    """The cuts a critic kind's layer (``layer``: its fingerprint) takes on a store whose
    notes span at least ``min_per_source`` chunks a note."""

    thresholds: AbstainThresholds
    min_per_source: float
    layer: str


def read_notes_cuts(path: Path) -> dict[str, NotesCuts]:
    """The notes cuts in ``path`` per critic kind (``{"cuts": {"evidence": {"critic_below":
    ..., "distance_above": ..., "coverage_below": ..., "min_per_source": 1.25, "layer":
    "..."}}}``).

    Raises:
        InvalidInputError: The file is missing, not JSON, or an entry is malformed.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidInputError(f"{path}: missing.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"{path}: not a readable JSON file ({exc}).") from exc
    cuts = raw.get("cuts") if isinstance(raw, dict) else None
    if not isinstance(cuts, dict):
        raise InvalidInputError(f"{path}: must hold an object 'cuts' of critic kinds.")
    out = {}
    for kind, entry in cuts.items():
        where = f"{path}: cuts.{kind}"
        if not isinstance(entry, dict):
            raise InvalidInputError(f"{where} must be an object.")
        per_source, layer = entry.get("min_per_source"), entry.get("layer")
        if isinstance(per_source, bool) or not isinstance(per_source, int | float):
            raise InvalidInputError(f"{where}.min_per_source must be a number.")
        if not isinstance(layer, str) or not layer:
            raise InvalidInputError(f"{where}.layer must name the layer the cuts were fit with.")
        source = f"fit on notes folders, a store of >= {per_source} chunks a note"
        fit = entry.get("fit")  # an entry fit apart from the others says where
        source += f" ({fit})" if isinstance(fit, str) else ""
        thresholds = AbstainThresholds.from_record(entry, where)
        out[str(kind)] = NotesCuts(
            AbstainThresholds(
                thresholds.critic_below,
                thresholds.distance_above,
                source,
                coverage_below=thresholds.coverage_below,
                one_note_above=thresholds.one_note_above,
                one_note_chunks=thresholds.one_note_chunks,
                one_note_support=thresholds.one_note_support,
            ),
            float(per_source),
            layer,
        )
    return out


@cache
def _shipped_notes_cuts(path: Path) -> dict[str, NotesCuts]:
    """The notes cuts in ``path``; none (with a warning) when it is there but cannot be read."""
    if not path.is_file():
        return {}
    try:
        return read_notes_cuts(path)
    except InvalidInputError as exc:
        log.warning("The strict level keeps the critic's own cuts on every store: %s", exc)
        return {}


def notes_cuts(
    kind: str, layer: str, per_source: float | None, path: Path | None = None, key: str = ""
) -> AbstainThresholds | None:
    """The cuts fit on notes folders for the critic ``kind`` whose layer's fingerprint is
    ``layer``, on a store of ``per_source`` chunks a note (None: not measured); ``key``: the
    entry for a store of another model than the layer's (``evidence@multilingual-e5-small``;
    none when the file has no such entry: the kind's cuts read the layer's model's distances).

    Returns:
        The cuts; None (the critic's own apply) when the store's notes span fewer chunks or it
        was not measured, when ``path`` (default: the shipped file) is missing or unreadable,
        or when it holds no cuts for ``kind`` fit with this layer.
    """
    entry = _shipped_notes_cuts(path or default_notes_cuts_path()).get(key or kind)
    if entry is None or entry.layer != layer:
        return None
    if per_source is None or per_source < entry.min_per_source:
        return None
    return entry.thresholds
