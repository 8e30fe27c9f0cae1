"""Fast, clean failures: bad CLI input is refused before any model or store loads, a failed
first ingest leaves no store behind, and chunking counts tokens without the tokenizer's
length warning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragbrain.cli import app
from ragbrain.errors import StoreUnavailableError
from tests.support.fakes import BagOfWordsEmbeddings

pytestmark = pytest.mark.slow

HEAVY = ("torch", "chromadb", "transformers", "langgraph", "sentence_transformers")
PROBE = """
import json, sys
from ragbrain.cli import app
try:
    app(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in sys.argv[1].split(",") if m in sys.modules)
print(json.dumps({"code": code, "heavy": heavy}))
"""


@pytest.mark.parametrize(
    "args",
    [
        ["query", "   "],
        ["query", "redis", "--k", "0"],
        ["query", "redis", "--k", "101"],
        ["query", "redis", "--store", "{tmp}/missing"],
        ["query", "redis", "--server", "localhost:8000"],
        ["ingest", "{tmp}/no-such-notes", "--store", "{tmp}/new"],
        ["ingest", "{tmp}", "--exclude", "bad\\", "--store", "{tmp}/new"],
        ["watch", "{tmp}", "--include", "bad\\", "--store", "{tmp}/new"],
    ],
    ids=[
        "empty",
        "k0",
        "k101",
        "missing-store",
        "bad-server",
        "missing-notes",
        "bad-pattern",
        "watch-bad-pattern",
    ],
)
def test_bad_input_is_refused_before_anything_heavy_loads(tmp_path: Path, args: list[str]) -> None:
    filled = [a.format(tmp=tmp_path) for a in args]
    result = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(HEAVY), *filled],
        capture_output=True,
        text=True,
        check=False,
        env={**_env(), "RAGBRAIN_STORE": str(tmp_path / "default-store")},
    )
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert payload == {"code": 2, "heavy": []}, result.stderr
    assert "error:" in result.stderr
    assert not (tmp_path / "new").exists()


def _env() -> dict[str, str]:
    import os

    src = str(Path(__file__).resolve().parent.parent.parent / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}


def test_a_missing_notes_folder_leaves_no_new_store(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["ingest", str(tmp_path / "notthere"), "--store", str(tmp_path / "new")]
    )
    assert result.exit_code == 2 and "no such file or folder" in result.stderr
    assert not (tmp_path / "new").exists()


def test_an_ingest_that_fails_after_creating_the_store_removes_it(
    tmp_path: Path, notes_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ragbrain.models.embeddings.default_embeddings", BagOfWordsEmbeddings)

    def broken(*args: object, **kwargs: object) -> None:
        raise StoreUnavailableError("the disk went away")

    monkeypatch.setattr("ragbrain.ingest.ingest", broken)
    new, kept = tmp_path / "new", tmp_path / "kept"
    result = CliRunner().invoke(app, ["ingest", str(notes_dir), "--store", str(new)])
    assert result.exit_code == 1 and "the disk went away" in result.stderr
    assert not new.exists()
    kept.mkdir()  # a store folder that was there before is never removed
    CliRunner().invoke(app, ["ingest", str(notes_dir), "--store", str(kept)])
    assert kept.is_dir()


def test_chunking_counts_tokens_as_the_transformers_tokenizer_does() -> None:
    from transformers import AutoTokenizer

    from ragbrain.ingest.chunks import token_counter
    from ragbrain.models.embeddings import minilm_path

    tokenizer = AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)
    texts = [
        "",
        "Why did the nightly backup fail?",
        "WAL mode: readers don't block the writer (SQLite >= 3.7).",
        "バックアップが失敗した理由は何ですか。",
        "การสำรองข้อมูลล้มเหลวเพราะอะไร",
        "数据库备份为什么失败？",
        "word " * 900,
        "# Heading\n\n- [link](a/b.md)\n- `code_here()`\n\n```py\nx = 1\n```",
    ]
    count = token_counter()
    assert [count(t) for t in texts] == [len(tokenizer.tokenize(t)) for t in texts]


def test_a_long_note_is_chunked_without_the_length_warning(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from ragbrain.ingest.chunks import chunk_note
    from ragbrain.ingest.files import NoteFile

    note = NoteFile(
        root=tmp_path, path=tmp_path / "long.md", type="note", title="t", body="word " * 3000
    )
    chunks = chunk_note(note)
    assert len(chunks) > 10
    assert "Token indices sequence length" not in capfd.readouterr().err
