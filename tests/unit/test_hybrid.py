"""Hybrid search: RRF order on a hand-made case, true cosine distances on fused hits, the
search modes through the graph, the lexical rescue rung, and queries without lexical terms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ragbrain.context import RetrievalContext
from ragbrain.errors import InvalidInputError
from ragbrain.graph import build_graph
from ragbrain.hybrid import fuse_hits, hybrid_search, rrf
from ragbrain.state import RETRIEVAL_KEY, Hit
from ragbrain.store import Store
from ragbrain.store.lexical import LexicalSearcher


def test_rrf_order_on_a_hand_made_case() -> None:
    # a: 1/61 + 1/63, c: 1/63 + 1/61 (a tie, first seen wins), b and d: 1/62 each.
    assert rrf([["a", "b", "c"], ["c", "d", "a"]]) == ["a", "c", "b", "d"]
    # Found by both sides beats first place on one side.
    assert rrf([["x", "y"], ["z", "y"]])[0] == "y"
    assert rrf([["x", "y"], []]) == ["x", "y"]
    assert rrf([]) == []


def cosine_distance(store: Store, query: str, text: str) -> float:
    q = np.array(store.embeddings.embed_query(query))
    d = np.array(store.embeddings.embed_documents([text])[0])
    return float(1 - q @ d / (np.linalg.norm(q) * np.linalg.norm(d)))


def test_fused_hits_carry_their_true_cosine_distance(fake_store: Store) -> None:
    index = LexicalSearcher(fake_store).index
    hits, _ = hybrid_search(fake_store, index, "backup credentials expired", 5)
    assert hits
    for hit in hits:
        assert hit["distance"] == pytest.approx(
            cosine_distance(fake_store, "backup credentials expired", hit["text"]), abs=1e-5
        )


def test_lexical_only_ids_are_read_from_the_store(fake_store: Store) -> None:
    ids = fake_store.all_ids()
    dense = fake_store.search("redis", 1)
    fused = fuse_hits(fake_store, "redis", [dense, [i for i in ids if i != dense[0]["id"]][:2]], 3)
    assert fused[0]["id"] == dense[0]["id"]  # a tie at rank 1: the first list wins
    assert len(fused) == 3 and all(h["text"] for h in fused)


def run(store: Store, query: str, lexical: bool = True, **context: Any) -> dict[str, Any]:
    searcher = LexicalSearcher(store) if lexical else None
    graph = build_graph(store, lexical=searcher)
    return dict(
        graph.invoke(
            {"query": query, "type_filter": context.pop("types", None)},
            context=RetrievalContext(**context),
        )
    )


def test_hybrid_mode_finds_a_rare_term_and_the_gate_reads_cosine(fake_store: Store) -> None:
    out = run(fake_store, "statement_timeout", k=3)
    assert "hybrid search" in out["notes"][1]
    assert "statement_timeout" in out["documents"][0].page_content
    distances = [d.metadata[RETRIEVAL_KEY]["distance"] for d in out["documents"]]
    assert out["best_distance"] == pytest.approx(min(distances))


def test_dense_mode_is_vector_search_only(fake_store: Store) -> None:
    out = run(fake_store, "redis cache", k=3, search_mode="dense")
    assert out["notes"][1].startswith("vector search")
    dense = [h["id"] for h in fake_store.search("redis cache", 3)]
    assert [d.id for d in out["documents"]] == dense


def test_poor_verdict_runs_the_lexical_rescue(fake_store: Store) -> None:
    out = run(fake_store, "alembic", k=3, search_mode="dense", gate_threshold=0.0)
    assert out["verdict"] == "poor" and out["fallback"]
    assert "lexical rescue" in out["notes"][3]
    assert any("Alembic" in d.page_content for d in out["documents"])


def test_hybrid_fallback_widens_the_type_filter(fake_store: Store) -> None:
    out = run(fake_store, "alembic migrations", k=3, gate_threshold=0.0, types=["lesson"])
    assert "without the type filter" in out["notes"][3]
    assert any(d.metadata["type"] == "decision" for d in out["documents"])


def test_hybrid_fallback_puts_the_rescued_chunk_first(fake_store: Store) -> None:
    out = run(
        fake_store,
        "nightly backup s3 credentials expired",
        k=3,
        gate_threshold=0.5,
        types=["lesson"],
    )
    assert out["verdict"] == "poor" and out["fallback"]
    distances = [d.metadata[RETRIEVAL_KEY]["distance"] for d in out["documents"]]
    assert distances == sorted(distances)  # merged by distance, as the issue asks
    top = out["documents"][0]
    assert top.metadata["source"] == "bug/backup.md"
    assert top.metadata[RETRIEVAL_KEY]["from_fallback"] is True


def test_without_a_lexical_index_hybrid_says_so(fake_store: Store) -> None:
    out = run(fake_store, "redis", lexical=False, k=2)
    assert "no lexical index" in out["notes"][1]


@pytest.mark.parametrize(
    "query",
    ["the and of", "?!...", "😀🔥", "ไม่มี คำ ค้น 🙂", "Ξ∆Ж"],
    ids=["stop", "punct", "emoji", "th", "symbols"],
)
@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_queries_without_lexical_terms_return_dense_results(
    fake_store: Store, query: str, mode: str
) -> None:
    out = run(fake_store, query, k=2, search_mode=mode, gate_threshold=0.0)
    assert len(out["documents"]) == 2


def test_search_mode_is_checked() -> None:
    with pytest.raises(InvalidInputError, match="search_mode must be one of"):
        RetrievalContext(search_mode="sparse")  # type: ignore[arg-type]


def test_hits_by_id_ignores_unknown_ids(fake_store: Store) -> None:
    assert fake_store.hits_by_id("redis", []) == []
    assert fake_store.hits_by_id("redis", ["no-such-id"]) == []
    hit: Hit = fake_store.hits_by_id("redis", fake_store.all_ids()[:1])[0]
    assert 0.0 <= hit["distance"] <= 2.0


def test_weighted_rrf_lets_one_side_only_fill_in() -> None:
    # Weight 0 for the first ranking: the second's order stands, the rest follow in order.
    assert rrf([["a", "b", "c"], ["c", "d"]], weights=[0.0, 1.0]) == ["c", "d", "a", "b"]
    assert rrf([["a"], ["b"]], weights=[2.0, 1.0]) == ["a", "b"]


@pytest.mark.parametrize(
    ("query", "languages", "trusted"),
    [
        ("redis cache", None, True),
        ("キャッシュ", None, False),
        ("แคช", None, False),
        ("キャッシュ", ("en", "ja"), True),
        ("redis", ("th",), False),
        ("Hainesと誰が、StripTheoryを考案しましたか?", None, False),
        ("Hainesと誰が、StripTheoryを考案しましたか?", ("en", "ja"), True),
        ("🙂 ...", None, True),
        ("TNF-α levels rise in sepsis", None, True),
    ],
    ids=[
        "en-default",
        "ja-default",
        "th-default",
        "ja-listed",
        "en-not-listed",
        "mostly-latin-japanese",
        "mixed-listed",
        "no-letters",
        "greek-letter-in-english",
    ],
)
def test_dense_is_trusted_by_query_language(
    fake_store: Store, query: str, languages: tuple[str, ...] | None, trusted: bool
) -> None:
    from ragbrain.hybrid import dense_trusted
    from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL
    from ragbrain.settings import model_settings

    fake_store.embeddings.model_name = DEFAULT_EMBEDDING_MODEL  # type: ignore[attr-defined]
    reads = languages if languages is not None else model_settings(fake_store.model).reads
    assert dense_trusted(query, reads) is trusted


def test_any_other_model_is_trusted_in_every_language(fake_store: Store) -> None:
    from ragbrain.hybrid import dense_trusted
    from ragbrain.settings import model_settings

    reads = model_settings(fake_store.model).reads  # the fake model is not the default one
    assert reads is None and dense_trusted("แคช", reads)


def test_the_dense_share_is_a_setting_of_the_run(fake_store: Store) -> None:
    """``dense_share`` reaches the fusion: 0 leaves BM25's order, 1 the dense one (min-max
    scaled, so its last hit ties with the BM25-only ones at 0), and the trace names it."""
    query = "redis cache stampede"
    shipped = run(fake_store, query, k=4)
    assert "dense 0.30" in shipped["notes"][1]
    dense_only = run(fake_store, query, k=4, dense_share=1.0)
    assert "dense 1.00" in dense_only["notes"][1]
    dense = [h["id"] for h in fake_store.search(query, 4)]
    assert [d.id for d in dense_only["documents"]][:3] == dense[:3]
    lexical = run(fake_store, query, k=4, dense_share=0.0)
    assert "BM25's order stands" in lexical["notes"][1]


@pytest.mark.parametrize("share", [-0.1, 1.5])
def test_the_dense_share_is_checked(share: float) -> None:
    with pytest.raises(InvalidInputError, match="dense_share must be in"):
        RetrievalContext(dense_share=share)
