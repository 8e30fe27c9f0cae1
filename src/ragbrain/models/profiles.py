"""What the rest of the package asks about an embedding model, one data file per model.

Each ``profiles/<model>.json`` holds one model's facts: the name a store records and the
``--embedding`` choice that picks it, the query languages it reads, its shipped gate, its
off-topic levels, cut and rescue, its BM25 power in the fusion, how its chunks are counted and
the encoder a critic cut for it starts from. The steps that fit a value write it here
(``write_profile``); the modules that use one read it with ``profile``. Adding a model: its
back-end in ``ragbrain.models.embeddings`` if it needs one, a profile file, a test.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from ragbrain._util import write_bytes
from ragbrain.errors import InvalidInputError

FOLDER = Path(__file__).with_name("profiles")


@dataclass(frozen=True)
class ShippedGate:
    """A gate threshold calibrated for one embedding model, and how to reproduce it."""

    threshold: float
    auc: float
    data: str
    command: str


@dataclass(frozen=True)
class AcrossScripts:
    """A multilingual model's cut for a question written in a script its store's notes do not
    use (``ragbrain.refusal.offtopic``): such a question finds its note only from farther away.

    Attributes:
        level: The quantile of the general questions in other scripts that becomes the cut.
        margin: A question past the store-wide cut that comes closer to a general question than
            to the notes by more than this is off-topic; None: no such test.
        cut: The cut across scripts of a store too small to calibrate.
        by: The command that fits them (and writes them here).
    """

    level: float
    margin: float | None
    cut: float
    by: str


@dataclass(frozen=True)
class OffTopicLevels:
    """A model's off-topic refusal values (``ragbrain.refusal.offtopic``).

    Attributes:
        level: The quantile of the general questions' best distances that becomes a store's cut.
        strict_scale: The strict level's cut as a share of it.
        cut: The cut of a store too small to calibrate.
        support: The lexical support that rescues a far question.
        by: The command that fits them (and writes them here).
        prose_level: The quantile a store whose chunks read as prose uses instead of
            ``level`` (fit on notes folders: ``python -m benchmarks.notes --ship``); None:
            ``level`` for every store.
        across: The cut for questions in a script the notes do not use (multilingual models);
            None: the store-wide cut for every question.
        notes_cap: The most a store of notes' cut may be (a store of prose whose notes span
            several chunks: ``ragbrain.refusal.offtopic.NOTES_SPAN``), fit on notes folders'
            answerable questions (``python -m benchmarks.notes --ship``); None: no cap.
    """

    level: float
    strict_scale: float
    cut: float
    support: float
    by: str
    prose_level: float | None = None
    across: AcrossScripts | None = None
    notes_cap: float | None = None

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> OffTopicLevels:
        """The values from a profile's ``offtopic`` entry.

        Raises:
            ValueError: A quantile out of [0, 1] or a cut out of (0, 2].
        """
        fields = dict(raw)
        across = fields.pop("across", None)
        levels = cls(**fields, across=None if across is None else AcrossScripts(**across))
        quantiles = [levels.level, levels.strict_scale]
        quantiles += [levels.prose_level] if levels.prose_level is not None else []
        cuts = [levels.cut] + ([levels.notes_cap] if levels.notes_cap is not None else [])
        if levels.across is not None:
            quantiles.append(levels.across.level)
            cuts.append(levels.across.cut)
        if not all(0.0 <= q <= 1.0 for q in quantiles) or not all(0.0 < c <= 2.0 for c in cuts):
            raise ValueError(f"a quantile or cut out of range in {raw}")
        return levels


@dataclass(frozen=True)
class ModelProfile:
    """One embedding model's facts (``profiles/<model>.json``).

    Attributes:
        name: The name a store records (``ragbrain.models.embeddings.model_name_of``).
        choice: The ``--embedding`` choice that picks it.
        default: Whether a new store gets it when nothing says otherwise.
        chosen_for: The notes a new store gets it for (``ragbrain.ingest.model_choice``).
        reads: The query languages it reads (``ragbrain.lexical.tokens.script_counts``
            names); None: every language.
        gate: Its shipped gate threshold (``ragbrain.gates``).
        offtopic: Its off-topic levels, cut and rescue.
        bm25_power: The power of BM25's share in the hybrid fusion (``ragbrain.hybrid``).
        own_tokenizer_chunks: Chunks are counted in the loaded model's own tokens (else in
            the default model's: ``ragbrain.ingest.chunks``).
        critic_base: The encoder a cross-encoder critic for its stores is cut from
            (``ragbrain.critic.folder``).
    """

    name: str
    choice: str
    default: bool
    chosen_for: Literal["english", "multilingual"]
    reads: tuple[str, ...] | None
    gate: ShippedGate
    offtopic: OffTopicLevels
    bm25_power: float
    own_tokenizer_chunks: bool
    critic_base: str

    @property
    def english_only(self) -> bool:
        """It reads English (and text without letters) only."""
        return self.reads is not None and set(self.reads) <= {"en", "none"}

    def to_json(self) -> str:
        """The profile as its data file holds it."""
        raw = asdict(self)
        raw["reads"] = list(self.reads) if self.reads is not None else None
        return json.dumps(raw, indent=2, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> ModelProfile:
        """A profile from its data file's contents.

        Raises:
            InvalidInputError: A key is missing or of the wrong kind.
        """
        try:
            reads = raw["reads"]
            chosen_for = raw["chosen_for"]
            if chosen_for not in ("english", "multilingual"):
                raise ValueError(f"chosen_for {chosen_for!r}")
            return cls(
                name=str(raw["name"]),
                choice=str(raw["choice"]),
                default=bool(raw["default"]),
                chosen_for=chosen_for,
                reads=None if reads is None else tuple(str(r) for r in reads),
                gate=ShippedGate(**raw["gate"]),
                offtopic=OffTopicLevels.from_json(raw["offtopic"]),
                bm25_power=float(raw["bm25_power"]),
                own_tokenizer_chunks=bool(raw["own_tokenizer_chunks"]),
                critic_base=str(raw["critic_base"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInputError(f"The model profile {where} is malformed: {exc}") from None


def profile_path(name: str) -> Path:
    """The data file of the model ``name`` (its name in lower case)."""
    return FOLDER / f"{name.lower()}.json"


@cache
def profiles() -> tuple[ModelProfile, ...]:
    """Every model's profile, the default model's first, then by name."""
    found = [
        ModelProfile.from_json(json.loads(path.read_text(encoding="utf-8")), path.name)
        for path in sorted(FOLDER.glob("*.json"))
    ]
    return tuple(sorted(found, key=lambda p: (not p.default, p.name)))


def profile(model: str) -> ModelProfile | None:
    """The profile of the model a store records as ``model``; None for a model without one."""
    return next((p for p in profiles() if p.name == model), None)


def default_profile() -> ModelProfile:
    """The profile of the model a new store gets when nothing says otherwise."""
    return next(p for p in profiles() if p.default)


def chosen_for(notes: Literal["english", "multilingual"]) -> ModelProfile:
    """The profile of the model a new store of such notes gets."""
    return next(p for p in profiles() if p.chosen_for == notes)


def write_profile(updated: ModelProfile) -> Path:
    """Write ``updated`` over its model's data file (whole, or not at all); the fitting steps'
    ``--ship`` calls this."""
    path = profile_path(updated.name)
    write_bytes(path, updated.to_json().encode("utf-8"))
    profiles.cache_clear()
    return path
