"""The LangChain face: CorrectiveRetriever, a BaseRetriever that runs the retrieval graph."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, Field

from ragbrain.context import RetrievalContext
from ragbrain.critic import Critic, TransformerCritic, default_critic_path
from ragbrain.errors import CriticLoadError, InvalidInputError
from ragbrain.graph import build_graph
from ragbrain.inputs import check_k, check_query, check_types
from ragbrain.state import RetrievalInput, RetrievalOutput
from ragbrain.store import Store

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

log = logging.getLogger(__name__)

CriticChoice = Critic | str | Path | Literal["default"] | None
_CALL_KWARGS = frozenset({"k", "type_filter"})


def resolve_critic(
    choice: CriticChoice, on_error: Literal["raise", "disable"] = "raise"
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


class CorrectiveRetriever(BaseRetriever):
    """A retriever that refuses weak context: adaptive depth, a quality gate with a type-free
    fallback, and a critic that drops irrelevant chunks.

    Every returned ``Document`` carries ``metadata["retrieval"]``: ``distance``,
    ``critic_score``, ``depth``, ``complexity``, ``verdict``, ``fallback``, ``from_fallback``.

    Example:
        .. code-block:: python

            retriever = CorrectiveRetriever.from_store("~/notes-store")
            docs = retriever.invoke("why did the nightly backup fail?", type_filter="bug")
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    graph: Any = Field(description="The compiled graph from `ragbrain.build_graph`.")
    context: RetrievalContext = Field(default_factory=RetrievalContext)
    k: int | None = Field(default=None, description="Fixed depth; None lets the query choose.")
    type_filter: str | list[str] | None = Field(default=None, description="Note type(s).")

    def model_post_init(self, context: Any, /) -> None:
        """Validate the instance's own settings at construction, not at the first query."""
        check_k(self.k)
        check_types(self.type_filter)

    @classmethod
    def from_store(
        cls,
        path: str | Path | None = None,
        *,
        embeddings: Embeddings | None = None,
        critic: CriticChoice = "default",
        on_critic_error: Literal["raise", "disable"] = "raise",
        convert_space: bool = False,
        **fields: Any,
    ) -> CorrectiveRetriever:
        """Build the retriever over a store folder in one line.

        Args:
            path: The store folder; None is ``$RAGBRAIN_STORE`` or the default location.
            embeddings: Any LangChain ``Embeddings``; None is the bundled all-MiniLM-L6-v2.
            critic: ``"default"`` (the shipped critic when installed), a critic folder,
                a ``Critic`` object, or None for no critic.
            on_critic_error: ``"raise"`` a ``CriticLoadError`` or ``"disable"`` the critic.
            convert_space: Copy a non-cosine collection into a cosine one instead of failing.
            **fields: ``context``, ``k``, ``type_filter`` and other retriever fields.

        Raises:
            StoreNotFoundError, StoreMismatchError, CriticLoadError.
        """
        if embeddings is None:
            from ragbrain.embeddings import default_embeddings

            embeddings = default_embeddings()
        store = Store.open(path, embeddings, convert_space=convert_space)
        chosen, off_reason = resolve_critic(critic, on_critic_error)
        graph = build_graph(store, chosen, critic_off_reason=off_reason)
        return cls(graph=graph, **fields)

    def _prepare(self, query: Any, kwargs: dict[str, Any]) -> tuple[RetrievalInput, RetrievalContext]:
        unknown = set(kwargs) - _CALL_KWARGS
        if unknown:
            raise InvalidInputError(
                f"Unknown keyword argument(s) {sorted(unknown)}; allowed: {sorted(_CALL_KWARGS)}."
            )
        merged = {"k": self.k, "type_filter": self.type_filter, **kwargs}
        k = check_k(merged["k"])
        context = self.context if k is None else dataclasses.replace(self.context, k=k)
        payload = RetrievalInput(
            query=check_query(query), type_filter=check_types(merged["type_filter"])
        )
        return payload, context

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        payload, context = self._prepare(query, kwargs)
        config = RunnableConfig(callbacks=run_manager.get_child())
        output = self.graph.invoke(payload, config=config, context=context)
        return list(output["documents"])

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        payload, context = self._prepare(query, kwargs)
        config = RunnableConfig(callbacks=run_manager.get_child())
        output = await self.graph.ainvoke(payload, config=config, context=context)
        return list(output["documents"])

    def run(self, query: str, **kwargs: Any) -> RetrievalOutput:
        """Run the graph and return everything it decided, not only the documents.

        Takes the same keyword arguments as ``invoke`` (``k``, ``type_filter``); the result's
        ``notes`` say, node by node, why the documents are what they are (also when empty).
        """
        payload, context = self._prepare(query, kwargs)
        output: RetrievalOutput = self.graph.invoke(payload, context=context)
        return output
