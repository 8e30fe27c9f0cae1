"""A rare word in a long note: the chunk that holds every word of the question is among the
candidates the critic judges, whatever its dense score (``ragbrain.hybrid.holders``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from ragbrain.context import RetrievalContext
from ragbrain.graph import build_graph
from ragbrain.hybrid import floor_holders, holders, hybrid_fusion
from ragbrain.ingest import ingest
from ragbrain.store import Store
from ragbrain.store.lexical import LexicalSearcher

WORD = "dikatesowo"
#: The dense side's share: a made-up model has no profile, so BM25's share is not squared as on
#: all-MiniLM-L6-v2 stores; a larger dense share has the fusion leave the holder behind alike.
SHARE = 0.6
TOPICS = ("postgres backups", "redis memory", "nginx logs", "kubernetes pods", "dns records")


class FarFromTheWord(Embeddings):
    """Every text near one direction, the query's, but a text holding ``WORD``: the dense side
    ranks the chunk that holds it last (as a model that cannot read a made-up word may)."""

    model_name = "far-from-the-word"

    def _embed(self, text: str) -> list[float]:
        if WORD in text:
            return [0.0, 1.0, 0.0]
        jitter = int(hashlib.sha256(text.encode()).hexdigest()[:6], 16) / 0xFFFFFF
        return [1.0, 0.0, 0.2 + jitter]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.2]


def long_note(word_at: int | None) -> str:
    """A 200-line runbook; ``word_at``: the line that holds ``WORD``."""
    lines = []
    for n in range(200):
        topic = TOPICS[(n // 20) % len(TOPICS)]
        if n % 20 == 0:
            lines.append(f"## {topic.title()} {n // 20}")
        else:
            lines.append(f"- check the {topic} on the staging host before step {n} of the run.")
    if word_at is not None:
        lines[word_at] = f"- the {WORD} flag is what the weekly {TOPICS[0]} run needs at step 7."
    return "\n".join(lines) + "\n"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "handbook.md").write_text(long_note(150), encoding="utf-8")
    for n in range(3):
        (notes / f"other-{n}.md").write_text(long_note(None), encoding="utf-8")
    opened = Store.open(tmp_path / "store", FarFromTheWord(), create=True)
    ingest(notes, opened)
    return opened


def test_the_fused_candidates_hold_the_chunk_with_the_rare_word(store: Store) -> None:
    index = LexicalSearcher(store).index
    assert store.count() > 30  # more chunks than the dense side fetches
    fused = hybrid_fusion(store, index, WORD, 10, dense_share=SHARE)
    texts = [hit["text"] for hit in fused.hits]
    assert len(texts) == 10 and sum(WORD in t for t in texts) == 1
    assert fused.raised == 1  # the score fusion alone had left it out
    assert holders(index, f"what is {WORD}", [hit["id"] for hit in fused.hits]) == [
        hit["id"] for hit in fused.hits if WORD in hit["text"]
    ]
    # A word the index never saw: no chunk holds every word.
    assert holders(index, f"{WORD} zqxwvy", [hit["id"] for hit in fused.hits]) == []


def test_a_query_of_the_word_hands_over_its_chunk(store: Store) -> None:
    graph = build_graph(store, lexical=LexicalSearcher(store))
    run = graph.invoke(
        {"query": WORD}, context=RetrievalContext(k=10, abstain="off", dense_share=SHARE)
    )
    assert any(WORD in d.page_content for d in run["documents"])
    assert any("holding every word of the query" in n for n in run["notes"])


def test_floor_holders_keeps_k_and_the_order() -> None:
    assert floor_holders(["a", "b", "c", "d"], ["d"], 3) == ["a", "b", "d"]
    assert floor_holders(["a", "b", "c", "d", "e"], ["e", "d"], 3) == ["a", "e", "d"]
    assert floor_holders(["a", "b", "c"], ["b"], 2) == ["a", "b"]
    assert floor_holders(["a", "b"], [], 2) == ["a", "b"]
    assert floor_holders(["a", "b", "c"], ["c"], 0) == []
