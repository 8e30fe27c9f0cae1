"""ragbrain: a corrective retriever for LangChain that refuses weak context."""

from ragbrain.context import RetrievalContext
from ragbrain.critic import Critic, TransformerCritic
from ragbrain.errors import (
    CriticLoadError,
    InvalidInputError,
    RagbrainError,
    StoreLockedError,
    StoreMismatchError,
    StoreNotFoundError,
    StoreUnavailableError,
)
from ragbrain.factory import default_graph, open_graph
from ragbrain.graph import build_graph
from ragbrain.paths import default_store_path
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.state import RETRIEVAL_KEY, RetrievalOutput
from ragbrain.store import Store
from ragbrain.store.resilience import StorePolicy

__all__ = [
    "RETRIEVAL_KEY",
    "CorrectiveRetriever",
    "Critic",
    "CriticLoadError",
    "InvalidInputError",
    "RagbrainError",
    "RetrievalContext",
    "RetrievalOutput",
    "Store",
    "StoreLockedError",
    "StoreMismatchError",
    "StoreNotFoundError",
    "StorePolicy",
    "StoreUnavailableError",
    "TransformerCritic",
    "build_graph",
    "default_graph",
    "default_store_path",
    "open_graph",
]
__version__ = "0.1.0"
