"""The Chroma store: connecting (a folder or a server), the collection's checks, reads, writes
and search, the writers' lock and crash repair, type-filtered search, deadlines and retries.

``Store`` (``store.py``) is what the rest of the package uses; the modules beside it are the
rooms it calls (docs/architecture.md lists them). ``SearchableStore`` is what the graph's
nodes need of a store.
"""

from ragbrain.store.connect import StorePolicy, connect, parse_server_url
from ragbrain.store.ledger import COLLECTION, DIMENSION_KEY, GATE_KEY, MODEL_KEY
from ragbrain.store.search import SearchableStore
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
