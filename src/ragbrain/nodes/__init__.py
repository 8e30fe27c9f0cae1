"""The graph's nodes, one module each; pure nodes are functions, I/O nodes come from factories."""

from __future__ import annotations

from typing import Any, Protocol

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext
from ragbrain.state import RetrievalState


class Node(Protocol):
    """What a factory returns: a node LangGraph calls with the state and the run's runtime."""

    __name__: str

    def __call__(
        self, state: RetrievalState, *, runtime: Runtime[RetrievalContext]
    ) -> dict[str, Any]: ...
