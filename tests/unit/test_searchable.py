"""The seam under the nodes: ``vector_search`` and ``fallback_search`` ask a store only what
``SearchableStore`` names, so a store of a few chunks in a list drives them."""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.runtime import Runtime

from ragbrain.context import RetrievalContext
from ragbrain.nodes.fallback import make_fallback_search
from ragbrain.nodes.search import make_vector_search
from ragbrain.query.filters import Filters
from ragbrain.store.ledger import Ledger, Unfinished
from ragbrain.store.search import Hit, KnownScope, SearchableStore
from tests.support.fakes import BagOfWordsEmbeddings

CHUNKS = {
    "a": ("redis cache stampede", "bug"),
    "b": ("alembic migration order", "decision"),
    "c": ("redis eviction policy", "lesson"),
}


class ListStore:
    """Three chunks, ranked by how many of the query's words each holds."""

    embedding_model = None

    def __init__(self) -> None:
        self.embeddings = BagOfWordsEmbeddings()
        self.searched: list[tuple[str, int, list[str] | None]] = []

    def _hit(self, query: str, id_: str) -> Hit:
        text, type_ = CHUNKS[id_]
        shared = len(set(query.split()) & set(text.split()))
        return Hit(
            id=id_,
            text=text,
            metadata={"type": type_, "source": f"{id_}.md"},
            distance=1.0 - shared / 3,
            from_fallback=False,
        )

    def search(
        self,
        query: str,
        k: int,
        types: Sequence[str] | None = None,
        filters: Filters | None = None,
    ) -> list[Hit]:
        self.searched.append((query, k, list(types) if types else None))
        wanted = {type_.lower() for type_ in types or []}
        ids = [id_ for id_, (_, type_) in CHUNKS.items() if not wanted or type_ in wanted]
        return sorted((self._hit(query, id_) for id_ in ids), key=lambda h: h["distance"])[:k]

    def hits_by_id(self, query: str, ids: Sequence[str]) -> list[Hit]:
        return [self._hit(query, id_) for id_ in ids if id_ in CHUNKS]

    def known_types(self) -> list[str]:
        return sorted({type_ for _, type_ in CHUNKS.values()})

    def scope_index(self) -> KnownScope | None:
        return None

    def ledger(self) -> Ledger:
        return Ledger(generation="g1", unfinished=(Unfinished(path="/notes", total=3),))


def test_vector_search_asks_only_the_seam() -> None:
    store = ListStore()
    node = make_vector_search(store)
    state = {"query": "redis cache", "candidates": 2, "type_filter": ["Bug", "nope"]}
    out = node(state, Runtime(context=RetrievalContext()))
    assert [h["id"] for h in out["hits"]] == ["a"]
    assert store.searched == [("redis cache", 2, ["Bug", "nope"])]
    assert any("the ingest of /notes" in note for note in out["notes"])  # the ledger's
    # Types checked against known_types: only the one that matches no stored type is named.
    (typed,) = [note for note in out["notes"] if note.startswith("type filter:")]
    assert "'nope'" in typed and "'Bug'" not in typed


def test_fallback_search_drops_the_type_filter_through_the_seam() -> None:
    store = ListStore()
    node = make_fallback_search(store)
    first = store.search("redis eviction", 2, ["bug"])
    state = {"query": "redis eviction", "candidates": 2, "type_filter": ["bug"], "hits": first}
    out = node(state, Runtime(context=RetrievalContext()))
    assert [h["id"] for h in out["hits"]] == ["c", "a"]
    assert [h["from_fallback"] for h in out["hits"]] == [True, False]


def test_the_stores_have_every_member_of_the_seam() -> None:
    from ragbrain.store import Store
    from ragbrain.store.wrapped import WrappedStore

    # ``embeddings`` is an instance attribute of a store, set when it opens.
    members = {name for name in vars(SearchableStore) if not name.startswith("_")}
    assert members - {"embeddings"} == {
        "embedding_model",
        "search",
        "hits_by_id",
        "known_types",
        "scope_index",
        "ledger",
    }
    for store_class in (Store, WrappedStore):
        assert all(hasattr(store_class, name) for name in members - {"embeddings"})
