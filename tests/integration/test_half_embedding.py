"""Word embeddings stored and kept in fp16 (ragbrain.models.e5.half), on a tiny BERT built here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragbrain.models.backend import load_embeddings
from tests.support.tiny_models import make_sentence_model

TEXTS = ["the quick brown fox", "a cell of the brain", "notes search vector store", "paris"]
WORDS = "embeddings.word_embeddings.weight"


def _with_words(source: Path, target: Path, dtype: str) -> Path:
    """A copy of ``source`` whose word embeddings are fp16-rounded, stored as ``dtype``."""
    import torch
    from safetensors.torch import load_file, save_file

    shutil.copytree(source, target)
    weights = load_file(str(source / "model.safetensors"))
    weights[WORDS] = weights[WORDS].half().to(getattr(torch, dtype))
    save_file(weights, str(target / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((target / "config.json").read_text())
    (target / "config.json").write_text(json.dumps({**config, "dtype": "float32"}))
    return target


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("half")
    tiny = make_sentence_model(root / "tiny")
    return _with_words(tiny, root / "fp32", "float32"), _with_words(tiny, root / "fp16", "float16")


def test_the_table_stays_fp16_and_the_vectors_do_not_move(folders: tuple[Path, Path]) -> None:
    import torch

    from ragbrain.models.e5.half import HalfEmbedding
    from ragbrain.models.sentence import SentenceEmbeddings

    full, half = folders
    reference = np.asarray(load_embeddings(full, "torch").embed_documents(TEXTS))
    loaded = load_embeddings(half, "torch", half_word_embeddings=True)
    assert isinstance(loaded, SentenceEmbeddings)
    table = loaded.model.embeddings.word_embeddings
    assert isinstance(table, HalfEmbedding) and table.weight.dtype == torch.float16
    assert {p.dtype for p in loaded.model.parameters()} == {torch.float32}
    got = np.asarray(loaded.embed_documents(TEXTS))
    np.testing.assert_allclose(got, reference, atol=1e-6)
    np.testing.assert_allclose(np.asarray(loaded.embed_query(TEXTS[0])), reference[0], atol=1e-6)


def test_any_loader_reads_the_fp16_folder_as_fp32(folders: tuple[Path, Path]) -> None:
    full, half = folders
    reference = np.asarray(load_embeddings(full, "torch").embed_documents(TEXTS))
    plain = np.asarray(load_embeddings(half, "torch").embed_documents(TEXTS))
    np.testing.assert_allclose(plain, reference, atol=1e-6)
