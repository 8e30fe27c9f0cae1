"""Building a ready graph from a store folder: embeddings, store, critic, in one call."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ragbrain.critic import Critic, TransformerCritic, default_critic_path
from ragbrain.errors import CriticLoadError, StoreNotFoundError
from ragbrain.graph import build_graph
from ragbrain.paths import cache_root, default_store_path, sample_notes
from ragbrain.store import Store
from ragbrain.store.resilience import StorePolicy

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain.graph import Graph

log = logging.getLogger(__name__)

CriticChoice = Critic | str | Path | None
OnCriticError = Literal["raise", "disable"]


def resolve_critic(
    choice: CriticChoice, on_error: OnCriticError = "raise"
) -> tuple[Critic | None, str]:
    """Turn a critic choice into a critic (or None) and the reason the trace gives when off.

    ``"default"`` is the critic that ships with the package; a path loads a critic folder;
    ``None`` turns the critic off. ``on_error="disable"`` runs without a critic (logged once,
    marked in the trace) instead of raising ``CriticLoadError``.
    """
    if choice is None:
        return None, "disabled by the caller"
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


def open_graph(
    path: str | Path | None = None,
    *,
    embeddings: Embeddings | None = None,
    critic: CriticChoice = "default",
    on_critic_error: OnCriticError = "raise",
    convert_space: bool = False,
    server: str | None = None,
    policy: StorePolicy | None = None,
) -> Graph:
    """Open the store in ``path`` (or on ``server``, ``http://HOST:PORT``) and compile the
    graph over it with the chosen critic; ``policy`` sets the store calls' deadline and retries.
    The store's lexical index (for hybrid search) is opened beside it, rebuilt if stale.
    ``embeddings`` None embeds queries with the model the store records (``embeddings_for``).

    Raises:
        StoreNotFoundError, StoreMismatchError, StoreUnavailableError, CriticLoadError.
    """
    return open_store_and_graph(
        path,
        embeddings=embeddings,
        critic=critic,
        on_critic_error=on_critic_error,
        convert_space=convert_space,
        server=server,
        policy=policy,
    )[1]


def open_store_and_graph(
    path: str | Path | None = None,
    *,
    embeddings: Embeddings | None = None,
    critic: CriticChoice = "default",
    on_critic_error: OnCriticError = "raise",
    convert_space: bool = False,
    server: str | None = None,
    policy: StorePolicy | None = None,
) -> tuple[Store, Graph]:
    """``open_graph``, also returning the opened store (for what the graph does not say,
    such as the store's list of note types).

    Raises:
        StoreNotFoundError, StoreMismatchError, StoreUnavailableError, CriticLoadError.
    """
    store = Store.open(path, embeddings, convert_space=convert_space, server=server, policy=policy)
    chosen, off_reason = resolve_critic(critic, on_critic_error)
    from ragbrain.lexical.sync import LexicalSearcher

    # The lexical index is checked against the store and brought in step if it lags.
    lexical = LexicalSearcher(store)
    return store, build_graph(store, chosen, critic_off_reason=off_reason, lexical=lexical)


def default_graph() -> Graph:
    """The graph over the default store, for LangGraph Studio.

    With no store at the default location, it serves a store of the bundled sample notes
    (built once in the cache folder) so that Studio has something to show.
    """
    try:
        return open_graph(None)
    except StoreNotFoundError:
        from ragbrain.ingest import ingest
        from ragbrain.models.embeddings import default_embeddings

        folder = cache_root() / "sample-store"
        log.warning(
            "No store at %s; serving the sample notes from %s.", default_store_path(), folder
        )
        ingest(sample_notes(), Store.open(folder, default_embeddings(), create=True))
        return open_graph(folder)
