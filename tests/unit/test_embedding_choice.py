"""Per-store embedding models: chosen at creation, recorded, used by every reader, never mixed."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import ragbrain.models.embeddings
from ragbrain.cli import app
from ragbrain.errors import InvalidInputError, StoreMismatchError
from ragbrain.hybrid import dense_trusted
from ragbrain.ingest import ingest
from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, E5_SMALL, embeddings_for
from ragbrain.settings import model_settings
from ragbrain.store import MODEL_KEY, Store
from tests.support.fakes import BagOfWordsEmbeddings

runner = CliRunner()


class Named(BagOfWordsEmbeddings):
    """The fake model under a registered model's name."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.model_name = name


@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch) -> dict[str, Named]:
    """Both registered models replaced by fakes that carry their names."""
    models = {DEFAULT_EMBEDDING_MODEL: Named(DEFAULT_EMBEDDING_MODEL), E5_SMALL: Named(E5_SMALL)}
    monkeypatch.setattr(
        ragbrain.models.embeddings, "default_embeddings", lambda: models[DEFAULT_EMBEDDING_MODEL]
    )
    monkeypatch.setattr(ragbrain.models.embeddings, "e5_embeddings", lambda: models[E5_SMALL])
    return models


@pytest.mark.parametrize(
    "name", ["e5", "MiniLM", "bag-of-words-512", ""], ids=["short", "case", "unregistered", "empty"]
)
def test_an_unknown_model_name_is_refused(name: str) -> None:
    with pytest.raises(InvalidInputError, match="choose one of minilm, e5-small"):
        embeddings_for(name)


@pytest.mark.parametrize(
    ("choice", "name"),
    [
        ("minilm", DEFAULT_EMBEDDING_MODEL),
        ("e5-small", E5_SMALL),
        (E5_SMALL, E5_SMALL),
        (None, DEFAULT_EMBEDDING_MODEL),
    ],
    ids=["minilm", "e5-small", "recorded-name", "default"],
)
def test_choices_and_recorded_names_load_their_model(
    fake_models: dict[str, Named], choice: str | None, name: str
) -> None:
    assert embeddings_for(choice) is fake_models[name]


def test_readers_use_the_model_the_store_records(
    fake_models: dict[str, Named], tmp_path: Path, notes_dir: Path
) -> None:
    created = Store.open(tmp_path / "s", fake_models[E5_SMALL], create=True)
    ingest(notes_dir, created)
    reopened = Store.open(tmp_path / "s")
    assert reopened.embeddings is fake_models[E5_SMALL]
    assert (reopened.collection.metadata or {})[MODEL_KEY] == E5_SMALL
    assert reopened.embedding_model == E5_SMALL


def test_a_new_store_without_a_choice_gets_the_default(
    fake_models: dict[str, Named], tmp_path: Path
) -> None:
    assert (
        Store.open(tmp_path / "s", create=True).embeddings is fake_models[DEFAULT_EMBEDDING_MODEL]
    )


@pytest.mark.parametrize(
    ("built", "opened"),
    [(DEFAULT_EMBEDDING_MODEL, E5_SMALL), (E5_SMALL, DEFAULT_EMBEDDING_MODEL)],
    ids=["minilm-store-e5-queries", "e5-store-minilm-queries"],
)
def test_mixing_two_models_of_one_dimension_is_refused(
    fake_models: dict[str, Named], tmp_path: Path, built: str, opened: str
) -> None:
    Store.open(tmp_path / "s", fake_models[built], create=True)
    with pytest.raises(StoreMismatchError, match=f"built with '{built}'.*--embedding"):
        Store.open(tmp_path / "s", fake_models[opened])


def test_a_store_of_an_unregistered_model_needs_its_embeddings(
    fake_embeddings: BagOfWordsEmbeddings, tmp_path: Path
) -> None:
    Store.open(tmp_path / "s", fake_embeddings, create=True)
    with pytest.raises(StoreMismatchError, match=r"bag-of-words-.*cannot load by name"):
        Store.open(tmp_path / "s")
    assert Store.open(tmp_path / "s", fake_embeddings).embeddings is fake_embeddings


@pytest.mark.parametrize(
    ("model", "query", "trusted"),
    [
        (DEFAULT_EMBEDDING_MODEL, "why did the backup fail", True),
        (DEFAULT_EMBEDDING_MODEL, "バックアップが失敗した理由", False),
        (DEFAULT_EMBEDDING_MODEL, "ทำไมการสำรองข้อมูลล้มเหลว", False),
        (E5_SMALL, "バックアップが失敗した理由", True),
        (E5_SMALL, "ทำไมการสำรองข้อมูลล้มเหลว", True),
        (E5_SMALL, "why did the backup fail", True),
    ],
    ids=["minilm-en", "minilm-ja", "minilm-th", "e5-ja", "e5-th", "e5-en"],
)
def test_dense_counts_where_the_store_model_reads_the_query(
    fake_models: dict[str, Named], tmp_path: Path, model: str, query: str, trusted: bool
) -> None:
    store = Store.open(tmp_path / "s", fake_models[model], create=True)
    assert dense_trusted(query, model_settings(store.model).reads) is trusted


def test_cli_ingest_chooses_and_query_follows(
    fake_models: dict[str, Named], notes_dir: Path, tmp_path: Path
) -> None:
    store = str(tmp_path / "s")
    made = runner.invoke(
        app, ["ingest", str(notes_dir), "--store", store, "--embedding", "e5-small"]
    )
    assert made.exit_code == 0, made.output
    assert Store.open(store).embeddings is fake_models[E5_SMALL]
    again = runner.invoke(app, ["ingest", str(notes_dir), "--store", store])  # keeps its model
    assert again.exit_code == 0, again.output
    found = runner.invoke(app, ["query", "backup", "--store", store, "--json", "--no-critic"])
    assert found.exit_code == 0, found.output
    mixed = runner.invoke(
        app, ["ingest", str(notes_dir), "--store", store, "--embedding", "minilm"]
    )
    assert mixed.exit_code == 2
    assert "multilingual-e5-small" in mixed.output and "--embedding" in mixed.output


def test_doctor_says_how_to_re_embed_a_minilm_store_of_thai_notes(
    fake_models: dict[str, Named],
    write_notes,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    notes = write_notes(
        {f"n{i}.md": f"# บันทึก {i}\n\nการประชุมเรื่องฐานข้อมูลครั้งที่ {i}" for i in range(4)}
    )
    store = str(tmp_path / "s")
    made = runner.invoke(app, ["ingest", str(notes), "--store", store, "--embedding", "minilm"])
    assert made.exit_code == 0, made.output
    report = runner.invoke(app, ["doctor", "--store", store])
    assert "reads English only" in report.output
    assert "--embedding e5-small" in report.output


THAI_NOTES = {f"n{i}.md": f"# บันทึก {i}\n\nการประชุมเรื่องฐานข้อมูลครั้งที่ {i}" for i in range(3)}


@pytest.mark.parametrize(
    ("notes", "model"),
    [
        (
            {"a.md": "# Backups\n\nThe nightly backup failed.", "b.md": "Redis cache notes."},
            DEFAULT_EMBEDDING_MODEL,
        ),
        (THAI_NOTES, E5_SMALL),
        (
            {**THAI_NOTES, **{f"e{i}.md": f"English note {i} about caching." for i in range(30)}},
            E5_SMALL,
        ),
        (
            {f"e{i}.md": f"English note {i} about caching." for i in range(40)}
            | {"t.md": "ภาษาไทย"},
            DEFAULT_EMBEDDING_MODEL,
        ),
    ],
    ids=["english", "thai", "one-in-eleven-thai", "one-in-forty-one-thai"],
)
def test_a_new_store_gets_the_model_its_notes_need(
    fake_models: dict[str, Named],
    write_notes,
    tmp_path: Path,
    notes: dict[str, str],
    model: str,  # type: ignore[no-untyped-def]
) -> None:
    store = str(tmp_path / "s")
    made = runner.invoke(app, ["ingest", str(write_notes(notes)), "--store", store])
    assert made.exit_code == 0, made.output
    assert Store.open(store).embeddings is fake_models[model]


def test_an_existing_store_keeps_its_model_whatever_the_notes(
    fake_models: dict[str, Named],
    write_notes,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    store = str(tmp_path / "s")
    english = write_notes({"a.md": "The nightly backup failed."})
    assert (
        runner.invoke(
            app, ["ingest", str(english), "--store", store, "--embedding", "e5-small"]
        ).exit_code
        == 0
    )
    assert runner.invoke(app, ["ingest", str(english), "--store", store]).exit_code == 0
    assert Store.open(store).embeddings is fake_models[E5_SMALL]
