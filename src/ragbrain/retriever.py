"""The LangChain face: CorrectiveRetriever, a BaseRetriever that runs the retrieval graph."""

from __future__ import annotations

import dataclasses
import logging
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import (
    AsyncCallbackManager,
    AsyncCallbackManagerForRetrieverRun,
    CallbackManager,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, ensure_config
from pydantic import ConfigDict, Field

from ragbrain.arguments import (
    FILLED_FIELDS,
    RETRIEVER_FIELDS,
    check_field_types,
    read_filter,
    read_search_kwargs,
)
from ragbrain.checks import check_embeddings, check_flag, check_names, describe
from ragbrain.context import RetrievalContext
from ragbrain.errors import InvalidInputError, UnknownTypeWarning, WrongTypeError
from ragbrain.factory import (
    BuildOptions,
    CriticChoice,
    OnCriticError,
    open_store_and_graph,
    open_vectorstore,
)
from ragbrain.query.filters import Filters
from ragbrain.query.inputs import MAX_QUERY_CHARS, check_k, check_types
from ragbrain.query.typematch import unknown_types, unknown_types_message
from ragbrain.state import RETRIEVAL_KEY, RetrievalInput, RetrievalOutput
from ragbrain.store.connect import StorePolicy
from ragbrain.store.wrapped import STORED_METADATA, restore_metadata

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

log = logging.getLogger(__name__)

_CALL_KWARGS = frozenset({"k", "type_filter", "filters"})
#: The custom callback event sent when a run refuses (``answerable`` false): its data is
#: ``{"query": ..., "reason": ...}``. A chain's callbacks and ``astream_events`` see it.
REFUSAL_EVENT = "ragbrain_refusal"
#: The reason a run gives for an empty query (it answers nothing, without searching).
EMPTY_QUERY = "the query is empty: there is nothing to search for"


class CorrectiveRetriever(BaseRetriever):
    """A retriever that refuses weak context: adaptive depth, a quality gate with a type-free
    fallback, and a critic that drops irrelevant chunks.

    Every returned ``Document`` carries ``metadata["retrieval"]``: ``distance``,
    ``critic_score``, ``depth``, ``complexity``, ``verdict``, ``fallback``, ``from_fallback``.

    Example:
        .. code-block:: python

            retriever = CorrectiveRetriever.from_store("~/notes-store")
            docs = retriever.invoke("why did the nightly backup fail?", type_filter="bug")
            docs = retriever.invoke(
                "backup", filters={"path": "ops", "tags": ["db"], "after": "2024-01-01"}
            )
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    graph: Any = Field(description="The compiled graph from `ragbrain.build_graph`.")
    context: RetrievalContext = Field(default_factory=RetrievalContext)
    k: int | None = Field(default=None, description="Fixed depth; None lets the query choose.")
    type_filter: str | list[str] | None = Field(
        default=None,
        description="Note type(s) searched first: a soft filter, which the fallback widens "
        "when the first search is poor.",
    )
    filter: list[str] | None = Field(
        default=None,
        description="LangChain's ``filter``, a Chroma clause on the note type "
        "(``{'type': 'bug'}``, ``{'type': {'$in': [...]}}``; ``from_vectorstore`` reads it "
        "on its ``type_key``), held as the list of types: a hard constraint that every step "
        "keeps, the fallback included.",
    )
    # Any, checked by Filters.parse: pydantic would turn a dict into a dataclass silently.
    filters: Any = Field(
        default=None,
        description="Path prefixes, tags and a time range every chunk must pass: a "
        "``ragbrain.Filters`` or a dict of ``path``, ``tags``, ``all_tags``, ``after``, "
        "``before`` (see ``ragbrain.query.filters``). A call's ``filters`` replaces it.",
    )
    known_types: Callable[[], list[str]] | None = Field(
        default=None,
        exclude=True,
        description="Returns the store's note types (``Store.known_types``), for "
        "``unknown_types``.",
    )
    store_notes: list[str] | Callable[[], list[str]] = Field(
        default_factory=list,
        exclude=True,
        description="Lines about the store that ``run`` puts first in every run's notes (a "
        "wrapped vector store's records, distances, gate and what it lacks), or a callable "
        "that says them as of the run.",
    )

    def __init__(self, **data: Any) -> None:
        """Check every setting before pydantic sees it: an unknown name or a bad value is
        one ``InvalidInputError`` line naming it (not a validation dump of the graph)."""
        where = "CorrectiveRetriever"
        check_names(data, ("graph", *RETRIEVER_FIELDS, *FILLED_FIELDS), where)
        data = read_filter(data, where)
        check_field_types(data, where)
        graph = data.get("graph")
        if not callable(getattr(graph, "invoke", None)):
            hint = (
                " Build one with ragbrain.build_graph(store), or use "
                "CorrectiveRetriever.from_store(path) / from_vectorstore(vectorstore)."
            )
            raise WrongTypeError(
                f"graph must be a compiled ragbrain graph; got {describe(graph)}.{hint}"
            )
        super().__init__(**data)

    @classmethod
    def from_store(
        cls,
        path: str | Path | None = None,
        *,
        embeddings: Embeddings | None = None,
        critic: CriticChoice = "default",
        on_critic_error: OnCriticError = "raise",
        convert_space: bool = False,
        server: str | None = None,
        policy: StorePolicy | None = None,
        check_model: bool = True,
        **fields: Any,
    ) -> CorrectiveRetriever:
        """Build the retriever over a store folder (or a Chroma server) in one line.

        Args:
            path: The store folder; None is ``$RAGBRAIN_STORE`` or the default location.
            embeddings: Any LangChain ``Embeddings``; None is the model the store records
                (``ragbrain.models.embeddings.embeddings_for``; the default model for a new store).
            critic: ``"default"`` (the shipped critic when installed), a critic folder,
                a ``Critic`` object, or None for no critic.
            on_critic_error: ``"raise"`` a ``CriticLoadError`` or ``"disable"`` the critic.
            convert_space: Copy a non-cosine collection into a cosine one instead of failing.
            server: ``http://HOST:PORT`` of a Chroma server to use instead of ``path``.
            policy: Deadline and retries of every store call (``StorePolicy``).
            check_model: With ``embeddings`` given, embed a few stored chunks again and
                refuse a model that did not make the store's vectors (``WrongModelError``);
                False opens the store anyway.
            **fields: ``context``, ``k``, ``type_filter``, ``filters``, ``tags``,
                ``metadata``, and ``search_kwargs`` (its ``k`` and a ``filter`` on ``type``,
                as ``as_retriever`` takes them); any other name is an ``InvalidInputError``.

        Raises:
            InvalidInputError, StoreNotFoundError, StoreMismatchError, WrongModelError,
            StoreUnavailableError, CriticLoadError.
        """
        where = "CorrectiveRetriever.from_store"
        fields = _checked_fields(fields, where, _FROM_STORE, "type")
        check_flag(check_model, "check_model", where)
        store, graph = open_store_and_graph(
            path,
            embeddings=embeddings,
            critic=critic,
            on_critic_error=on_critic_error,
            convert_space=convert_space,
            server=server,
            policy=policy,
            check_model=check_model,
        )
        fields.setdefault("known_types", store.known_types)
        return cls(graph=graph, **fields)

    @classmethod
    def from_vectorstore(
        cls,
        vectorstore: Any,
        *,
        embeddings: Embeddings | None = None,
        critic: CriticChoice = "default",
        on_critic_error: OnCriticError = "raise",
        type_key: str = "type",
        source_key: str = "source",
        policy: StorePolicy | None = None,
        progress: Callable[[int, int], None] | None = None,
        check_model: bool = True,
        **fields: Any,
    ) -> CorrectiveRetriever:
        """The retriever over a LangChain app's own ``langchain_chroma.Chroma``, in one line.

        The whole pipeline runs on the caller's collection (any name; distance space cosine,
        l2 or ip), through the vector store's own Chroma client: cosine distances whatever
        the space, hybrid search with a BM25 index built once from the collection's texts
        (cached, and kept in step as the collection changes), the gate shipped for a known
        model (else calibrated on the collection once), and the critic. ragbrain never
        writes to the collection. ``run`` notes say how the collection was read. What is
        cached about the collection is keyed by the collection, ``type_key``, ``source_key``
        and the model, so changing any of them later is seen at the next open.

        Args:
            vectorstore: A ``langchain_chroma.Chroma``.
            embeddings: The model that embeds queries; None: the vector store's own.
            critic: As in ``from_store``; off for a collection without stored texts.
            on_critic_error: ``"raise"`` a ``CriticLoadError`` or ``"disable"`` the critic.
            type_key: The metadata key that holds a chunk's note type (``type_filter``).
            source_key: The metadata key that holds its source (path filters).
            policy: Deadline and retries of every store call (``StorePolicy``).
            progress: Called with (chunks read, chunks in all) while the lexical index is
                built the first time.
            check_model: Embed a few stored texts again and refuse a query model that did
                not make the collection's vectors (``WrongModelError``); False opens anyway.
            **fields: ``context``, ``k``, ``type_filter``, ``filters``, ``tags``,
                ``metadata``, ``filter`` (a clause on ``type_key``: a hard constraint), and
                ``search_kwargs`` (its ``k``, and its ``filter`` read as ``filter``); any
                other name is an
                ``InvalidInputError`` naming the accepted ones.

        Raises:
            InvalidInputError: An unknown keyword argument or a bad value (``k=0``).
            WrongTypeError: Another kind of vector store (the message says what is supported),
                or another argument of the wrong type.
            StoreMismatchError: A distance space or vectors ragbrain cannot read as cosine
                distances, or ``embeddings`` of another dimension than the collection's.
            WrongModelError: ``embeddings`` (or the vector store's own) did not make the
                collection's vectors.
            StoreNotFoundError: The vector store's collection was deleted.
            CriticLoadError: The critic cannot be loaded (``on_critic_error="raise"``).
        """
        where = "CorrectiveRetriever.from_vectorstore"
        fields = _checked_fields(
            fields, where, _FROM_VECTORSTORE, type_key if isinstance(type_key, str) else "type"
        )
        check_embeddings(embeddings, "from_vectorstore")
        check_flag(check_model, "check_model", where)
        context = fields.get("context")
        options = BuildOptions(
            embeddings=embeddings,
            critic=critic,
            on_critic_error=on_critic_error,
            policy=policy,
            check_model=check_model,
        )
        built = open_vectorstore(
            vectorstore,
            options,
            type_key=type_key,
            source_key=source_key,
            progress=progress,
            calibrate=not (
                isinstance(context, RetrievalContext) and context.gate_threshold is not None
            ),
        )
        fields.setdefault("known_types", built.store.known_types)
        fields.setdefault("store_notes", built.live_notes or list(built.notes))
        return cls(graph=built.graph, **fields)

    @classmethod
    def from_server(cls, url: str, **kwargs: Any) -> CorrectiveRetriever:
        """``from_store(server=url, ...)``: the retriever over a Chroma server (``chroma run``).

        Every store call then has a deadline and retries transient failures (``policy=``);
        when they run out, ``StoreUnavailableError`` reaches the caller, and the same
        retriever works again once the server is back.
        """
        return cls.from_store(None, server=url, **kwargs)

    def _prepare(self, query: Any, kwargs: dict[str, Any]) -> _Prepared:
        """The graph's input and context for ``query``; an empty query is answered without
        a search (see ``_Prepared``), an over-long one is cut with a note."""
        unknown = set(kwargs) - _CALL_KWARGS
        if unknown:
            check_names(sorted(unknown), _CALL_KWARGS, "The retriever's call")
        merged = {"k": self.k, "type_filter": self.type_filter, "filters": self.filters, **kwargs}
        k = check_k(merged["k"])
        context = self.context if k is None else dataclasses.replace(self.context, k=k)
        filters = Filters.parse(merged["filters"])
        if self.filter:
            filters = (filters or Filters()).with_types(self.filter)
        types = check_types(merged["type_filter"])
        self._warn_unknown_types([*(types or ()), *(filters.types if filters else ())])
        text, notes = _read_query(query)
        payload = RetrievalInput(
            query=text, type_filter=types, filters=filters.spec() if filters else None
        )
        return _Prepared(payload, context, notes)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        output = self._run(self._prepare(query, kwargs), run_manager)
        return output["documents"]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        output = await self._arun(self._prepare(query, kwargs), run_manager)
        return output["documents"]

    def _run(
        self, prepared: _Prepared, run_manager: CallbackManagerForRetrieverRun
    ) -> RetrievalOutput:
        if prepared.empty:
            output = _empty_output(prepared.context)
        else:
            output = self.graph.invoke(
                prepared.payload, config=_child_config(run_manager), context=prepared.context
            )
        output = self._finish(output, prepared)
        if not output["answerable"] and _listened(run_manager):
            run_manager.get_child().on_custom_event(
                REFUSAL_EVENT, _refusal_data(prepared, output), run_id=run_manager.run_id
            )
        return output

    async def _arun(
        self, prepared: _Prepared, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> RetrievalOutput:
        if prepared.empty:
            output = _empty_output(prepared.context)
        else:
            output = await self.graph.ainvoke(
                prepared.payload, config=_child_config(run_manager), context=prepared.context
            )
        output = self._finish(output, prepared)
        if not output["answerable"] and _listened(run_manager):
            await run_manager.get_child().on_custom_event(
                REFUSAL_EVENT, _refusal_data(prepared, output), run_id=run_manager.run_id
            )
        return output

    def _finish(self, output: RetrievalOutput, prepared: _Prepared) -> RetrievalOutput:
        output["documents"] = _as_stored(output["documents"])
        store = self.store_notes() if callable(self.store_notes) else self.store_notes
        output["notes"] = [*store, *prepared.notes, *output["notes"]]
        return output

    def run(
        self, query: str, *, config: RunnableConfig | None = None, **kwargs: Any
    ) -> RetrievalOutput:
        """Run the graph and return everything it decided, not only the documents.

        Takes the same keyword arguments as ``invoke`` (``k``, ``type_filter``,
        ``filters``) and a ``config`` as ``invoke`` does (its ``callbacks``, ``tags``,
        ``metadata``, ``run_name``): the run is traced as a retriever run, with the graph's
        steps under it. The result's ``answerable`` and ``abstain_reason`` say whether to
        answer at all; its ``notes`` say, node by node, why the documents are what they
        are (also when empty). ``RunnableLambda(retriever.run, afunc=retriever.arun)`` is
        the retriever as a chain step that hands the whole run on.
        """
        prepared = self._prepare(query, kwargs)
        config = ensure_config(config)
        manager = CallbackManager.configure(
            config.get("callbacks"),
            None,
            inheritable_tags=config.get("tags"),
            local_tags=self.tags,
            inheritable_metadata={**(config.get("metadata") or {}), **self._get_ls_params()},
            local_metadata=self.metadata,
        )
        run_manager = manager.on_retriever_start(
            None,
            prepared.payload["query"],
            name=config.get("run_name") or self.get_name(),
            run_id=config.get("run_id"),
        )
        try:
            output = self._run(prepared, run_manager)
        except Exception as exc:
            run_manager.on_retriever_error(exc)
            raise
        run_manager.on_retriever_end(output["documents"])
        return output

    async def arun(
        self, query: str, *, config: RunnableConfig | None = None, **kwargs: Any
    ) -> RetrievalOutput:
        """``run`` for async code: the graph runs with ``ainvoke``."""
        prepared = self._prepare(query, kwargs)
        config = ensure_config(config)
        manager = AsyncCallbackManager.configure(
            config.get("callbacks"),
            None,
            inheritable_tags=config.get("tags"),
            local_tags=self.tags,
            inheritable_metadata={**(config.get("metadata") or {}), **self._get_ls_params()},
            local_metadata=self.metadata,
        )
        run_manager = await manager.on_retriever_start(
            None,
            prepared.payload["query"],
            name=config.get("run_name") or self.get_name(),
            run_id=config.get("run_id"),
        )
        try:
            output = await self._arun(prepared, run_manager)
        except Exception as exc:
            await run_manager.on_retriever_error(exc)
            raise
        await run_manager.on_retriever_end(output["documents"])
        return output

    def _warn_unknown_types(self, types: Sequence[str]) -> None:
        """A Python warning for each asked type that no stored chunk has, naming the closest
        (the trace says the same: ``nodes.search``)."""
        if not types or self.known_types is None:
            return
        known = self.known_types()
        unknown = unknown_types(list(types), known)
        if unknown:
            message = unknown_types_message(unknown, known)
            warnings.warn(f"type filter: {message}", UnknownTypeWarning, stacklevel=4)

    def unknown_types(self, types: Sequence[str] | None) -> list[tuple[str, list[str]]]:
        """The types of ``types`` that match no stored type (case-insensitively), each with
        the closest stored ones; empty without ``known_types``
        (see ``ragbrain.query.typematch``)."""
        if not types or self.known_types is None:
            return []
        return unknown_types(list(types), self.known_types())


_FROM_STORE = (
    "path",
    "embeddings",
    "critic",
    "on_critic_error",
    "convert_space",
    "server",
    "policy",
    "check_model",
)
_FROM_VECTORSTORE = (
    "embeddings",
    "critic",
    "on_critic_error",
    "type_key",
    "source_key",
    "policy",
    "progress",
    "check_model",
)


def _checked_fields(
    fields: dict[str, Any], where: str, parameters: Sequence[str], type_key: str
) -> dict[str, Any]:
    """A ``from_*`` constructor's ``**fields``: unknown names refused (naming the
    constructor's parameters and the retriever's fields), ``search_kwargs`` read, types
    checked."""
    check_names(fields, (*parameters, *RETRIEVER_FIELDS, "search_kwargs", *FILLED_FIELDS), where)
    fields = read_filter(read_search_kwargs(fields, where, type_key), where, type_key)
    check_field_types(fields, where)
    return fields


@dataclasses.dataclass(frozen=True)
class _Prepared:
    """A call's graph input and context, the notes about its query, and whether it is empty
    (answered with nothing and a reason, without a search)."""

    payload: RetrievalInput
    context: RetrievalContext
    notes: list[str]

    @property
    def empty(self) -> bool:
        return not self.payload["query"].strip()


def _read_query(query: Any) -> tuple[str, list[str]]:
    """The query to search for and the trace's notes about it: a string longer than
    ``MAX_QUERY_CHARS`` is cut there (the embedding model reads ~256 tokens), with a note
    and a warning; an empty one stays empty (the run answers nothing and says why).

    Raises:
        InvalidInputError: Not a string, or a lone surrogate in it.
    """
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}.")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate, e.g. from undecodable bytes
        raise InvalidInputError(
            f"query holds a lone surrogate (U+{ord(query[exc.start]):04X}) at position "
            f"{exc.start}, which is not valid text; decode the input with errors='replace'."
        ) from None
    if len(query) <= MAX_QUERY_CHARS:
        return query, []
    note = (
        f"query: {len(query):,} characters, cut to the first {MAX_QUERY_CHARS:,} (the "
        "embedding model reads only the first ~256 tokens)"
    )
    log.warning("The %s", note)
    return query[:MAX_QUERY_CHARS], [note]


def _empty_output(context: RetrievalContext) -> RetrievalOutput:
    """The run of an empty query: nothing searched, nothing returned, and why."""
    return RetrievalOutput(
        documents=[],
        complexity=0,
        depth=0,
        candidates=0,
        best_distance=None,
        gate=context.gate_threshold if context.gate_threshold is not None else 0.0,
        verdict="poor",
        first_search_quality="poor",
        fallback=False,
        critic="not run: empty query",
        answerable=False,
        abstain_reason=EMPTY_QUERY,
        notes=[f"query: {EMPTY_QUERY}; nothing searched"],
    )


def _listened(
    run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun,
) -> bool:
    return bool(run_manager.handlers or run_manager.inheritable_handlers)


def _refusal_data(prepared: _Prepared, output: RetrievalOutput) -> dict[str, Any]:
    return {"query": prepared.payload["query"], "reason": output["abstain_reason"]}


def _as_stored(documents: Sequence[Document]) -> list[Document]:
    """The documents with the metadata their collection stores: a wrapped collection's
    chunks reach the graph with ragbrain's ``type`` and ``source`` keys mapped onto theirs
    (``ragbrain.store.wrapped``); the caller gets its own metadata back, with the trace."""
    return [
        doc.model_copy(update={"metadata": restore_metadata(doc.metadata, (RETRIEVAL_KEY,))})
        if STORED_METADATA in doc.metadata
        else doc
        for doc in documents
    ]


def _child_config(
    run_manager: CallbackManagerForRetrieverRun | AsyncCallbackManagerForRetrieverRun,
) -> RunnableConfig | None:
    """The graph's node runs nest under the retriever's run when anything listens to it;
    with no callback handlers at all (no tracer, no callbacks) the graph gets none, which
    spares LangGraph its per-node callback bookkeeping (docs/decisions/measured-costs.md)."""
    if not run_manager.handlers and not run_manager.inheritable_handlers:
        return None
    return RunnableConfig(callbacks=run_manager.get_child())
