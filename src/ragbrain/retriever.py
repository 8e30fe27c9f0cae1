"""The LangChain face: CorrectiveRetriever, a BaseRetriever that runs the retrieval graph."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, Field

from ragbrain.checks import check_embeddings, describe
from ragbrain.context import RetrievalContext
from ragbrain.errors import InvalidInputError, WrongTypeError
from ragbrain.factory import CriticChoice, OnCriticError, open_store_and_graph
from ragbrain.query.filters import Filters
from ragbrain.query.inputs import check_k, check_query, check_types
from ragbrain.query.typematch import unknown_types
from ragbrain.state import RETRIEVAL_KEY, RetrievalInput, RetrievalOutput
from ragbrain.store.resilience import StorePolicy
from ragbrain.store.view import STORED_METADATA, restore_metadata

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

_CALL_KWARGS = frozenset({"k", "type_filter", "filters"})


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
    type_filter: str | list[str] | None = Field(default=None, description="Note type(s).")
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
    store_notes: list[str] = Field(
        default_factory=list,
        exclude=True,
        description="Lines about the store that ``run`` puts first in every run's notes (a "
        "wrapped vector store's distances, gate and what it lacks).",
    )

    def model_post_init(self, context: Any, /) -> None:
        """Validate the instance's own settings at construction, not at the first query."""
        if not callable(getattr(self.graph, "invoke", None)):
            hint = (
                " Build one with ragbrain.build_graph(store), or use "
                "CorrectiveRetriever.from_store(path) / from_vectorstore(vectorstore)."
            )
            raise WrongTypeError(
                f"graph must be a compiled ragbrain graph; got {describe(self.graph)}.{hint}"
            )
        check_k(self.k)
        check_types(self.type_filter)
        Filters.parse(self.filters)

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
            **fields: ``context``, ``k``, ``type_filter`` and other retriever fields.

        Raises:
            StoreNotFoundError, StoreMismatchError, StoreUnavailableError, CriticLoadError.
        """
        store, graph = open_store_and_graph(
            path,
            embeddings=embeddings,
            critic=critic,
            on_critic_error=on_critic_error,
            convert_space=convert_space,
            server=server,
            policy=policy,
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
        **fields: Any,
    ) -> CorrectiveRetriever:
        """The retriever over a LangChain app's own ``langchain_chroma.Chroma``, in one line.

        The whole pipeline runs on the caller's collection (any name; distance space cosine,
        l2 or ip), through the vector store's own Chroma client: cosine distances whatever
        the space, hybrid search with a BM25 index built once from the collection's texts
        (cached, and kept in step as the collection changes), the gate shipped for a known
        model (else calibrated on the collection once), and the critic. ragbrain never
        writes to the collection. ``run`` notes say how the collection was read.

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
            **fields: ``context``, ``k``, ``type_filter`` and other retriever fields.

        Raises:
            WrongTypeError: Another kind of vector store (the message says what is supported),
                or another argument of the wrong type.
            StoreMismatchError: A distance space or vectors ragbrain cannot read as cosine
                distances, or ``embeddings`` of another dimension than the collection's.
            StoreNotFoundError: The vector store's collection was deleted.
            CriticLoadError: The critic cannot be loaded (``on_critic_error="raise"``).
        """
        from ragbrain.vectorstores.wrap import open_vectorstore_graph

        check_embeddings(embeddings, "from_vectorstore")
        context = fields.get("context")
        store, graph, notes = open_vectorstore_graph(
            vectorstore,
            embeddings=embeddings,
            critic=critic,
            on_critic_error=on_critic_error,
            type_key=type_key,
            source_key=source_key,
            policy=policy,
            progress=progress,
            calibrate=not (
                isinstance(context, RetrievalContext) and context.gate_threshold is not None
            ),
        )
        fields.setdefault("known_types", store.known_types)
        fields.setdefault("store_notes", notes)
        return cls(graph=graph, **fields)

    @classmethod
    def from_server(cls, url: str, **kwargs: Any) -> CorrectiveRetriever:
        """``from_store(server=url, ...)``: the retriever over a Chroma server (``chroma run``).

        Every store call then has a deadline and retries transient failures (``policy=``);
        when they run out, ``StoreUnavailableError`` reaches the caller, and the same
        retriever works again once the server is back.
        """
        return cls.from_store(None, server=url, **kwargs)

    def _prepare(
        self, query: Any, kwargs: dict[str, Any]
    ) -> tuple[RetrievalInput, RetrievalContext]:
        unknown = set(kwargs) - _CALL_KWARGS
        if unknown:
            raise InvalidInputError(
                f"Unknown keyword argument(s) {sorted(unknown)}; allowed: {sorted(_CALL_KWARGS)}."
            )
        merged = {"k": self.k, "type_filter": self.type_filter, "filters": self.filters, **kwargs}
        k = check_k(merged["k"])
        context = self.context if k is None else dataclasses.replace(self.context, k=k)
        filters = Filters.parse(merged["filters"])
        payload = RetrievalInput(
            query=check_query(query),
            type_filter=check_types(merged["type_filter"]),
            filters=filters.spec() if filters else None,
        )
        return payload, context

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        payload, context = self._prepare(query, kwargs)
        output = self.graph.invoke(payload, config=_child_config(run_manager), context=context)
        return _as_stored(output["documents"])

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        payload, context = self._prepare(query, kwargs)
        output = await self.graph.ainvoke(
            payload, config=_child_config(run_manager), context=context
        )
        return _as_stored(output["documents"])

    def run(self, query: str, **kwargs: Any) -> RetrievalOutput:
        """Run the graph and return everything it decided, not only the documents.

        Takes the same keyword arguments as ``invoke`` (``k``, ``type_filter``,
        ``filters``); the result's ``notes`` say, node by node, why the documents are what
        they are (also when empty).
        """
        payload, context = self._prepare(query, kwargs)
        output: RetrievalOutput = self.graph.invoke(payload, context=context)
        output["documents"] = _as_stored(output["documents"])
        if self.store_notes:
            output["notes"] = [*self.store_notes, *output["notes"]]
        return output

    def unknown_types(self, types: Sequence[str] | None) -> list[tuple[str, list[str]]]:
        """The types of ``types`` that match no stored type (case-insensitively), each with
        the closest stored ones; empty without ``known_types``
        (see ``ragbrain.query.typematch``)."""
        if not types or self.known_types is None:
            return []
        return unknown_types(list(types), self.known_types())


def _as_stored(documents: Sequence[Document]) -> list[Document]:
    """The documents with the metadata their collection stores: a wrapped collection's
    chunks reach the graph with ragbrain's ``type`` and ``source`` keys mapped onto theirs
    (``ragbrain.store.view``); the caller gets its own metadata back, with the trace."""
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
