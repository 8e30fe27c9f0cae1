"""`ingest --re-embed`: a store rebuilt with another model, the old one kept until it is done."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragbrain.cli import app
from ragbrain.errors import InvalidInputError, StoreMismatchError, StoreNotFoundError
from ragbrain.ingest import ingest
from ragbrain.ingest.reembed import re_embed, staging_folder
from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, E5_SMALL
from ragbrain.store import MODEL_KEY, Store
from tests.support.fakes import Named

runner = CliRunner()


class FailsAfter(Named):
    """Embeds ``batches`` calls of documents, then raises, as a model or a disk might."""

    def __init__(self, name: str, batches: int) -> None:
        super().__init__(name, 384)
        self.left = batches

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.left <= 0:
            raise OSError("No space left on device")
        self.left -= 1
        return super().embed_documents(texts)


@pytest.fixture
def big_notes(write_notes) -> Path:  # type: ignore[no-untyped-def]
    """Enough notes for several embedding batches (ingest embeds 64 chunks a call)."""
    return write_notes({f"n{i:03}.md": _text(i) for i in range(150)})  # type: ignore[no-any-return]


def _text(i: int) -> str:
    """Twelve words of a 5,000-word vocabulary: every note far from the others."""
    return " ".join(f"w{(i * 7919 + j * 104729) % 5000}" for j in range(12))


def _state(folder: Path) -> tuple[str, int, list[str]]:
    store = Store.open(folder)
    got = store.collection.get(include=[])
    return str((store.collection.metadata or {})[MODEL_KEY]), store.count(), sorted(got["ids"])


def test_a_store_is_re_embedded_and_keeps_its_notes(
    registered_models: dict[str, Named], big_notes: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "s"
    ingest(big_notes, Store.open(folder, registered_models[DEFAULT_EMBEDDING_MODEL], create=True))
    before = _state(folder)
    report = re_embed(big_notes, folder, registered_models[E5_SMALL])
    after = _state(folder)
    assert before[0] == DEFAULT_EMBEDDING_MODEL and after[0] == E5_SMALL
    assert after[1:] == before[1:] and report.added == before[1] == 150
    reopened = Store.open(folder)
    assert reopened.embeddings is registered_models[E5_SMALL]
    assert reopened.search(_text(7), 1)[0]["metadata"]["source"] == "n007.md"
    assert not staging_folder(folder).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes", "s"]


def test_a_failure_midway_leaves_the_old_store_intact(
    registered_models: dict[str, Named], big_notes: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "s"
    ingest(big_notes, Store.open(folder, registered_models[DEFAULT_EMBEDDING_MODEL], create=True))
    before = _state(folder)
    with pytest.raises(OSError, match="No space left"):
        re_embed(big_notes, folder, FailsAfter(E5_SMALL, batches=1))
    assert _state(folder) == before
    assert not staging_folder(folder).exists()
    old = Store.open(folder)
    assert old.embeddings is registered_models[DEFAULT_EMBEDDING_MODEL]
    assert old.search(_text(7), 1)[0]["metadata"]["source"] == "n007.md"
    # The next run starts afresh and completes.
    re_embed(big_notes, folder, registered_models[E5_SMALL])
    assert _state(folder)[0] == E5_SMALL


def test_a_half_built_folder_of_a_killed_run_is_replaced(
    registered_models: dict[str, Named], notes_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "s"
    ingest(notes_dir, Store.open(folder, registered_models[DEFAULT_EMBEDDING_MODEL], create=True))
    staging_folder(folder).mkdir()
    (staging_folder(folder) / "chroma.sqlite3").write_bytes(b"half")
    re_embed(notes_dir, folder, registered_models[E5_SMALL])
    assert _state(folder)[0] == E5_SMALL and not staging_folder(folder).exists()


@pytest.mark.parametrize(
    ("notes", "error", "match"),
    [
        ("other", InvalidInputError, r"holds notes ingested from .*notes.*would lose them"),
        ("file", InvalidInputError, "not a folder"),
        ("missing-store", StoreNotFoundError, "No ragbrain store"),
    ],
    ids=["another-folder", "a-file", "no-store"],
)
def test_re_embedding_from_the_wrong_place_is_refused(
    registered_models: dict[str, Named],
    notes_dir: Path,
    tmp_path: Path,
    notes: str,
    error: type[Exception],
    match: str,
) -> None:
    folder = tmp_path / "s"
    ingest(notes_dir, Store.open(folder, registered_models[DEFAULT_EMBEDDING_MODEL], create=True))
    before = _state(folder)
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.md").write_text("# X\n\nx", encoding="utf-8")
    path = {"other": other, "file": notes_dir / "bug" / "backup.md"}.get(notes, notes_dir)
    target = tmp_path / "nothing" if notes == "missing-store" else folder
    with pytest.raises(error, match=match):
        re_embed(path, target, registered_models[E5_SMALL])
    assert _state(folder) == before


def test_another_writer_holds_the_store(
    registered_models: dict[str, Named],
    notes_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragbrain.errors import StoreLockedError

    monkeypatch.setenv("RAGBRAIN_LOCK_WAIT", "0.2")

    folder = tmp_path / "s"
    store = Store.open(folder, registered_models[DEFAULT_EMBEDDING_MODEL], create=True)
    ingest(notes_dir, store)
    with store.writing(), pytest.raises(StoreLockedError, match="locked by another writer"):
        re_embed(notes_dir, folder, registered_models[E5_SMALL])


def test_cli_mixing_models_names_re_embed_and_re_embed_works(
    registered_models: dict[str, Named], notes_dir: Path, tmp_path: Path
) -> None:
    store = str(tmp_path / "s")
    made = runner.invoke(app, ["ingest", str(notes_dir), "--store", store, "--embedding", "minilm"])
    assert made.exit_code == 0, made.output
    mixed = runner.invoke(
        app, ["ingest", str(notes_dir), "--store", store, "--embedding", "e5-small"]
    )
    assert mixed.exit_code == 2
    assert "--re-embed" in mixed.output and "all-MiniLM-L6-v2" in mixed.output
    done = runner.invoke(
        app, ["ingest", str(notes_dir), "--store", store, "--embedding", "e5-small", "--re-embed"]
    )
    assert done.exit_code == 0, done.output
    assert "re-embedded with e5-small: 6 files: 6 chunks added" in done.output
    assert Store.open(store).embeddings is registered_models[E5_SMALL]
    with pytest.raises(StoreMismatchError, match="--re-embed"):
        Store.open(store, registered_models[DEFAULT_EMBEDDING_MODEL])


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--server", "http://localhost:1"], "a server's collection cannot be swapped"),
        ([], "needs the model to re-embed with"),
    ],
    ids=["server", "no-model"],
)
def test_cli_re_embed_refuses_what_it_cannot_do(
    registered_models: dict[str, Named],
    notes_dir: Path,
    tmp_path: Path,
    extra: list[str],
    match: str,
) -> None:
    store = ["--store", str(tmp_path / "s")] if not extra else []
    got = runner.invoke(app, ["ingest", str(notes_dir), *store, *extra, "--re-embed"])
    assert got.exit_code == 2
    assert match in " ".join(got.output.split())


def test_doctor_names_the_re_embed_command_with_the_notes_folder(
    registered_models: dict[str, Named],
    write_notes,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    notes = write_notes(
        {f"n{i}.md": f"# บันทึก {i}\n\nการประชุมเรื่องฐานข้อมูลครั้งที่ {i}" for i in range(4)}
    )
    store = str(tmp_path / "s")
    made = runner.invoke(app, ["ingest", str(notes), "--store", store, "--embedding", "minilm"])
    assert made.exit_code == 0, made.output
    report = " ".join(runner.invoke(app, ["doctor", "--store", store]).output.split())
    assert f"ragbrain ingest {notes} --store {store} --embedding e5-small --re-embed" in report
