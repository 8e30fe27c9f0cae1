"""Every way of building the retrieval graph, in one place.

``BuildOptions`` holds what the ways share (embeddings, critic, store policy, model check);
``open_store`` opens a store folder or server and ``open_vectorstore`` wraps a caller's
langchain-chroma store; both hand the opened store to ``assemble``, which gives it its critic,
its lexical index and the graph. ``open_graph``, ``CorrectiveRetriever.from_store`` /
``from_server`` / ``from_vectorstore``, the MCP server and Studio (``default_graph``) all go
through them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain._util import Background
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
from ragbrain.graph import graph_over, store_resolution
from ragbrain.paths import cache_root, default_store_path, sample_notes
from ragbrain.store import Store
from ragbrain.store.connect import StorePolicy

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain.critic.base import Critic
    from ragbrain.graph import Graph
    from ragbrain.settings import Resolution
    from ragbrain.store.lexical import LexicalSearcher

log = logging.getLogger(__name__)

__all__ = [
    "BuildOptions",
    "Built",
    "CriticChoice",
    "OnCriticError",
    "assemble",
    "default_graph",
    "open_graph",
    "open_store",
    "open_store_and_graph",
    "open_vectorstore",
    "resolve_critic",
]


@dataclasses.dataclass(frozen=True)
class BuildOptions:
    """What every way of building the graph takes, whatever the store.

    Attributes:
        embeddings: The model that embeds queries; None is the store's own (the model a
            store folder records, a vector store's embedding function).
        critic: ``"default"``, a critic folder, a ``Critic`` or None (``resolve_critic``).
        on_critic_error: ``"raise"`` a ``CriticLoadError`` or ``"disable"`` the critic.
        policy: Deadline and retries of every store call; None is ``StorePolicy()``.
        check_model: Embed a few stored texts again and refuse a query model that did not
            make the stored vectors (``WrongModelError``); a store folder is checked only
            when ``embeddings`` is given.
    """

    embeddings: Embeddings | None = None
    critic: CriticChoice = "default"
    on_critic_error: OnCriticError = "raise"
    policy: StorePolicy | None = None
    check_model: bool = True


@dataclasses.dataclass(frozen=True)
class Built:
    """An opened store and the graph over it, with the parts the graph was built from.

    Attributes:
        store: The opened store (a ``WrappedStore`` for a caller's vector store).
        graph: The compiled graph.
        lexical: The store's lexical index; None for a collection without stored texts.
        critic: The critic, ready for the store (not bound to it); None when off.
        critic_off_reason: Why the critic is off (what the trace says).
        notes: The trace's lines about the store (a wrapped collection's distances, gate and
            what it lacks).
        live_notes: The same lines as of now (the record count after other processes'
            writes, as the lexical index follows them); None: ``notes`` do not change.
        settings: The store's settings the graph reads (``ragbrain.settings``;
            ``settings.current()`` as of now).
    """

    store: Store
    graph: Graph
    lexical: LexicalSearcher | None
    critic: Critic | None
    critic_off_reason: str
    settings: Resolution
    notes: tuple[str, ...] = ()
    live_notes: Callable[[], list[str]] | None = None


def assemble(
    store: Store, options: BuildOptions, prepare: Callable[[], LexicalSearcher | None]
) -> Built:
    """The graph over an opened ``store``: the critic chosen in ``options``, made ready for the
    store (``ready_for``) in a thread of its own while ``prepare`` readies the store and returns
    its lexical index (on a store that uses the cross-encoder, torch and its weights load
    meanwhile: docs/mcp.md measures the first search), then the graph. A store without a
    lexical index stores no texts (a wrapped collection without them): its critic is off.

    Raises:
        CriticLoadError: The critic cannot be loaded and ``on_critic_error`` is ``"raise"``
            (before any error of ``prepare``, as when the critic loaded first).
    """
    on_error = options.on_critic_error
    loading = Background(
        lambda: ready_for(*resolve_critic(options.critic, on_error), store, on_error),
        name="ragbrain-load-critic",
    )
    try:
        lexical = prepare()
    finally:
        critic, off_reason = loading.result()
    if lexical is None and critic is not None:
        critic, off_reason = None, "the collection stores no texts to judge"
    settings = store_resolution(store, critic, off_reason, lexical=lexical)
    graph = graph_over(store, settings, lexical)
    return Built(store, graph, lexical, critic, off_reason, settings)


def open_store(
    path: str | Path | None,
    options: BuildOptions,
    *,
    convert_space: bool = False,
    server: str | None = None,
    create: bool = False,
) -> Built:
    """The store in ``path`` (or on ``server``; with ``create``, made if missing) and the
    graph over it (``assemble``), its lexical index opened beside it and rebuilt if stale.
    With ``options.embeddings`` given and ``options.check_model``, a few stored chunks are
    embedded again and compared with their stored vectors (``check_store_model``).

    Raises:
        WrongTypeError, StoreNotFoundError, StoreMismatchError, WrongModelError,
        StoreUnavailableError, CriticLoadError.
    """
    where = "open_graph"
    check_location(path, where)
    check_embeddings(options.embeddings, where)
    check_critic_choice(options.critic, where)
    check_one_of(options.on_critic_error, ON_CRITIC_ERROR, "on_critic_error", where)
    check_flag(convert_space, "convert_space", where)
    check_policy(options.policy, where)
    if server is not None and not isinstance(server, str):
        raise WrongTypeError(
            f"{where}: server must be a URL, http://HOST:PORT; got {describe(server)}."
        )
    store = Store.open(
        path,
        options.embeddings,
        create=create,
        convert_space=convert_space,
        server=server,
        policy=options.policy,
    )
    if options.embeddings is not None and options.check_model:
        check_store_model(store)
    from ragbrain.store.lexical import LexicalSearcher

    # The lexical index is checked against the store and brought in step if it lags.
    return assemble(store, options, lambda: LexicalSearcher(store))


def open_vectorstore(
    vectorstore: object,
    options: BuildOptions,
    *,
    type_key: str = "type",
    source_key: str = "source",
    progress: Callable[[int, int], None] | None = None,
    calibrate: bool = True,
) -> Built:
    """A caller's ``langchain_chroma.Chroma`` wrapped as a store (``wrap_chroma``) and the
    graph over it (``assemble``), with the trace's lines about the store in ``notes``.

    Args:
        vectorstore: A ``langchain_chroma.Chroma``.
        options: As for a store folder; ``embeddings`` None is the vector store's own.
        type_key: The metadata key of the note type.
        source_key: The metadata key of the source.
        progress: Called with (chunks read, chunks in all) while the lexical index is built
            the first time (``vectorstores.wrap.first_index``).
        calibrate: Calibrate the gate on the store when its model has no shipped one (False:
            the caller's context sets the threshold; ``vectorstores.wrap.store_gate_note``).

    Raises:
        WrongTypeError, StoreNotFoundError, StoreMismatchError, WrongModelError,
        CriticLoadError.
    """
    from ragbrain.settings import resolve_model
    from ragbrain.store.lexical import LexicalSearcher
    from ragbrain.store.wrapped import ModelNames, wrap_chroma
    from ragbrain.vectorstores.wrap import first_index, store_gate_note

    check_critic_choice(options.critic, "critic")
    check_one_of(options.on_critic_error, ON_CRITIC_ERROR, "on_critic_error", "critic")
    own = getattr(vectorstore, "embeddings", None)
    names = ModelNames(
        given=None if options.embeddings is None else resolve_model(options.embeddings).name,
        own=None if own is None else resolve_model(own).name,
    )
    store, inspection = wrap_chroma(
        vectorstore,
        options.embeddings,
        names=names,
        type_key=type_key,
        source_key=source_key,
        policy=options.policy,
        check_model=options.check_model,
    )
    notes = inspection.notes()

    def prepare() -> LexicalSearcher | None:
        lexical = None
        if inspection.texts or not inspection.count:
            lexical = LexicalSearcher(store, first_index(store, progress))
        notes.append(store_gate_note(store, calibrate))
        return lexical

    built = assemble(store, options, prepare)
    searcher, gate = built.lexical, notes[len(inspection.notes()) :]

    def live_notes() -> list[str]:
        # The index follows the collection on every run (a stat; ``LexicalSearcher.index``).
        count = len(searcher.index) if searcher is not None else None
        return [*inspection.notes(count), *gate]

    return dataclasses.replace(built, notes=tuple(notes), live_notes=live_notes)


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
    options = BuildOptions(
        embeddings=embeddings, critic=critic, on_critic_error=on_critic_error, policy=policy
    )
    return open_store(path, options, convert_space=convert_space, server=server).graph


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
    options = BuildOptions(
        embeddings=embeddings,
        critic=critic,
        on_critic_error=on_critic_error,
        policy=policy,
        check_model=check_model,
    )
    built = open_store(path, options, convert_space=convert_space, server=server)
    return built.store, built.graph


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
    from ragbrain.store.ledger import MODEL_KEY

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
        model=store.model,
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
