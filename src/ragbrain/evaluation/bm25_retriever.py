"""BM25 alone as a LangChain retriever: the lexical baseline that evaluations compare against."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from ragbrain.state import RETRIEVAL_KEY

if TYPE_CHECKING:
    from ragbrain.store import Store
    from ragbrain.store.lexical import LexicalSearcher


class BM25Retriever(BaseRetriever):
    """The ``k`` best BM25 matches from a store's lexical index (no vectors, no gate).

    Each returned ``Document`` carries ``metadata["retrieval"] = {"bm25": score}``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: Any = Field(description="The `ragbrain.Store` the index belongs to.")
    searcher: Any = Field(description="Its `ragbrain.lexical.LexicalSearcher`.")
    k: int = Field(default=10, ge=1, le=100)

    @classmethod
    def over(cls, store: Store, searcher: LexicalSearcher, k: int = 10) -> BM25Retriever:
        """A BM25 retriever over ``store`` with its lexical index."""
        return cls(store=store, searcher=searcher, k=k)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        hits = self.searcher.index.search(query, self.k)
        rows = {row[0]: row for row in self.store.texts_and_types([h.id for h in hits])}
        return [
            Document(
                id=hit.id,
                page_content=rows[hit.id][1],
                metadata={"type": rows[hit.id][2], RETRIEVAL_KEY: {"bm25": hit.score}},
            )
            for hit in hits
            if hit.id in rows
        ]
