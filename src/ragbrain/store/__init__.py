"""The Chroma store: connecting (a folder or a server), the collection's checks, reads, writes
and search, the writers' lock and crash repair, type-filtered search, deadlines and retries.

``Store`` is what the rest of the package uses (its parts: ``reading``, ``searching``,
``writing``, ``records``); the modules beside it each do one part. ``SearchableStore`` is what
the graph's nodes need of a store.
"""

from ragbrain.store.connect import connect, parse_server_url
from ragbrain.store.keys import COLLECTION, DIMENSION_KEY, GATE_KEY, MODEL_KEY
from ragbrain.store.resilience import StorePolicy
from ragbrain.store.searchable import SearchableStore
from ragbrain.store.store import Store

__all__ = [
    "COLLECTION",
    "DIMENSION_KEY",
    "GATE_KEY",
    "MODEL_KEY",
    "SearchableStore",
    "Store",
    "StorePolicy",
    "connect",
    "parse_server_url",
]
