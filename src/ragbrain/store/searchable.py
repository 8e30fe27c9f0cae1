"""What the graph's nodes need of a store: the seam between ``nodes/`` (and the fusion they
call in ``lexical/``) and ``store/``.

``Store`` implements it, and so do the stores built on it: a server store (``Store.open``
with ``server``) and a caller's langchain-chroma collection (``store.wrapped.WrappedStore``).
A test may hand the nodes anything with these members.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain.query.filters import Filters
    from ragbrain.store.hits import Hit
    from ragbrain.store.ledger import Ledger
    from ragbrain.store.scoped import KnownScope


class SearchableStore(Protocol):
    """A store as the nodes search it (``ragbrain.store.searching`` documents each member)."""

    @property
    def embeddings(self) -> Embeddings:
        """The model queries are embedded with (its name decides the fusion's settings)."""
        ...

    @property
    def embedding_model(self) -> str | None:
        """The model behind the store's distances; None when they mix two."""
        ...

    def search(
        self,
        query: str,
        k: int,
        types: Sequence[str] | None = None,
        filters: Filters | None = None,
    ) -> list[Hit]:
        """The ``k`` chunks nearest to ``query`` (of ``types``, passing ``filters``), best first."""
        ...

    def hits_by_id(self, query: str, ids: Sequence[str]) -> list[Hit]:
        """The given chunks as hits, each with its cosine distance to ``query``."""
        ...

    def known_types(self) -> list[str]:
        """Every note type in the store, as written."""
        ...

    def scope_index(self) -> KnownScope | None:
        """The index of the whole store that masks chunks by filters; None without one."""
        ...

    def ledger(self) -> Ledger:
        """The store's record: its generation (which every write changes), its roots, an
        unfinished ingest."""
        ...
