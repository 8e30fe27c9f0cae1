"""Building a ready graph from a store folder: embeddings, store, critic, in one call."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.checks import (
    check_critic_choice,
    check_embeddings,
    check_flag,
    check_location,
    check_one_of,
    check_policy,
    describe,
)
from ragbrain.critic.choice import (
    ON_CRITIC_ERROR,
    CriticChoice,
    OnCriticError,
    ready_for,
    resolve_critic,
)
from ragbrain.errors import StoreNotFoundError, WrongTypeError
from ragbrain.graph import build_graph
from ragbrain.paths import cache_root, default_store_path, sample_notes
from ragbrain.store import Store
from ragbrain.store.resilience import StorePolicy

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain.graph import Graph

log = logging.getLogger(__name__)

__all__ = [
    "CriticChoice",
    "OnCriticError",
    "default_graph",
    "open_graph",
    "open_store_and_graph",
    "resolve_critic",
]


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
    check_model: bool = True,
) -> tuple[Store, Graph]:
    """``open_graph``, also returning the opened store (for what the graph does not say,
    such as the store's list of note types). With ``embeddings`` given and ``check_model``,
    a few stored chunks are embedded again and compared with their stored vectors
    (``check_store_model``).

    Raises:
        StoreNotFoundError, StoreMismatchError, WrongModelError, StoreUnavailableError,
        CriticLoadError.
    """
    where = "open_graph"
    check_location(path, where)
    check_embeddings(embeddings, where)
    check_critic_choice(critic, where)
    check_one_of(on_critic_error, ON_CRITIC_ERROR, "on_critic_error", where)
    check_flag(convert_space, "convert_space", where)
    check_policy(policy, where)
    if server is not None and not isinstance(server, str):
        raise WrongTypeError(
            f"{where}: server must be a URL, http://HOST:PORT; got {describe(server)}."
        )
    store = Store.open(path, embeddings, convert_space=convert_space, server=server, policy=policy)
    if embeddings is not None and check_model:
        check_store_model(store)
    chosen, off_reason = ready_for(*resolve_critic(critic, on_critic_error), store, on_critic_error)
    from ragbrain.lexical.sync import LexicalSearcher

    # The lexical index is checked against the store and brought in step if it lags.
    lexical = LexicalSearcher(store)
    return store, build_graph(store, chosen, critic_off_reason=off_reason, lexical=lexical)


#: Stored chunks read for the model check, of which the shortest few are embedded again.
MODEL_CHECK_READ = 20


def check_store_model(store: Store) -> float | None:
    """Refuse a query model that did not make the store's vectors: the shortest of
    ``MODEL_CHECK_READ`` stored chunks embedded again (``ragbrain.models.agreement``).

    Returns:
        The median cosine found; None for a store without chunks to check.

    Raises:
        WrongModelError: Naming the query model and the one the store records.
    """
    from ragbrain.models.agreement import check_model
    from ragbrain.models.embeddings import model_name_of
    from ragbrain.store.keys import MODEL_KEY

    got = store.call(
        "Reading chunks for the model check",
        lambda: store.collection.get(limit=MODEL_CHECK_READ, include=["documents", "embeddings"]),
    )
    vectors = got.get("embeddings")
    if not got["ids"] or vectors is None:
        return None
    recorded = (store.collection.metadata or {}).get(MODEL_KEY)
    documents = got.get("documents")
    texts: list[str | None] = list(documents) if documents else [None for _ in got["ids"]]
    return check_model(
        store.embeddings,
        texts,
        [list(map(float, v)) for v in vectors],
        model=model_name_of(store.embeddings),
        stored_model=recorded if isinstance(recorded, str) else None,
        where=f"The store at {store.location}",
        override="check_model=False",
    )


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
