"""The chunk budget is counted in the store's model's own tokens (e5-small), else MiniLM's."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Regex, Tokenizer, pre_tokenizers
from tokenizers.models import WordLevel

from ragbrain.ingest import ingest
from ragbrain.ingest.chunks import CHUNK_TOKENS, engine_counter, splitter, splitter_for
from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, E5_SMALL
from ragbrain.store import Store
from tests.support.fakes import BagOfWordsEmbeddings


def char_tokenizer() -> Tokenizer:
    """Every character but a newline is one token."""
    engine = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    engine.pre_tokenizer = pre_tokenizers.Split(Regex("."), "isolated")
    return engine


class WithTokenizer(BagOfWordsEmbeddings):
    """A fake model under a registered name, with (or without) a tokenizer of its own."""

    def __init__(self, name: str, tokenizer: Tokenizer | None) -> None:
        super().__init__()
        self.model_name = name
        self.tokenizer = tokenizer


@pytest.mark.parametrize(
    ("name", "has_tokenizer", "own"),
    [
        (E5_SMALL, True, True),
        (E5_SMALL, False, False),
        (DEFAULT_EMBEDDING_MODEL, True, False),
        ("bag-of-words-64", True, False),
    ],
    ids=["e5-own-tokens", "e5-stand-in-without-tokenizer", "minilm", "unregistered"],
)
def test_which_tokens_count(name: str, has_tokenizer: bool, own: bool) -> None:
    embeddings = WithTokenizer(name, char_tokenizer() if has_tokenizer else None)
    chosen = splitter_for(embeddings)
    assert (chosen is not splitter()) is own
    assert splitter_for(embeddings) is chosen  # one splitter per loaded tokenizer


def test_an_e5_store_chunks_by_its_own_tokens(tmp_path: Path, write_notes) -> None:  # type: ignore[no-untyped-def]
    notes = write_notes({"a.md": " ".join(f"w{i}" for i in range(400))})
    by_e5 = Store.open(tmp_path / "e5", WithTokenizer(E5_SMALL, char_tokenizer()), create=True)
    minilm = WithTokenizer(DEFAULT_EMBEDDING_MODEL, None)
    by_minilm = Store.open(tmp_path / "m", minilm, create=True)
    ingest(notes, by_e5)
    ingest(notes, by_minilm)
    e5_texts = by_e5.collection.get()["documents"] or []
    minilm_texts = by_minilm.collection.get()["documents"] or []
    assert max(len(t) for t in e5_texts) <= CHUNK_TOKENS  # one token per character
    assert max(len(t) for t in minilm_texts) > CHUNK_TOKENS
    assert len(e5_texts) > len(minilm_texts)


def test_counts_ignore_the_models_truncation() -> None:
    engine = char_tokenizer()
    count = engine_counter(engine)
    engine.enable_truncation(5)  # what a model call leaves behind
    assert count("x" * 300) == 300
