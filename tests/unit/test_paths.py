"""Store and notes paths given relative, with ``~`` or through a link: every entry point
resolves them once (no ``relative path can't be expressed as a file URI``), and a first
ingest that fails leaves no store behind."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragbrain.cli import app
from ragbrain.ingest import ingest
from ragbrain.mcp_server import RagbrainService
from ragbrain.paths import STORE_ENV, default_store_path
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.store import Store
from ragbrain.store.processes import Follower
from tests.support.fakes import NOTES, BagOfWordsEmbeddings

runner = CliRunner()


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, notes_dir: Path) -> Path:
    """The current folder is ``tmp_path``, which holds ``notes``."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def fake_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ragbrain ingest` writing with the fake model (no model loads)."""
    import ragbrain.cli.notes

    def open_fake(notes: Path | None, store: Path | None, *_: object) -> Store:
        return Store.open(store, BagOfWordsEmbeddings(), create=True)

    monkeypatch.setattr(ragbrain.cli.notes, "_open_for_writing", open_fake)


def test_a_follower_of_a_relative_path_reads_its_file(in_tmp: Path) -> None:
    Store.open(in_tmp / "s", BagOfWordsEmbeddings(), create=True)
    follower = Follower(Path("s/chroma.sqlite3"))
    follower.settle()  # was ValueError: relative path can't be expressed as a file URI
    assert follower.sqlite.is_absolute() and not follower.changed()


def test_a_relative_store_is_opened_written_and_followed(in_tmp: Path) -> None:
    writer = Store.open("store", BagOfWordsEmbeddings(), create=True)
    ingest("notes", writer)
    assert writer.folder == in_tmp / "store"
    reader = Store.open("./store", BagOfWordsEmbeddings())
    assert reader.count() == len(NOTES)
    text = "zorblax flux capacitor"
    writer.upsert(["new"], [text], [{"type": "note"}], writer.embeddings.embed_documents([text]))
    assert reader.search(text, 1)[0]["id"] == "new"  # followed through the resolved path


def test_home_link_and_environment_paths_are_resolved(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ingest("notes", Store.open("store", BagOfWordsEmbeddings(), create=True))
    monkeypatch.setenv("HOME", str(in_tmp))
    (in_tmp / "link").symlink_to(in_tmp / "store")
    for given in ("~/store", "link", in_tmp / "link"):
        store = Store.open(given, BagOfWordsEmbeddings())
        assert store.folder == in_tmp / "store" and store.count() == len(NOTES), given
    monkeypatch.setenv(STORE_ENV, "store")
    assert default_store_path() == in_tmp / "store"
    assert Store.open(None, BagOfWordsEmbeddings()).count() == len(NOTES)


def test_from_store_and_the_mcp_service_take_a_relative_store(in_tmp: Path) -> None:
    ingest("notes", Store.open("store", BagOfWordsEmbeddings(), create=True))
    retriever = CorrectiveRetriever.from_store(
        "store", embeddings=BagOfWordsEmbeddings(), critic=None, check_model=False
    )
    assert retriever.invoke("nightly backup failed")
    service = RagbrainService(
        "store", embeddings=BagOfWordsEmbeddings(), critic=None, allowed=["notes"]
    )
    assert service.stats().chunks == len(NOTES)
    assert service.store_path == in_tmp / "store"


def test_cli_ingest_takes_relative_notes_and_store(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cli(monkeypatch)
    result = runner.invoke(app, ["ingest", "notes", "--store", "store"])
    assert result.exit_code == 0, result.output
    assert f"-> {in_tmp / 'store'}" in result.stdout
    monkeypatch.setenv(STORE_ENV, "store")
    again = runner.invoke(app, ["ingest", "notes"])
    assert again.exit_code == 0, again.output
    assert f"0 chunks added, {len(NOTES)} unchanged" in again.stdout


@pytest.mark.parametrize("error", [RuntimeError("boom"), ValueError("bad")])
def test_a_first_ingest_that_fails_leaves_no_store_behind(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch, error: Exception
) -> None:
    import ragbrain.ingest as ingest_module

    fake_cli(monkeypatch)

    def failing(*_: object, **__: object) -> Callable[..., object]:
        raise error

    monkeypatch.setattr(ingest_module, "ingest", failing)
    result = runner.invoke(app, ["ingest", "notes", "--store", "store"])
    assert result.exit_code != 0
    assert not (in_tmp / "store").exists()


def test_from_vectorstore_follows_a_relative_persist_directory(in_tmp: Path) -> None:
    from langchain_chroma import Chroma
    from langchain_core.documents import Document

    docs = [
        Document(page_content=t, metadata={"source": s, "type": "note"}) for s, t in NOTES.items()
    ]
    vectorstore = Chroma.from_documents(
        docs, BagOfWordsEmbeddings(), collection_name="mine", persist_directory="chroma"
    )
    retriever = CorrectiveRetriever.from_vectorstore(vectorstore, critic=None)
    assert retriever.invoke("nightly backup failed")
    vectorstore.add_texts(
        ["zorblax flux capacitor"], metadatas=[{"source": "z.md", "type": "note"}]
    )
    assert retriever.invoke("zorblax flux capacitor")[0].metadata["source"] == "z.md"
