"""The hand-over rule: of the chunks the critic keeps, hand over those that score close to the
best one, and the best chunk of each other note that scores near it.

A question one note answers should get that note's chunks and little else; a question several
notes or documents answer should get each of them. The critic's cut is set to keep nearly every
relevant chunk on domains it never saw, so on its own it keeps several notes' chunks (5-6 chunks
a question on real notes folders, under half of them from the note that answers). The rule
keeps the best-scored chunk, every other chunk scoring at least ``ratio`` times the best, and,
of another note whose best chunk scores at least ``others`` times the best, that best chunk
(the rest of its chunks only when they reach ``ratio``): one clear winner is handed over with
its own sections, a plateau of notes near the best keeps each of them, and a long note's
sections the question does not touch stay behind. Chunks of one note are handed over together,
notes in the order of their best score (``order="score"``) or of their first kept chunk in the
list (``"rank"``).

The rule is fit per critic kind, leave-one-domain-out over notes folders and folders of
documents (``python -m benchmarks.folders --rules ... --ship``), and ships in
``handover.json``; a critic kind without an entry (the cross-encoder of non-English stores, a
caller's own critic) hands over all it keeps, as before. An entry ``<kind>@<model>`` is the
rule fit for that critic on notes of another embedding model, for questions in its
``scripts`` (``evidence@multilingual-e5-small``: fit on Japanese, Thai and Chinese notes asked
in their own language, for their questions: ``ShippedCritic.for_script``; a long page by its
best three chunks, another note by its best one).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ragbrain.errors import CriticLoadError

RULES_FILE = "handover.json"


def default_rules_path() -> Path:
    """Where the package keeps the fitted hand-over rules."""
    return Path(__file__).parent / RULES_FILE


@dataclass(frozen=True)
class HandOverRule:
    """Keep a chunk besides the best when its score is at least ``ratio`` times the best, and
    another note's best chunk when it scores at least ``others`` times the best (None: the
    ``ratio``), when the best scores at least ``confident`` (a list whose best the critic is
    unsure of is handed over as the critic kept it); notes in ``order``."""

    ratio: float
    source: str  # where the ratio came from, for the trace
    confident: float = 0.0
    #: The rule applies on stores whose notes span at least this many chunks on average
    #: (``OffTopicCut.per_source``): a collection of one-chunk passages, where several may
    #: answer, keeps the critic's hand-over.
    min_per_source: float = 0.0
    #: The scripts of the questions it applies to (``ragbrain.refusal.offtopic.script_of``'s
    #: names; ``ShippedCritic.for_script``); empty: any.
    scripts: tuple[str, ...] = ()
    others: float | None = None
    #: ``"rank"``: notes in the order their first kept chunk comes in the list; ``"score"``:
    #: in the order of their best score.
    order: str = "rank"
    #: At most this many chunks of one note, its best-scored (0: no cap): a long page whose
    #: sections all score near the best is handed over by its best few.
    per_note: int = 0
    #: At most this many chunks of a note other than the best one's (0: no cap).
    others_per_note: int = 0


ORDERS = ("rank", "score")


def read_rules(path: Path) -> dict[str, HandOverRule]:
    """The rules in ``path`` per critic kind (``{"rules": {"evidence": {"ratio": 0.6}}}``;
    optional ``others``, ``confident``, ``min_per_source``, ``order``, ``per_note`` and
    ``others_per_note``).

    Raises:
        CriticLoadError: The file is missing, not JSON, a ratio is not in [0, 1], the order
            is not one of ``ORDERS`` or a cap is not a whole number >= 0.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CriticLoadError(f"{path}: missing.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CriticLoadError(f"{path}: not a readable JSON file ({exc}).") from exc
    rules = raw.get("rules") if isinstance(raw, dict) else None
    if not isinstance(rules, dict):
        raise CriticLoadError(f"{path}: must hold an object 'rules' of critic kinds.")
    out: dict[str, HandOverRule] = {}
    by = str(raw.get("fit", {}).get("by", path.name)) if isinstance(raw.get("fit"), dict) else ""
    for kind, entry in rules.items():
        if not isinstance(entry, dict):
            raise CriticLoadError(f"{path}: rules.{kind} must be an object with a 'ratio'.")
        values = {
            name: entry.get(name, default)
            for name, default in (
                ("ratio", None),
                ("confident", 0.0),
                ("min_per_source", 0.0),
                ("others", entry.get("ratio")),
            )
        }
        order = entry.get("order", "rank")
        if order not in ORDERS:
            raise CriticLoadError(f"{path}: rules.{kind}.order must be one of {list(ORDERS)}.")
        checked: list[float] = []
        for name, value in values.items():
            top = 100.0 if name == "min_per_source" else 1.0
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or not 0.0 <= value <= top
            ):
                raise CriticLoadError(
                    f"{path}: rules.{kind}.{name} must be a number in [0, {top:g}]."
                )
            checked.append(float(value))
        ratio, confident, per_source, others = checked
        caps = [entry.get(name, 0) for name in ("per_note", "others_per_note")]
        if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in caps):
            raise CriticLoadError(
                f"{path}: rules.{kind}.per_note and others_per_note must be whole numbers >= 0."
            )
        scripts = entry.get("scripts", [])
        if not isinstance(scripts, list) or not all(isinstance(x, str) for x in scripts):
            raise CriticLoadError(f"{path}: rules.{kind}.scripts must be a list of script names.")
        fit = entry.get("fit")  # an entry fit apart from the others says where
        where = fit if isinstance(fit, str) else by or path.name
        said = f"ratio {ratio:.2f}" + (f", others {others:.2f}" if others != ratio else "")
        said += "".join(
            f", {c} chunk{'s' if c != 1 else ''} {what}"
            for c, what in zip(caps, ("a note", "of another note"), strict=True)
            if c
        )
        out[str(kind)] = HandOverRule(
            ratio,
            f"{said}, {where}",
            confident,
            per_source,
            tuple(scripts),
            others=others,
            order=str(order),
            per_note=caps[0],
            others_per_note=caps[1],
        )
    return out


@cache
def shipped_rules() -> dict[str, HandOverRule]:
    """The rules the package ships; none when the file is missing (every kind hands over all
    it keeps).

    Raises:
        CriticLoadError: The file is there but malformed.
    """
    path = default_rules_path()
    return read_rules(path) if path.is_file() else {}


def rule_for(
    critic: object, per_source: float | None = None, model: str | None = None
) -> HandOverRule | None:
    """The shipped rule for ``critic``'s kind (its ``kind`` attribute) on a store of
    ``per_source`` chunks a note (None: not known, the rule applies): the one fit for
    ``model``'s notes (``<kind>@<model>``) when ``model`` is given and the file has one, else
    the kind's; None without one, or on a store whose notes are shorter than the rule's
    ``min_per_source``."""
    kind = getattr(critic, "kind", None)
    if not isinstance(kind, str):
        return None
    rules = shipped_rules()
    rule = rules.get(f"{kind}@{model}", rules.get(kind)) if model else rules.get(kind)
    if rule is None or (per_source is not None and per_source < rule.min_per_source):
        return None
    return rule


def _capped(
    kept: Sequence[int],
    scores: Sequence[float],
    sources: Sequence[str],
    top: str,
    rule: HandOverRule,
) -> list[int]:
    """``kept`` (in its order) holding at most ``rule.per_note`` chunks of a note and
    ``rule.others_per_note`` of a note other than ``top``, each note's best-scored ones."""
    by_note: dict[str, list[int]] = {}
    for i in kept:
        by_note.setdefault(sources[i], []).append(i)
    allowed: set[int] = set()
    for note, items in by_note.items():
        caps = [rule.per_note, 0 if note == top else rule.others_per_note]
        cap = min((c for c in caps if c), default=len(items))
        allowed.update(sorted(items, key=lambda i: -scores[i])[:cap])
    return [i for i in kept if i in allowed]


def narrow(
    chosen: Sequence[int],
    scores: Sequence[float],
    sources: Sequence[str],
    rule: HandOverRule,
) -> tuple[list[int], str]:
    """Apply ``rule`` to the ``chosen`` indices (in rank order).

    Returns:
        The indices to hand over, each note's chunks together (notes in the rule's ``order``),
        and the trace's line.
    """
    finite = [i for i in chosen if not math.isnan(scores[i])]
    if len(chosen) < 2 or not finite:
        return list(chosen), ""
    best = max(finite, key=lambda i: scores[i])
    if scores[best] < rule.confident:
        return list(chosen), (
            f"hand-over: all kept (the best score, {scores[best]:.3f}, is below "
            f"{rule.confident:.2f}: the critic is unsure of the best note)"
        )
    floor = rule.ratio * scores[best]
    near = (rule.ratio if rule.others is None else rule.others) * scores[best]
    tops: dict[str, int] = {}  # each note's best-scored chunk
    for i in finite:
        if sources[i] not in tops or scores[i] > scores[tops[sources[i]]]:
            tops[sources[i]] = i
    passed = {n for n, top in tops.items() if top == best or scores[top] >= near}
    kept = [
        i
        for i in chosen
        if i == best or (sources[i] in passed and (i == tops[sources[i]] or scores[i] >= floor))
    ]
    if rule.per_note or rule.others_per_note:
        kept = _capped(kept, scores, sources, sources[best], rule)
    order: dict[str, list[int]] = {}
    for i in kept:
        order.setdefault(sources[i], []).append(i)
    notes = list(order)
    if rule.order == "score":
        notes.sort(key=lambda n: -scores[tops[n]])
    grouped = [i for note in notes for i in order[note]]
    dropped = len(chosen) - len(kept)
    cut = f"{rule.ratio:.2f}"
    if rule.others is not None and rule.others != rule.ratio:
        cut += f" (another note's best chunk: {rule.others:.2f})"
    caps = [
        f"{c} chunk{'s' if c != 1 else ''} {what}"
        for c, what in ((rule.per_note, "a note"), (rule.others_per_note, "of another note"))
        if c
    ]
    past = " or past " + " / ".join(caps) if caps else ""
    below = (
        f"{dropped} other kept chunk{'s' if dropped != 1 else ''} scored below "
        f"{cut} of its {scores[best]:.3f}{past} ({rule.source})"
    )
    if len(kept) == 1:
        note = f"hand-over: only the best chunk ({sources[best]}); {below}"
    elif len(order) == 1:
        note = f"hand-over: only the best note ({sources[best]}, {len(kept)} chunks); {below}"
    elif dropped:
        note = (
            f"hand-over: {len(kept)} chunks of {len(order)} notes; {dropped} scored below "
            f"{cut} of the best{past} ({scores[best]:.3f}, {rule.source})"
        )
    else:
        note = f"hand-over: all {len(kept)} kept chunks score within {cut} of the best"
    return grouped, note


def breadth(
    chosen: Sequence[int], scores: Sequence[float], sources: Sequence[str], notes: int
) -> tuple[list[int], str]:
    """An overview question's hand-over: of the ``chosen`` indices (in rank order), the
    best-scored chunk of each note, notes in the order of those scores, at most ``notes``.

    Returns:
        The indices to hand over and the trace's line.
    """
    tops: dict[str, int] = {}
    for i in chosen:
        score = scores[i]
        if sources[i] not in tops or (
            not math.isnan(score)
            and (math.isnan(scores[tops[sources[i]]]) or score > scores[tops[sources[i]]])
        ):
            tops[sources[i]] = i
    ranked = sorted(tops.values(), key=lambda i: -scores[i] if not math.isnan(scores[i]) else 1.0)
    kept = ranked[:notes]
    dropped = len(chosen) - len(kept)
    note = f"hand-over: an overview question, the best chunk of each of {len(kept)} notes"
    if len(tops) > notes:
        note += f" (the {notes} best of {len(tops)})"
    if dropped:
        note += f"; {dropped} other chunk{'s' if dropped != 1 else ''} of those notes stay behind"
    return kept, note
