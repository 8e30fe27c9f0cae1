"""A store's settings, decided once: the store, its model's profile and its statistics turned
into one frozen value (``StoreSettings``) that the graph's nodes read.

Every per-store decision is made here and nowhere else:

- the gate threshold (``ragbrain.gates``: the store's calibration, its model's shipped one,
  or the default);
- the off-topic cut (``ragbrain.refusal.offtopic``: learnt on the store) and, for a question
  asked across scripts, the distance to the bank's general questions;
- the critic, bound to the store (the evidence critic on stores of the model its layer
  learned, the cross-encoder on the others; the strict cuts fit on notes for a store of notes);
- the hand-over rule (``ragbrain.critic.handover``) for that critic on that store;
- on a store of notes whose model and script the evidence critic was fit for (Japanese and
  Chinese notes on multilingual-e5-small), the critic and hand-over rule for a question in
  the notes' script (``ScriptCritic``; ``StoreSettings.judging`` picks per question);
- the hybrid fusion's BM25 power and the query languages whose dense ranking counts
  (``ragbrain.hybrid``).

``resolve`` makes the value; ``Resolution`` holds it for a compiled graph and resolves again
when the store changes in a way that matters (another model, after another process
re-embedded it; a change in size past ``STALE_CHANGE``), so the critic, the cuts and the
fusion follow the store. A new per-store setting is a field of ``StoreSettings``, decided in
``resolve`` (docs/architecture.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ragbrain.context import DEFAULT_GATE_THRESHOLD
from ragbrain.critic.choice import ShippedCritic
from ragbrain.critic.evidence import EvidenceCritic
from ragbrain.critic.handover import HandOverRule, rule_for
from ragbrain.critic.model import TransformerCritic
from ragbrain.hybrid import bm25_power
from ragbrain.models.embeddings import model_name_of
from ragbrain.models.profiles import ModelProfile, profile
from ragbrain.refusal.offtopic import (
    MIN_CHUNKS,
    STALE_CHANGE,
    OffTopicCut,
    general_distance,
    store_cut,
    writes_in,
)

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain.critic.base import Critic
    from ragbrain.store import Store
    from ragbrain.store.lexical import LexicalSearcher

OffTopicChoice = OffTopicCut | Literal["store"] | None
HandOverChoice = HandOverRule | Literal["shipped"] | None


@dataclass(frozen=True)
class ModelSettings:
    """What an embedding model decides on its own, before any store (its profile's values).

    Attributes:
        name: The name a store records (``ragbrain.models.embeddings.model_name_of``).
        profile: Its shipped profile; None for a model without one.
        gate: The gate threshold shipped for it, else ``DEFAULT_GATE_THRESHOLD``.
        gate_source: Where ``gate`` comes from, for the trace.
        bm25_power: The power of BM25's share in the hybrid fusion.
        reads: The query languages its dense ranking counts for; None: every language.
    """

    name: str
    profile: ModelProfile | None
    gate: float
    gate_source: str
    bm25_power: float
    reads: tuple[str, ...] | None

    @property
    def english_only(self) -> bool:
        """It reads English (and text without letters) only."""
        return self.profile is not None and self.profile.english_only


def model_settings(model: str) -> ModelSettings:
    """The settings of the model a store records as ``model``."""
    found = profile(model)
    gate, source = DEFAULT_GATE_THRESHOLD, "default"
    if found is not None:
        gate, source = found.gate.threshold, f"shipped for {model}"
    reads = found.reads if found is not None else None
    return ModelSettings(model, found, gate, source, bm25_power(model), reads)


def resolve_model(embeddings: Embeddings) -> ModelSettings:
    """The settings of the model behind ``embeddings`` (for code that has no store yet:
    evaluation, training, checks)."""
    return model_settings(model_name_of(embeddings))


@dataclass(frozen=True)
class ScriptCritic:
    """The critic and hand-over rule for questions written in the script of the store's notes
    (``ShippedCritic.for_script``), where the store's critic judges the others.

    Attributes:
        script: The notes' script (``ragbrain.refusal.offtopic.script_of``'s name: ``cjk``).
        critic: The critic, bound to the store.
        handover: Its hand-over rule; None hands over every kept chunk.
    """

    script: str
    critic: Critic
    handover: HandOverRule | None


def critic_name(critic: Critic | None, off_reason: str = "") -> str:
    """A critic in a few words."""
    if critic is None:
        return f"off ({off_reason})"
    kind = getattr(critic, "kind", None) or type(critic).__name__
    scale = getattr(critic, "distance_scale", 1.0)  # the evidence critic on another model's
    scaled = f", distances x{scale:.2f}" if scale != 1.0 else ""
    return f"{kind} (threshold {critic.threshold:.3f}{scaled})"


@dataclass(frozen=True)
class StoreSettings:
    """Every per-store decision the graph reads, made once by ``resolve``.

    Attributes:
        model: The store's model and what it decides on its own.
        chunks: The store's size when it was resolved.
        gate: The gate threshold when the run's context sets none.
        gate_source: Where ``gate`` comes from ("calibrated for this store", "shipped for
            ...", "default").
        offtopic: The off-topic cut; None refuses nothing by topic.
        critic: The critic bound to the store; None keeps every chunk.
        critic_off_reason: What the trace says when ``critic`` is None.
        handover: The hand-over rule; None hands over every kept chunk.
        general: A question's distance to the nearest of the bank's general questions, for
            the cut across scripts; None when the cut has none.
        notes_script: The critic and hand-over rule for a question in the notes' script, where
            ``critic`` and ``handover`` judge the others; None: those judge every question.
    """

    model: ModelSettings
    chunks: int
    gate: float
    gate_source: str
    offtopic: OffTopicCut | None
    critic: Critic | None
    critic_off_reason: str
    handover: HandOverRule | None
    general: Callable[[str], float] | None = field(default=None, repr=False, compare=False)
    notes_script: ScriptCritic | None = None

    @property
    def bm25_power(self) -> float:
        """The power of BM25's share in the hybrid fusion (the model's)."""
        return self.model.bm25_power

    @property
    def reads(self) -> tuple[str, ...] | None:
        """The query languages whose dense ranking counts in the fusion (the model's)."""
        return self.model.reads

    def judging(self, query: str) -> tuple[Critic | None, HandOverRule | None, str]:
        """The critic and hand-over rule that judge ``query``: ``notes_script``'s when the store
        has one and ``query`` is written in the notes' script (has letters of it:
        ``ragbrain.refusal.offtopic.writes_in``), else the store's; and the trace's word on
        the choice ("" when the store has a single critic)."""
        own = self.notes_script
        if own is None:
            return self.critic, self.handover, ""
        if writes_in(query, own.script):
            return own.critic, own.handover, f"a question in the notes' script ({own.script})"
        return self.critic, self.handover, f"a question not in the notes' script ({own.script})"

    def for_critic_filter(
        self, query: str
    ) -> tuple[
        Critic | None,
        str,
        OffTopicCut | None,
        HandOverRule | None,
        Callable[[str], float] | None,
        str,
    ]:
        """What ``critic_filter`` reads for ``query``: the critic, why it is off, the off-topic
        cut, the hand-over rule, the distance to the bank's general questions and the word on
        the critic's choice (``judging``)."""
        critic, handover, chosen = self.judging(query)
        return critic, self.critic_off_reason, self.offtopic, handover, self.general, chosen

    def critic_name(self) -> str:
        """The store's critic in a few words."""
        return critic_name(self.critic, self.critic_off_reason)

    def summary(self) -> dict[str, Any]:
        """The value in plain JSON values, as the trace and LangGraph Studio show it."""
        cut, own = self.offtopic, self.notes_script
        return {
            "model": self.model.name,
            "chunks": self.chunks,
            "gate": round(self.gate, 4),
            "gate_source": self.gate_source,
            "offtopic_cut": None if cut is None else cut.distance,
            "strict_cut": None if cut is None else cut.strict,
            "offtopic_source": None if cut is None else cut.source,
            "critic": self.critic_name(),
            "handover": None if self.handover is None else self.handover.source,
            "notes_script": None if own is None else own.script,
            "notes_script_critic": None if own is None else critic_name(own.critic),
            "notes_script_handover": None
            if own is None or own.handover is None
            else own.handover.source,
            "bm25_power": self.bm25_power,
            "dense_reads": "every language" if self.reads is None else list(self.reads),
        }

    def describe(self) -> str:
        """The value in one line (``describe_summary``)."""
        return describe_summary(self.summary())


def describe_summary(summary: dict[str, Any]) -> str:
    """A store's settings (``StoreSettings.summary``, as a run's output holds them) in one
    line, as the CLI's trace prints them."""
    cut, strict = summary.get("offtopic_cut"), summary.get("strict_cut")
    offtopic = "none" if cut is None else f"{cut:.3f} (strict {strict:.3f})"
    reads = summary.get("dense_reads")
    reads = ", ".join(reads) if isinstance(reads, list) else reads
    critic = (
        f"critic {summary.get('critic')}; hand-over {summary.get('handover') or 'every kept chunk'}"
    )
    script = summary.get("notes_script")
    if script is not None:
        critic = (
            f"questions in the notes' script ({script}): critic "
            f"{summary.get('notes_script_critic')}, hand-over "
            f"{summary.get('notes_script_handover') or 'every kept chunk'}; in other scripts: "
            + critic
        )
    return (
        f"store settings: model {summary.get('model')}, {summary.get('chunks')} chunks; gate "
        f"{summary.get('gate', 0.0):.3f} ({summary.get('gate_source')}); off-topic cut "
        f"{offtopic}; {critic}; BM25 power {summary.get('bm25_power')}; dense ranking counts "
        f"for {reads}"
    )


def bind_critic(critic: Critic, store: Store, lexical: LexicalSearcher | None = None) -> Critic:
    """The critic as a graph over ``store`` uses it: a critic with a ``for_store(store,
    lexical)`` method bound with it (the shipped choice, ``ShippedCritic``, picks the one for
    the store's model; an ``EvidenceCritic`` reads ``lexical``, the store's lexical index), a
    ``TransformerCritic`` bound to the store's embedding model (``for_model``: its distance
    layer when it learned that model's distances); any other critic as it is."""
    for_store = getattr(critic, "for_store", None)
    if callable(for_store):
        bound: Critic = for_store(store, lexical)
        return bound
    if isinstance(critic, TransformerCritic):
        return critic.for_model(store.embedding_model)
    return critic


def store_gate(store: Store, model: ModelSettings | None = None) -> tuple[float, str]:
    """The gate threshold for runs over ``store`` whose context sets none, and its origin:
    the one ``ragbrain calibrate`` recorded in the store, else its model's (``model``, else
    the store's)."""
    calibrated = store.gate_threshold()  # in memory with the collection: no store call
    if calibrated is not None:
        return calibrated, "calibrated for this store"
    model = model if model is not None else model_settings(store.model)
    return model.gate, model.gate_source


def resolve(
    store: Store,
    critic: Critic | None,
    *,
    critic_off_reason: str = "no critic configured",
    lexical: LexicalSearcher | None = None,
    offtopic: OffTopicChoice = "store",
    handover: HandOverChoice = "shipped",
) -> StoreSettings:
    """Turn ``store`` into its settings.

    Args:
        store: The opened store.
        critic: The critic chosen for it (unbound; None: off).
        critic_off_reason: Why the critic is off.
        lexical: The store's lexical index, which the evidence critic reads.
        offtopic: ``"store"``: the cut the store learnt (learnt now if missing or stale); a
            cut; None: no refusal by topic.
        handover: ``"shipped"``: the rule fit for the bound critic's kind; a rule; None.
    """
    model = model_settings(store.model)
    gate, gate_source = store_gate(store, model)
    cut = store_cut(store) if offtopic == "store" else offtopic
    per_source = cut.per_source if cut is not None and cut.per_source > 0 else None
    bound = bind_critic(critic, store, lexical) if critic is not None else None
    if isinstance(bound, EvidenceCritic):  # a store of notes takes the cuts fit on notes
        bound = bound.for_notes(per_source)
    rule = handover if isinstance(handover, HandOverRule) else None
    if handover == "shipped" and bound is not None:
        rule = rule_for(bound, per_source)
    notes_script = None
    found = None
    if isinstance(critic, ShippedCritic) and cut is not None:
        found = critic.for_script(store, cut.scripts, per_source, lexical)
    if found is not None:
        script, own = found
        own_rule = handover if isinstance(handover, HandOverRule) else None
        if handover == "shipped":
            own_rule = rule_for(own, per_source, model.name)
        notes_script = ScriptCritic(script, own, own_rule)
    general = None
    if cut is not None and cut.across is not None and cut.margin is not None:
        general = general_distance(store)
    return StoreSettings(
        model=model,
        chunks=store.count(),
        gate=gate,
        gate_source=gate_source,
        offtopic=cut,
        critic=bound,
        critic_off_reason=critic_off_reason,
        handover=rule,
        general=general,
        notes_script=notes_script,
    )


class Resolution:
    """The settings a compiled graph reads, resolved again when the store changes in a way
    that matters: another embedding model (another process re-embedded it, and the store
    followed), or a size that moved by more than ``STALE_CHANGE`` since (a store that grew
    from a few notes to many learns its cut and its critic's cuts again). Any other write
    keeps the value: asking costs a comparison, and a count after a write only. The first
    ``current()`` resolves (``ragbrain.graph.store_resolution`` asks at once)."""

    def __init__(self, store: Store, resolver: Callable[[], StoreSettings]) -> None:
        self._store = store
        self._resolver = resolver
        self._lock = threading.Lock()
        self._value: StoreSettings | None = None
        self._embeddings: object = None
        self._generation: str | None = None

    def current(self) -> StoreSettings:
        """The settings as of now (resolved again if the store changed as said above)."""
        store = self._store
        store.follow()  # another process's write, seen before the run's first search
        generation = store.ledger().generation
        value = self._value
        unchanged = store.embeddings is self._embeddings and generation == self._generation
        if value is not None and unchanged:
            return value
        with self._lock:
            value = self._value
            if value is None or store.embeddings is not self._embeddings or self._moved(value):
                self._embeddings = store.embeddings  # before: a switch while resolving is seen
                value = self._value = self._resolver()
            self._generation = generation
            return value

    def _moved(self, value: StoreSettings) -> bool:
        chunks = value.chunks
        return abs(self._store.count() - chunks) > STALE_CHANGE * max(chunks, MIN_CHUNKS)
