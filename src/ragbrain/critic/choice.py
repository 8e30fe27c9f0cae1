"""What ``critic=`` accepts, turned into a critic (or None) and the reason the trace gives when
it is off: ``"default"`` (``ShippedCritic``: picked per store), a critic folder, a critic
object, or None."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

from ragbrain.checks import check_critic_choice, check_one_of
from ragbrain.critic.base import Critic
from ragbrain.critic.evidence import EvidenceCritic, default_evidence_path
from ragbrain.critic.folder import default_critic_path
from ragbrain.critic.model import TransformerCritic
from ragbrain.errors import CriticLoadError

if TYPE_CHECKING:
    from ragbrain.store import Store
    from ragbrain.store.lexical import LexicalSearcher

log = logging.getLogger(__name__)

CriticChoice = Critic | str | Path | None
OnCriticError = Literal["raise", "disable"]
ON_CRITIC_ERROR: tuple[OnCriticError, ...] = ("raise", "disable")


class ShippedCritic:
    """The critic the package ships, picked for each store when a graph binds it
    (``for_store``): the evidence critic (``ragbrain.critic.evidence``: no encoder, no torch)
    on stores of the embedding model its layer learned (``critic/evidence.json`` names it),
    where the cross-encoder adds nothing measurable on domains it never saw; the cross-encoder
    (``TransformerCritic`` from ``default_critic_path()``) on the others. On a store of notes
    of another model for which the evidence critic was fit on notes, questions in the notes'
    own script get it as well (``for_script``). Nothing loads until then, so choosing it costs
    nothing. Used unbound (``score`` without a store), it is the cross-encoder.
    """

    def __init__(self, folder: Path | None = None, evidence: Path | None = None) -> None:
        """Check the shipped files that are cheap to read (the cross-encoder's calibration
        and the evidence layer); the cross-encoder's weights load when a store needs them.

        Raises:
            CriticLoadError: A shipped file is missing or malformed.
        """
        from ragbrain.critic.folder import read_calibration

        self.folder = folder or default_critic_path()
        self.evidence_path = evidence or default_evidence_path()
        self._lock = threading.Lock()
        self._transformer: TransformerCritic | None = None
        self._evidence: EvidenceCritic | None = None
        if not self.folder.is_dir():
            raise CriticLoadError(f"{self.folder}: no such critic folder.")
        #: The cross-encoder's threshold without a distance layer (what ``score`` uses).
        self.threshold = float(read_calibration(self.folder)["threshold"])
        self.evidence()

    def transformer(self) -> TransformerCritic:
        """The cross-encoder (loaded on first use, once).

        Raises:
            CriticLoadError: Its folder cannot be loaded.
        """
        with self._lock:
            if self._transformer is None:
                self._transformer = TransformerCritic(self.folder)
            return self._transformer

    def evidence(self) -> EvidenceCritic | None:
        """The evidence critic, unbound; None when the package has no layer for it.

        Raises:
            CriticLoadError: The layer file is there but malformed.
        """
        with self._lock:
            if self._evidence is None and self.evidence_path.is_file():
                self._evidence = EvidenceCritic(self.evidence_path)
            return self._evidence

    def critic_for(self, embedding_model: str | None) -> TransformerCritic | EvidenceCritic:
        """The critic a store of ``embedding_model`` gets, loaded (not bound to a store)."""
        evidence = self.evidence()
        if evidence is not None and embedding_model == evidence.embedding_model:
            return evidence
        return self.transformer().for_model(embedding_model)

    def for_store(self, store: Store, lexical: LexicalSearcher | None = None) -> Critic:
        """The critic for ``store``, bound to it (``critic_for``; the evidence critic reads
        ``lexical``, the store's lexical index)."""
        critic = self.critic_for(store.embedding_model)
        if isinstance(critic, EvidenceCritic):
            return critic.for_store(store, lexical)
        return critic

    def for_script(
        self,
        store: Store,
        scripts: Mapping[str, float],
        per_source: float | None,
        lexical: LexicalSearcher | None = None,
    ) -> tuple[str, EvidenceCritic] | None:
        """The critic for questions written in the script of ``store``'s notes, where
        ``for_store`` gives the cross-encoder, and that script: the evidence critic, bound to
        the store, reading its distances scaled onto the layer's model's (``for_model``) with
        the strict cuts fit on such notes (``for_notes``), on a store of notes (``per_source``
        chunks a note, at least the rule's) of a model for which a hand-over rule was fit on
        notes in that script (``evidence@<model>`` in ``handover.json``, its ``scripts``:
        Japanese, Thai and Chinese notes on multilingual-e5-small). The script is the rule's
        script most of the chunks use (``scripts``: each script's share of the chunks; code
        and English make a Latin share of their own). None elsewhere. A question in another
        script keeps the cross-encoder, which reads a pair across languages
        (docs/decisions/e5-notes-script-critic.md)."""
        from ragbrain.critic.handover import shipped_rules
        from ragbrain.refusal.offtopic import RARE_SCRIPT

        evidence, model = self.evidence(), store.embedding_model
        if evidence is None or model is None or model == evidence.embedding_model:
            return None
        rule = shipped_rules().get(f"{evidence.kind}@{model}")
        if rule is None or per_source is None or per_source < rule.min_per_source:
            return None
        written = [s for s in rule.scripts if scripts.get(s, 0.0) >= RARE_SCRIPT]
        if not written:
            return None
        script = max(written, key=lambda s: scripts[s])
        bound = evidence.for_store(store, lexical).for_model(model).for_notes(per_source, model)
        return script, bound

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        """The cross-encoder's scores (unbound; a graph judges with ``for_store``'s critic)."""
        return self.transformer().score(query, passages, distances)


def resolve_critic(
    choice: CriticChoice, on_error: OnCriticError = "raise"
) -> tuple[Critic | None, str]:
    """Turn a critic choice into a critic (or None) and the reason the trace gives when off.

    ``"default"`` is the critic that ships with the package (``ShippedCritic``: which one a
    store gets is decided when a graph binds it); a path loads a critic folder;
    ``None`` turns the critic off. ``on_error="disable"`` runs without a critic (logged once,
    marked in the trace) instead of raising ``CriticLoadError``.

    Raises:
        WrongTypeError: ``choice`` or ``on_error`` is of a kind ``critic=`` does not take.
        CriticLoadError: The folder cannot be loaded and ``on_error`` is ``"raise"``.
    """
    check_critic_choice(choice, "critic")
    check_one_of(on_error, ON_CRITIC_ERROR, "on_critic_error", "critic")
    if choice is None:
        return None, "disabled by the caller"
    if isinstance(choice, os.PathLike):
        choice = Path(choice)
    if not isinstance(choice, str | Path):
        return choice, ""
    if choice == "default" and not default_critic_path().is_dir():
        return None, "no trained default critic is installed"
    try:
        return (ShippedCritic() if choice == "default" else TransformerCritic(Path(choice))), ""
    except CriticLoadError as exc:
        if on_error == "raise":
            raise
        log.warning("Running with the critic off: %s", exc)
        return None, f"failed to load ({exc})"


def ready_for(
    critic: Critic | None, off_reason: str, store: Store, on_error: OnCriticError = "raise"
) -> tuple[Critic | None, str]:
    """``critic`` (from ``resolve_critic``) with what ``store`` needs of it loaded: for the
    shipped choice, the critic of the store's model (the cross-encoder's weights on a store
    that uses it), so that ``on_error="disable"`` covers that load too.

    Returns:
        The critic and the reason the trace gives when off (a failed load, with
        ``"disable"``: None and why, logged once).

    Raises:
        CriticLoadError: The load failed and ``on_error`` is ``"raise"``.
    """
    if not isinstance(critic, ShippedCritic):
        return critic, off_reason
    try:
        critic.critic_for(store.embedding_model)
    except CriticLoadError as exc:
        if on_error == "raise":
            raise
        log.warning("Running with the critic off: %s", exc)
        return None, f"failed to load ({exc})"
    return critic, off_reason


def graph_critic(choice: object, off_reason: str) -> tuple[Critic | None, str]:
    """``build_graph``'s ``critic``: a critic object as it is, ``"default"`` or a folder
    loaded (``resolve_critic``, raising on a load failure), None off with ``off_reason``.

    Raises:
        WrongTypeError: ``choice`` is of a kind ``critic=`` does not take.
        CriticLoadError: A folder (or the shipped critic) cannot be loaded.
    """
    check_critic_choice(choice, "build_graph")
    if choice is None:
        return None, off_reason
    if isinstance(choice, str | os.PathLike):
        return resolve_critic(Path(choice) if isinstance(choice, os.PathLike) else choice)
    return cast("Critic", choice), off_reason  # checked: a threshold and a score method
