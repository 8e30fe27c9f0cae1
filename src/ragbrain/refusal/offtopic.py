"""Off-topic refusal: a question the notes are not about gets an empty answer and a reason.

The evidence is absolute, not relative to the list: the query's best cosine distance to the
store, against a cut this store learns at ingest from how far a bank of general questions
(``general_questions.jsonl``: cooking, sport, travel, ... in English, Japanese, Thai, Chinese
and Arabic, written for the project) stays from its notes. The cut is a low quantile of those
distances (the model profile's level, fit leave-one-domain-out: ``python -m benchmarks.offtopic``):
a question farther from every note than most general questions are is about something else.

A store too small to say (fewer than ``MIN_CHUNKS`` chunks) uses the cut shipped for its
embedding model, and the trace says so. On a store whose model reads English only (its
profile's ``reads``), a question written in a script the notes do not use (Thai, Chinese,
Arabic, ...) is refused with that reason: the model cannot read it, so its distance means
nothing.

Calibrating costs one embedding of the bank per model (cached under ``cache_root()``) and one
nearest-neighbour query per question; ``ragbrain ingest`` runs it after every change, so the
cut follows the store.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain._util import write_bytes
from ragbrain.models.profiles import (
    AcrossScripts,
    OffTopicLevels,
    chosen_for,
    default_profile,
    profile,
)
from ragbrain.paths import cache_root
from ragbrain.query.inputs import read_part

if TYPE_CHECKING:
    import numpy as np
    from langchain_core.embeddings import Embeddings

    from ragbrain.store import Store

log = logging.getLogger(__name__)

BANK = Path(__file__).with_name("general_questions.jsonl")
#: Fewer chunks than this: the store's own distances say too little; the shipped cut applies.
MIN_CHUNKS = 20
#: The quantile of the bank's best distances that becomes a store's cut, the strict level's
#: cut as a share of it, the cut shipped for stores too small to calibrate and the lexical
#: support that rescues a far question are per embedding model, in its profile
#: (``ragbrain.models.profiles``: ``offtopic``): the lowest quantile (share) that refuses at
#: most 2% (5%) of every shared set's answerable test-split-free fit queries, fit on every
#: set's store, the shipped cut the median over the shared sets' stores of the cut that rule
#: gives (``python -m benchmarks.offtopic --ship`` writes them; docs/refusal.md). Other models
#: get the default model's levels and rescue, and no shipped cut.
NO_RESCUE = 1.01
#: A script this rare among the store's chunks is one the notes do not use.
RARE_SCRIPT = 0.05
#: Chunks read to learn the store's scripts (the benchmark's reading of them).
SCRIPT_SAMPLE = 400
#: Chunks read (with their vectors) to measure a multilingual store across scripts; a larger
#: store is measured on this sample (its nearest chunks a little farther: a looser cut).
CROSS_SAMPLE = 5000
#: Fewer bank questions than this in scripts the notes do not use: no cut across scripts.
MIN_ACROSS = 20
#: Stores whose chunks are at least this share English function words (``prose_share``) read
#: as prose (the shares of each set: docs/decisions/offtopic-prose-quantile.md).
PROSE_SHARE = 0.05
#: A store of prose whose notes span at least this many chunks on average (``per_source``)
#: is a store of notes (``reads_as_notes``): it takes its model's ``prose_level`` and
#: ``notes_cap``, fit on notes folders (they span 1.5-11 chunks a note); a collection of
#: passages (one chunk each) keeps the level fit on them (docs/decisions/offtopic-notes-cap.md).
NOTES_SPAN = 1.25
#: English function words: their share of a store's words tells prose from text stripped of
#: them (NFCorpus's preprocessed abstracts).
FUNCTION_WORDS = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "to",
        "in",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "for",
        "on",
        "with",
        "as",
        "by",
        "at",
        "from",
        "that",
        "this",
        "it",
        "its",
        "not",
        "no",
        "but",
        "if",
        "then",
        "than",
        "so",
    ]
)
_WORD = re.compile(r"[A-Za-z]+")


def prose_share(texts: Iterable[str]) -> float:
    """The share of English function words among the Latin-script words of ``texts``."""
    words = [w.lower() for text in texts for w in _WORD.findall(text)]
    return sum(w in FUNCTION_WORDS for w in words) / len(words) if words else 0.0


def across_of(model: str) -> AcrossScripts | None:
    """The cut across scripts ``model``'s stores use: its profile's; for a model without a
    profile (read as reading every script), the multilingual model's quantile and margin
    without its shipped cut. None for a model that reads English only."""
    if english_only(model):
        return None
    found = profile(model)
    if found is not None:
        return found.offtopic.across
    across = chosen_for("multilingual").offtopic.across
    return None if across is None else replace(across, cut=0.0)


@dataclass(frozen=True)
class OffTopicCut:
    """Where a store's questions stop being about its notes, and where that came from."""

    distance: float  # refuse above this best distance
    strict: float  # the strict level's cut (lower)
    source: str  # "calibrated on 144 general questions over 1,873 chunks", "shipped for ..."
    model: str
    scripts: dict[str, float] = field(default_factory=dict)  # share of chunks per script
    chunks: int = 0  # the store's size when the cut was learnt
    #: A question this well supported by rare words of one chunk is on topic, however far
    #: (``lexical_support``); 1.01: no rescue.
    support: float = 1.01
    #: On a multilingual model's store of notes in one script: the cut for a question written
    #: in a script the notes do not use (the same quantile of the bank's questions written in
    #: such scripts: a question finds a note in another language only from farther away).
    #: None: the store-wide cut applies to every question.
    across: float | None = None
    #: With ``across``: a question in another script, past ``distance``, that comes closer to
    #: one of the bank's general questions than to the notes by more than this is off-topic.
    margin: float | None = None
    #: Chunks per source (note) among the chunks read to calibrate: a notes folder's notes
    #: span several chunks, a collection of passages holds one each (0: not measured).
    per_source: float = 0.0
    #: The share of English function words in the chunks read (``prose_share``), and the
    #: quantile of the bank's distances the cut is (0: not recorded).
    prose: float = 0.0
    level: float = 0.0
    #: The shipped values it was learnt under (``shipped_rules``): a cut learnt under others
    #: is learnt again ("": not recorded).
    rules: str = ""
    #: On a multilingual model's store in Latin and one other script: the cut for a question
    #: written in either (``script_cuts``); a script without one takes ``distance``.
    by_script: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> str:
        """The cut as the JSON string the store's metadata keeps."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> OffTopicCut | None:
        """The cut a store's metadata holds; None when it is missing or unreadable."""
        try:
            raw = json.loads(text)
            return cls(
                distance=float(raw["distance"]),
                strict=float(raw["strict"]),
                source=str(raw["source"]),
                model=str(raw["model"]),
                scripts={str(k): float(v) for k, v in dict(raw.get("scripts", {})).items()},
                chunks=int(raw.get("chunks", 0)),
                support=float(raw.get("support", NO_RESCUE)),
                across=None if raw.get("across") is None else float(raw["across"]),
                margin=None if raw.get("margin") is None else float(raw["margin"]),
                per_source=float(raw.get("per_source", 0.0)),
                prose=float(raw.get("prose", 0.0)),
                level=float(raw.get("level", 0.0)),
                rules=str(raw.get("rules", "")),
                by_script={str(k): float(v) for k, v in dict(raw.get("by_script", {})).items()},
            )
        except (TypeError, ValueError, KeyError):
            return None


_ASCII_LETTER = re.compile(r"[A-Za-z]")


@lru_cache(maxsize=65536)
def _letter_script(char: str) -> str:
    """The script of one non-ASCII letter, by its Unicode name."""
    name = unicodedata.name(char, "")
    if name.startswith(("LATIN", "FULLWIDTH LATIN")):
        return "latin"
    if name.startswith(("CJK", "HIRAGANA", "KATAKANA")):
        return "cjk"
    for prefix in ("HANGUL", "THAI", "ARABIC", "CYRILLIC"):
        if name.startswith(prefix):
            return prefix.lower()
    return "other"


def script_of(text: str) -> str:
    """The script most of ``text``'s letters are written in: ``latin``, ``cjk`` (Han, kana),
    ``hangul``, ``thai``, ``arabic``, ``cyrillic``, ``other``; ``none`` without letters.
    (ASCII letters are Latin without a name lookup; letters are counted by distinct letter,
    each other one named once and cached: ingest learns the off-topic cut over every chunk after
    each change, and a question of 10,000 characters is read once, not letter by letter.)"""
    if text.isascii():
        return "latin" if _ASCII_LETTER.search(text) else "none"
    counts: Counter[str] = Counter()
    for char, n in Counter(text).items():
        if char.isalpha():
            counts["latin" if char.isascii() else _letter_script(char)] += n
    if not counts:
        return "none"
    most = max(counts.values())
    tied = [s for s, n in counts.items() if n == most]
    if len(tied) == 1:
        return tied[0]
    return min(tied, key=lambda script: _first_of(text, script))


def _first_of(text: str, script: str) -> int:
    """Where ``text``'s first letter of ``script`` is (a tie goes to the script met first, as
    in reading order)."""
    for at, char in enumerate(text):
        if char.isalpha() and ("latin" if char.isascii() else _letter_script(char)) == script:
            return at
    return len(text)


@lru_cache(maxsize=8)
def _question_script(query: str) -> str:
    """A question's script, of its first ``READ_QUERY_CHARS`` (``read_part``), kept for the
    last few questions: a run asks for it in several steps."""
    return script_of(read_part(query))


def script_shares(texts: Iterable[str]) -> dict[str, float]:
    """The share of ``texts`` written mostly in each script."""
    scripts = [script_of(t) for t in texts]
    return {s: n / len(scripts) for s, n in Counter(scripts).items()} if scripts else {}


@cache
def bank(english_only: bool = False) -> tuple[str, ...]:
    """The calibration bank's questions (English ones only with ``english_only``)."""
    rows = [json.loads(line) for line in BANK.read_text(encoding="utf-8").splitlines() if line]
    return tuple(r["text"] for r in rows if not english_only or r["lang"] == "en")


def query_vectors(embeddings: Embeddings, texts: Sequence[str], model: str) -> np.ndarray:
    """The query embeddings of ``texts``: shipped in the package for the shipped models
    (``refusal.shipped``, checked against the first question embedded now), else cached under
    ``cache_root()/refusal/bank-<digest>.npy`` per model (the digest of its name, variant and
    dimension and the texts): the bank is embedded once per model, not per store or ingest."""
    import numpy as np

    from ragbrain.refusal.shipped import shipped_vectors

    variant = str(getattr(embeddings, "variant", ""))
    probe = embeddings.embed_query(texts[0])
    shipped = shipped_vectors(embeddings, model, variant, texts, probe)
    if shipped is not None:
        return shipped
    dimension = str(len(probe))
    key = "\n".join([model, variant, dimension, *texts])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    path = cache_root() / "refusal" / f"bank-{digest}.npy"
    if path.is_file():
        try:
            vectors: np.ndarray = np.load(path, allow_pickle=False)
            if vectors.shape[0] == len(texts):
                return vectors
        except (OSError, ValueError):
            log.warning("Embedding the questions again: %s is unreadable", path)
    from ragbrain.models.batch import embed_queries

    vectors = np.asarray(embed_queries(embeddings, texts), dtype=np.float32)
    buffer = io.BytesIO()
    np.save(buffer, vectors, allow_pickle=False)
    write_bytes(path, buffer.getvalue())
    return vectors


def nearest_distances(store: Store, vectors: Any) -> list[float]:
    """Each vector's cosine distance to its nearest chunk in ``store``."""
    queries: list[Sequence[float]] = [[float(x) for x in v] for v in vectors]
    found = store.call(
        "Measuring the off-topic bank",
        lambda: store.collection.query(
            query_embeddings=queries, n_results=1, include=["distances"]
        ),
    )
    return [max(0.0, float(d[0])) for d in found["distances"] or [] if d]


def cross_script_distances(
    questions: Sequence[str], vectors: Any, texts: Sequence[str], chunk_vectors: Any
) -> list[float]:
    """Each question's cosine distance to its nearest chunk written in another script."""
    import numpy as np

    chunks = np.asarray(chunk_vectors, dtype=np.float32)
    chunks /= np.maximum(np.linalg.norm(chunks, axis=1, keepdims=True), 1e-12)
    asked = np.asarray(vectors, dtype=np.float32)
    asked /= np.maximum(np.linalg.norm(asked, axis=1, keepdims=True), 1e-12)
    chunk_scripts = np.array([script_of(t) for t in texts])
    question_scripts = np.array([script_of(q) for q in questions])
    distance = 1.0 - asked @ chunks.T
    other = chunk_scripts[None, :] != question_scripts[:, None]
    nearest = np.where(other, distance, np.inf).min(axis=1)
    return [max(0.0, float(d)) for d in nearest if np.isfinite(d)]


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (linear interpolation, as numpy's default)."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def shipped_cut(model: str) -> OffTopicCut | None:
    """The cut shipped for ``model``; None for a model it was not fit for."""
    found = profile(model)
    if found is None:
        return None
    distance = found.offtopic.cut
    strict = round(distance * levels(model)[1], 4)
    return OffTopicCut(distance, strict, f"shipped for {model}", model, support=rescue(model))


def _levels_of(model: str) -> OffTopicLevels:
    """``model``'s off-topic values (the default model's for a model without a profile)."""
    found = profile(model)
    return (found or default_profile()).offtopic


def levels(model: str) -> tuple[float, float]:
    """The quantile and the strict share ``model``'s stores use."""
    chosen = _levels_of(model)
    return chosen.level, chosen.strict_scale


def rescue(model: str) -> float:
    """The lexical support that rescues a far question on ``model``'s stores."""
    return _levels_of(model).support


def english_only(model: str) -> bool:
    """Whether ``model`` reads English only: other scripts are refused by script, not by
    distance."""
    found = profile(model)
    return found is not None and found.english_only


def calibrate(
    store: Store,
    *,
    level: float | None = None,
    strict_scale: float | None = None,
    capped: bool = True,
) -> OffTopicCut | None:
    """Learn ``store``'s off-topic cut from the bank's best distances to its notes.

    Args:
        store: The store.
        level: The bank's quantile (None: the model's; a store of notes' where it has one).
        strict_scale: The strict level's share of the cut (None: the model's).
        capped: Hold a store of notes' cut to its model's ``notes_cap`` (``hold_to_cap``);
            False gives the cut as the bank alone sets it (to fit the cap on).

    Returns:
        The calibrated cut; the shipped cut for the store's model when the store holds fewer
        than ``MIN_CHUNKS`` chunks (None for a model without one).
    """
    model = store.model
    explicit = level
    level = levels(model)[0] if level is None else level
    strict_scale = levels(model)[1] if strict_scale is None else strict_scale
    count = store.count()
    english = english_only(model)
    setting = across_of(model)
    by_script: dict[str, float] = {}
    if count < MIN_CHUNKS:
        return _small_store_cut(store, model, count)
    questions = bank(english_only=english)
    vectors = query_vectors(store.embeddings, questions, model)
    sample = store.call(
        "Reading chunks for their scripts",
        lambda: store.collection.get(
            limit=CROSS_SAMPLE,
            include=["documents", "metadatas", "embeddings"]
            if not english
            else ["documents", "metadatas"],
        ),
    )
    texts = [t or "" for t in sample["documents"] or []]
    prose = round(prose_share(texts[:SCRIPT_SAMPLE]), 4)
    per_source = chunks_per_source(sample["ids"], sample["metadatas"] or [])
    # The notes fits were made for their model's distances: a model without a profile has
    # none, and a level the caller chose is kept.
    found = profile(model)
    fits = None if found is None or explicit is not None else found.offtopic
    scripts = script_shares(t for t in texts if t)
    read_as = reads_as_notes(prose, per_source, None if english else scripts)
    notes = fits if fits is not None and read_as else None
    if notes is not None and notes.prose_level is not None:
        level = notes.prose_level
    written_in = [s for s, share in scripts.items() if share >= RARE_SCRIPT and s != "none"]
    source = f"calibrated on {len(questions)} general questions over {count} chunks"
    if notes is not None and notes.prose_level is not None:
        source += f", the {level} quantile of a store of notes"
    if not english and len(written_in) > 1:
        # A multilingual store answers across scripts, and a question finds a note in another
        # script only from farther away: the cut is how close general questions come to the
        # notes in a script other than their own.
        distances = cross_script_distances(questions, vectors, texts, sample["embeddings"])
        source += f" in {len(written_in)} scripts, measured across scripts"
        across = None
        if explicit is None:
            nearest = nearest_distances(store, vectors)
            wide = quantile(distances, level)
            by_script = script_cuts(questions, nearest, level, written_in, wide)
            source += ", and per script of the question" if by_script else ""
    else:
        distances = nearest_distances(store, vectors)
        across = None
        if setting is not None and written_in:
            # Notes in one script, a model that reads others: a question in another script
            # finds its note from as far as general questions in such scripts come, so only
            # one farther than nearly all of them is refused by distance.
            foreign = [
                d
                for q, d in zip(questions, distances, strict=True)
                if script_of(q) not in written_in
            ]
            if len(foreign) >= MIN_ACROSS:
                across = round(max(quantile(foreign, setting.level), quantile(distances, level)), 4)
                source += f" ({len(foreign)} in other scripts than the notes')"
    distance = quantile(distances, level)
    cut = OffTopicCut(
        distance=round(distance, 4),
        strict=round(distance * strict_scale, 4),
        source=source,
        model=model,
        scripts={k: round(v, 4) for k, v in scripts.items()},
        chunks=count,
        support=rescue(model),
        across=across,
        margin=setting.margin if across is not None and setting is not None else None,
        per_source=per_source,
        prose=prose,
        level=level,
        rules=shipped_rules(model),
        by_script=by_script,
    )
    cap = None if notes is None or not capped else notes.notes_cap
    return cut if cap is None else hold_to_cap(cut, cap, strict_scale)


def hold_to_cap(cut: OffTopicCut, cap: float, strict_scale: float) -> OffTopicCut:
    """A store of notes' ``cut`` held to its model's notes ``cap``: general questions may
    come closer to a notes folder than its own questions ever stray (one topic a note), so
    the bank's quantile lands loose.

    On a store of an English-only model the cap holds the store-wide cut. On a multilingual
    model's store of notes in Latin and one other script (``by_script``) it holds the cut of
    that other script, the notes' own language: English questions about the notes keep the
    Latin cut, and a question in a third script the store-wide one (it finds the notes across
    languages, from farther). A multilingual store in one script, or in several besides
    Latin, keeps its cut: measured on Japanese, Thai and Chinese passages, a cap there
    refused questions they answer (docs/decisions/offtopic-notes-cap-own-script.md).
    """
    if cut.by_script:
        held = sorted(s for s, c in cut.by_script.items() if s != "latin" and c > cap)
        if not held:
            return cut
        by_script = {**cut.by_script, **dict.fromkeys(held, cap)}
        note = f", the {' and '.join(held)} cut held to the notes cap {cap}"
        return replace(cut, by_script=by_script, source=cut.source + note)
    if cut.distance <= cap or not english_only(cut.model):
        return cut
    return replace(
        cut,
        distance=cap,
        strict=round(cap * strict_scale, 4),
        source=cut.source + f", held to the notes cap {cap}",
    )


def script_cuts(
    questions: Sequence[str],
    distances: Sequence[float],
    level: float,
    written_in: Sequence[str],
    cut: float,
) -> dict[str, float]:
    """The cut for a question in the notes' own script on a store of notes in one language
    besides English (code, commands, UI names: ``written_in`` holds Latin and exactly one
    other script): the ``level`` quantile of the nearest distances of the bank's questions
    written in that script, and for a Latin-script question the same quantile of the English
    ones, never below the store-wide ``cut``. A question finds notes of its own script from
    nearer than one asked across scripts, so the store-wide cut, measured across scripts, let
    general questions in the notes' language through; an English question finds them from
    farther. Notes in two other scripts (a store of several languages) get none: there a
    question is meant to find notes in another language
    (docs/decisions/offtopic-cut-per-script.md).
    """
    others = [s for s in written_in if s != "latin"]
    if "latin" not in written_in or len(others) != 1:
        return {}
    by: dict[str, list[float]] = {}
    for question, distance in zip(questions, distances, strict=True):
        by.setdefault(script_of(question), []).append(distance)
    out: dict[str, float] = {}
    if len(by.get(others[0], [])) >= MIN_ACROSS:
        out[others[0]] = round(quantile(by[others[0]], level), 4)
    if len(by.get("latin", [])) >= MIN_ACROSS:
        out["latin"] = round(max(quantile(by["latin"], level), cut), 4)
    return out


def _small_store_cut(store: Store, model: str, count: int) -> OffTopicCut | None:
    """The shipped cut for a store of ``count`` chunks, too few to calibrate (None for a model
    without one); with the model's cut across scripts, the scripts its chunks are in."""
    shipped = shipped_cut(model)
    if shipped is None:
        return None
    setting = across_of(model)
    scripts: dict[str, float] = {}
    across_cut = setting.cut if setting is not None and setting.cut and count else None
    if across_cut is not None:
        small = store.call(
            "Reading chunks for their scripts",
            lambda: store.collection.get(limit=MIN_CHUNKS, include=["documents"]),
        )
        scripts = script_shares(t for t in small["documents"] or [] if t)
    return OffTopicCut(
        shipped.distance,
        shipped.strict,
        f"shipped for {model}: the store holds {count} chunks, too few to calibrate "
        f"(at least {MIN_CHUNKS})",
        model,
        scripts={k: round(v, 4) for k, v in scripts.items()},
        chunks=count,
        support=shipped.support,
        across=across_cut if scripts else None,
        margin=setting.margin if scripts and setting is not None else None,
        rules=shipped_rules(model),
    )


#: What a recorded cut holds; part of ``shipped_rules``, so that a cut recorded before a change
#: in how cuts are learnt is learnt again.
CUT_FORMAT = "by_script"
#: A stored cut older than this change in the store's size is learnt again.
STALE_CHANGE = 0.2


def reads_as_notes(
    prose: float, per_source: float, scripts: dict[str, float] | None = None
) -> bool:
    """Whether a store whose chunks hold ``prose`` English function words and span
    ``per_source`` chunks a note is a store of notes (``PROSE_SHARE``, ``NOTES_SPAN``).

    ``scripts`` (a multilingual model's store: each script's share of its chunks) counts a
    store with chunks in a script other than Latin as prose too (``RARE_SCRIPT``): Japanese,
    Thai or Chinese notes hold no English function words."""
    other = any(
        share >= RARE_SCRIPT
        for script, share in (scripts or {}).items()
        if script not in ("latin", "none", "other")
    )
    return (prose >= PROSE_SHARE or other) and per_source >= NOTES_SPAN


def chunks_per_source(ids: Sequence[str], metadatas: Sequence[Any]) -> float:
    """Chunks per note (``source``; a chunk without one counts as its own) among ``ids``."""
    sources = [str((m or {}).get("source") or id_) for id_, m in zip(ids, metadatas, strict=False)]
    return round(len(sources) / max(len(set(sources)), 1), 3) if sources else 0.0


def shipped_rules(model: str) -> str:
    """A short fingerprint of ``model``'s shipped off-topic values (its profile's
    ``offtopic``): a cut recorded under other values is learnt again. "" without a profile."""
    found = profile(model)
    if found is None:
        return ""
    text = json.dumps(asdict(found.offtopic), sort_keys=True) + CUT_FORMAT
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def store_cut(store: Store, *, save: bool = True) -> OffTopicCut | None:
    """The store's off-topic cut: the one ingest recorded while the store's size stays within
    ``STALE_CHANGE`` of what it was then and the model's shipped values are the same, else
    learnt now (and recorded, with ``save``).

    Returns:
        The cut; None for a store too small to calibrate whose model has no shipped cut.
    """
    from ragbrain.errors import RagbrainError

    record = store.offtopic_record()
    cut = OffTopicCut.from_json(record) if record else None
    model = store.model
    if cut is not None and cut.model == model and cut.rules == shipped_rules(model):
        count = store.count()
        if abs(count - cut.chunks) <= STALE_CHANGE * max(cut.chunks, MIN_CHUNKS):
            return cut
    cut = calibrate(store)
    if cut is not None and save:
        try:
            store.set_offtopic_record(cut.to_json())
        except RagbrainError as exc:  # a read-only or unreachable store: use it unsaved
            log.warning("The off-topic cut was not recorded in the store: %s", exc)
    return cut


def refusal_reason(
    query: str,
    best_distance: float | None,
    cut: OffTopicCut,
    *,
    strict: bool = False,
    support: float | None = None,
    general: float | None = None,
) -> str | None:
    """Why ``query`` is off-topic for the store ``cut`` was learnt on; None when it is not.

    Args:
        query: The question.
        best_distance: Its best cosine distance to the store (None: nothing was found).
        cut: The store's cut.
        strict: Use the strict level's cut.
        support: The question's ``lexical_support`` (None: no lexical search ran); at
            ``cut.support`` or more, a far question is still on topic.
        general: Its cosine distance to the nearest of the bank's general questions (None:
            not measured); a question across scripts that comes closer to one of them than
            to the notes, by more than ``cut.margin``, is off-topic.
    """
    if best_distance is None:
        return "the search found no chunk to judge"
    script = _question_script(query)
    if (
        english_only(cut.model)
        and script not in ("latin", "none")
        and cut.scripts.get(script, 0.0) < RARE_SCRIPT
    ):
        return (
            f"off-topic: the question is written in {script} script, which this store's "
            f"notes do not use and its embedding model ({cut.model}) does not read; a "
            f"multilingual store (ragbrain ingest --embedding {chosen_for('multilingual').choice}) "
            "would"
        )
    limit, across = limit_for(query, cut, strict=strict)
    if support is not None and support >= cut.support:
        return None
    if best_distance <= limit:
        return _closer_to_general(script, best_distance, cut, strict, general) if across else None
    level = "strict cut" if strict else "off-topic cut"
    if across or script in cut.by_script:
        level += f" for a question in {script} script"
    shown = "" if support is None else f", and no chunk holds its rare words ({support:.2f})"
    return (
        f"off-topic: the best distance ({best_distance:.3f}) is above this store's "
        f"{level} ({limit:.3f}, {cut.source}){shown}"
    )


def _closer_to_general(
    script: str, best_distance: float, cut: OffTopicCut, strict: bool, general: float | None
) -> str | None:
    """Why a question across scripts within the cut across scripts is still off-topic: past
    the store-wide cut, it comes closer to a general question than to the notes by more than
    ``cut.margin``; None when it does not (or was not measured)."""
    near = cut.strict if strict else cut.distance
    if general is None or cut.margin is None or best_distance <= near:
        return None
    if best_distance - general <= cut.margin:
        return None
    return (
        f"off-topic: the question (in {script} script) comes closer to a general question "
        f"({general:.3f}) than to any note ({best_distance:.3f}) by more than "
        f"{cut.margin:.3f}, past this store's cut ({near:.3f}, {cut.source})"
    )


@lru_cache(maxsize=8)
def writes_in(query: str, script: str) -> bool:
    """Whether ``query`` (its first ``READ_QUERY_CHARS``) has a letter in ``script`` (one of
    ``script_of``'s names other than ``latin``): a Japanese question that names its tools in
    Latin letters is mostly Latin by ``script_of``, and still written in Japanese."""
    return any(
        char.isalpha() and not char.isascii() and _letter_script(char) == script
        for char in set(read_part(query))
    )


def crosses(script: str, cut: OffTopicCut) -> bool:
    """Whether a question in ``script`` is asked across scripts on the store ``cut`` was
    learnt on (its notes hardly use that script)."""
    return script not in ("none", "other") and cut.scripts.get(script, 0.0) < RARE_SCRIPT


def limit_for(query: str, cut: OffTopicCut, *, strict: bool = False) -> tuple[float, bool]:
    """The distance above which ``query`` is off-topic on ``cut``'s store, and whether it is
    the cut across scripts (``OffTopicCut.across``: the same at both levels, since across
    scripts the distance cannot tell a missing answer from a present one)."""
    limit = cut.strict if strict else cut.distance
    script = _question_script(query)
    own = cut.by_script.get(script)
    if own is not None:
        scale = cut.strict / cut.distance if strict and cut.distance > 0 else 1.0
        return round(own * scale, 4), False
    if cut.across is None or not crosses(script, cut):
        return limit, False
    return round(max(cut.across, limit), 4), True


def general_distance(store: Store) -> Callable[[str], float]:
    """A question's cosine distance to the nearest of the bank's general questions (their
    vectors cached per model, the question's from the store's query cache)."""
    import numpy as np

    vectors = np.asarray(query_vectors(store.embeddings, bank(), store.model), dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def distance(query: str) -> float:
        asked = np.asarray(store.embed_query(query), dtype=np.float32)
        asked /= max(float(np.linalg.norm(asked)), 1e-12)
        return max(0.0, 1.0 - float((vectors @ asked).max()))

    return distance


def refresh_cut(store: Store) -> OffTopicCut | None:
    """Learn ``store``'s cut again and record it (ingest runs this after every change)."""
    cut = calibrate(store)
    if cut is not None:
        store.set_offtopic_record(cut.to_json())
    return cut
