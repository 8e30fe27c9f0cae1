"""What ``critic=`` accepts, turned into a critic (or None) and the reason the trace gives when
it is off: ``"default"``, a critic folder, a critic object, or None."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Literal, cast

from ragbrain.checks import check_critic_choice, check_one_of
from ragbrain.critic.base import Critic
from ragbrain.critic.folder import default_critic_path
from ragbrain.critic.model import TransformerCritic
from ragbrain.errors import CriticLoadError

log = logging.getLogger(__name__)

CriticChoice = Critic | str | Path | None
OnCriticError = Literal["raise", "disable"]
ON_CRITIC_ERROR: tuple[OnCriticError, ...] = ("raise", "disable")


def resolve_critic(
    choice: CriticChoice, on_error: OnCriticError = "raise"
) -> tuple[Critic | None, str]:
    """Turn a critic choice into a critic (or None) and the reason the trace gives when off.

    ``"default"`` is the critic that ships with the package; a path loads a critic folder;
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
    folder = default_critic_path() if choice == "default" else Path(choice)
    if choice == "default" and not folder.is_dir():
        return None, "no trained default critic is installed"
    try:
        return TransformerCritic(folder), ""
    except CriticLoadError as exc:
        if on_error == "raise":
            raise
        log.warning("Running with the critic off: %s", exc)
        return None, f"failed to load ({exc})"


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
