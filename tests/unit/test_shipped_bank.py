"""The general questions' vectors shipped per model: used when the model, the variant, the
question list and a probe vector all match; recomputed (and cached) otherwise; every shipped
file matches the bank as it is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragbrain.models.embeddings import model_name_of
from ragbrain.refusal import offtopic, shipped
from ragbrain.refusal.offtopic import bank, query_vectors
from tests.support.fakes import BagOfWordsEmbeddings

#: The name stores record for ``BagOfWordsEmbeddings`` (``model_name_of``).
NAME = model_name_of(BagOfWordsEmbeddings())
QUESTIONS = ("how long do I boil an egg", "who won the football final", "best beach in spain")


class Counting(BagOfWordsEmbeddings):
    """Counts the texts it embeds as documents (the batch that embeds the bank)."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded += len(texts)
        return super().embed_documents(texts)


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(shipped, "FOLDER", tmp_path / "shipped")
    return tmp_path / "shipped"


def test_a_matching_file_is_used_without_embedding_the_bank(folder: Path) -> None:
    written = shipped.write(BagOfWordsEmbeddings(), NAME, QUESTIONS, folder)
    assert written.name == "bag-of-words-64--fp32.npz"
    model = Counting()
    vectors = query_vectors(model, QUESTIONS, NAME)
    assert model.embedded == 0 and vectors.dtype == np.float32
    expected = np.asarray(BagOfWordsEmbeddings().embed_documents(list(QUESTIONS)))
    assert np.allclose(vectors, expected, atol=1e-3)


def test_another_list_or_model_recomputes(folder: Path) -> None:
    shipped.write(BagOfWordsEmbeddings(), NAME, QUESTIONS, folder)
    changed = Counting()
    query_vectors(changed, (*QUESTIONS, "a new question"), NAME)
    assert changed.embedded > 0

    class Impostor(Counting):  # the same name, other vectors
        def _embed(self, text: str) -> list[float]:
            return list(reversed(super()._embed(text)))

    impostor = Impostor()
    vectors = query_vectors(impostor, QUESTIONS, NAME)
    assert impostor.embedded > 0
    assert np.allclose(vectors[1], impostor.embed_query(QUESTIONS[1]), atol=1e-6)


def test_a_subset_of_the_questions_is_read_from_the_file(folder: Path) -> None:
    shipped.write(BagOfWordsEmbeddings(), NAME, QUESTIONS, folder)
    model = Counting()
    vectors = query_vectors(model, QUESTIONS[1:], NAME)
    assert model.embedded == 0 and vectors.shape[0] == 2
    assert np.allclose(vectors[0], model.embed_query(QUESTIONS[1]), atol=1e-3)


@pytest.mark.parametrize("path", sorted(shipped.FOLDER.glob("*.npz")), ids=lambda p: p.stem)
def test_every_shipped_file_holds_the_bank(path: Path) -> None:
    with np.load(path, allow_pickle=False) as found:
        assert [str(k) for k in found["keys"]] == [shipped.text_key(t) for t in bank()]
        assert str(found["probe_text"]) == bank()[0]
        assert found["vectors"].shape[0] == len(bank())
        assert found["vectors"].dtype == np.float16
        norms = np.linalg.norm(found["vectors"].astype(np.float32), axis=1)
        assert np.allclose(norms, 1.0, atol=2e-3)


def test_the_shipped_models_each_have_both_backends() -> None:
    names = {p.name for p in shipped.FOLDER.glob("*.npz")}
    for model in ("all-MiniLM-L6-v2", "multilingual-e5-small"):
        assert f"{model}--fp32.npz" in names
        assert any(n.startswith(f"{model}--onnx-int8") for n in names)
    assert offtopic.BANK.is_file()
