"""ragbrain: a corrective retriever for LangChain that refuses weak context.

The public names load on first use (PEP 562): ``import ragbrain.cli`` or ``ragbrain.errors``
then costs no LangGraph, Chroma or torch import, so the CLI answers bad input at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragbrain.context import RetrievalContext
    from ragbrain.critic import Critic, TransformerCritic
    from ragbrain.errors import (
        CriticLoadError,
        InvalidInputError,
        MissingExtraError,
        ModelLoadError,
        RagbrainError,
        ServerAccessError,
        StoreLockedError,
        StoreMismatchError,
        StoreNotFoundError,
        StoreUnavailableError,
        UnknownTypeWarning,
        WrongModelError,
        WrongTypeError,
    )
    from ragbrain.factory import default_graph, open_graph
    from ragbrain.graph import build_graph
    from ragbrain.paths import default_store_path
    from ragbrain.query.filters import Filters
    from ragbrain.retriever import CorrectiveRetriever
    from ragbrain.state import RETRIEVAL_KEY, RetrievalOutput
    from ragbrain.store import Store
    from ragbrain.store.connect import StorePolicy
    from ragbrain.store.reader import Excerpt, read_source

_WHERE = {
    "CorrectiveRetriever": "ragbrain.retriever",
    "Critic": "ragbrain.critic",
    "CriticLoadError": "ragbrain.errors",
    "Excerpt": "ragbrain.store.reader",
    "Filters": "ragbrain.query.filters",
    "InvalidInputError": "ragbrain.errors",
    "MissingExtraError": "ragbrain.errors",
    "ModelLoadError": "ragbrain.errors",
    "RETRIEVAL_KEY": "ragbrain.state",
    "RagbrainError": "ragbrain.errors",
    "RetrievalContext": "ragbrain.context",
    "RetrievalOutput": "ragbrain.state",
    "ServerAccessError": "ragbrain.errors",
    "Store": "ragbrain.store",
    "StoreLockedError": "ragbrain.errors",
    "StoreMismatchError": "ragbrain.errors",
    "StoreNotFoundError": "ragbrain.errors",
    "StorePolicy": "ragbrain.store.connect",
    "StoreUnavailableError": "ragbrain.errors",
    "TransformerCritic": "ragbrain.critic",
    "UnknownTypeWarning": "ragbrain.errors",
    "WrongModelError": "ragbrain.errors",
    "WrongTypeError": "ragbrain.errors",
    "build_graph": "ragbrain.graph",
    "default_graph": "ragbrain.factory",
    "default_store_path": "ragbrain.paths",
    "open_graph": "ragbrain.factory",
    "read_source": "ragbrain.store.reader",
}

__all__ = [
    "RETRIEVAL_KEY",
    "CorrectiveRetriever",
    "Critic",
    "CriticLoadError",
    "Excerpt",
    "Filters",
    "InvalidInputError",
    "MissingExtraError",
    "ModelLoadError",
    "RagbrainError",
    "RetrievalContext",
    "RetrievalOutput",
    "ServerAccessError",
    "Store",
    "StoreLockedError",
    "StoreMismatchError",
    "StoreNotFoundError",
    "StorePolicy",
    "StoreUnavailableError",
    "TransformerCritic",
    "UnknownTypeWarning",
    "WrongModelError",
    "WrongTypeError",
    "build_graph",
    "default_graph",
    "default_store_path",
    "open_graph",
    "read_source",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """Import a public name's module when the name is first used."""
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ragbrain' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
