"""Cross-lingual retrieval with multilingual-e5-small through the default pipeline: an English
question finds the Thai or Japanese note, and a Thai or Japanese question the English one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from ragbrain.ingest import ingest
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.store import Store

FIXTURE = Path(__file__).parents[1] / "support" / "data" / "crosslingual.json"
PAIRS = json.loads(FIXTURE.read_text(encoding="utf-8"))["pairs"]


def test_the_fixture_is_cross_lingual() -> None:
    assert len(PAIRS) >= 30
    for pair in PAIRS:
        assert pair["note_language"] != pair["question_language"], pair["id"]
    directions = {(p["note_language"], p["question_language"]) for p in PAIRS}
    assert {("th", "en"), ("ja", "en"), ("en", "th"), ("en", "ja")} <= directions


@pytest.fixture(scope="module")
def retriever(
    e5: Embeddings, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], list[str]]:
    notes = tmp_path_factory.mktemp("crosslingual-notes")
    for pair in PAIRS:
        (notes / f"{pair['id']}.md").write_text(pair["note"] + "\n", encoding="utf-8")
    folder = tmp_path_factory.mktemp("crosslingual-store")
    ingest(notes, Store.open(folder, e5, create=True))
    found = CorrectiveRetriever.from_store(folder, embeddings=e5)

    def search(question: str) -> list[str]:
        documents = found.invoke(question, k=10)  # Recall@10: ten results asked for
        return [Path(str(d.metadata["source"])).stem for d in documents]

    return search


@pytest.mark.slow
def test_questions_find_their_note_in_another_language(
    retriever: Callable[[str], list[str]],
) -> None:
    ranks = {p["id"]: retriever(p["question"]) for p in PAIRS}
    at_10 = {i: i in ranked[:10] for i, ranked in ranks.items()}
    missed = [i for i, hit in at_10.items() if not hit]
    assert sum(at_10.values()) / len(PAIRS) >= 0.8, missed
    for direction in ("en", "th", "ja"):
        asked = [p["id"] for p in PAIRS if p["question_language"] == direction]
        assert sum(at_10[i] for i in asked) / len(asked) >= 0.8, (direction, missed)
