"""The ONNX export cache: an export is used only when its manifest matches its files; a
damaged one is exported again with a warning; a failed export leaves nothing behind."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragbrain.models.onnx_cache import (
    MANIFEST,
    OnnxExportError,
    cached_export,
    onnx_cache,
    problem,
    source_key,
)


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


class Exporter:
    """Writes one model file; counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, folder: Path) -> dict[str, Any]:
        self.calls += 1
        (folder / "model.onnx").write_bytes(b"weights" * 100)
        return {"source": "test"}


def test_exports_once_then_reuses() -> None:
    exporter = Exporter()
    first = cached_export("m-1", exporter)
    second = cached_export("m-1", exporter)
    assert first == second == onnx_cache() / "m-1"
    assert exporter.calls == 1
    manifest = json.loads((first / MANIFEST).read_text())
    assert set(manifest["files"]) == {"model.onnx"} and manifest["source"] == "test"
    assert problem(first) is None


def _truncate(folder: Path) -> None:
    (folder / "model.onnx").write_bytes(b"weig")


def _flip(folder: Path) -> None:
    path = folder / "model.onnx"
    before = path.stat().st_mtime_ns
    data = bytearray(path.read_bytes())
    data[3] ^= 1
    path.write_bytes(bytes(data))
    # an edit comes later than the export (the clock may not have ticked within this test)
    os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated": (_truncate, "bytes, not"),
    "one byte changed": (_flip, "sha256"),
    "model missing": (lambda f: (f / "model.onnx").unlink(), "model.onnx is missing"),
    "manifest missing": (lambda f: (f / MANIFEST).unlink(), "missing or unreadable"),
    "manifest garbage": (lambda f: (f / MANIFEST).write_text("{not json"), "missing or unreadable"),
    "manifest empty": (
        lambda f: (f / MANIFEST).write_text(json.dumps({"format": 1, "files": {}})),
        "unknown format",
    ),
}


@pytest.mark.parametrize(("damage", "reason"), DAMAGE.values(), ids=DAMAGE.keys())
def test_damaged_export_is_exported_again(
    damage: Callable[[Path], None], reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    exporter = Exporter()
    folder = cached_export("m-1", exporter)
    damage(folder)
    assert reason in (problem(folder) or "")
    with caplog.at_level(logging.WARNING, logger="ragbrain.models.onnx_cache"):
        again = cached_export("m-1", exporter)
    assert exporter.calls == 2
    assert problem(again) is None
    assert "damaged ONNX export" in caplog.text and reason in caplog.text


def test_an_untouched_export_is_not_hashed_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragbrain.models import onnx_cache as module

    folder = cached_export("m-1", Exporter())
    hashed: list[Path] = []
    real = module._sha256
    monkeypatch.setattr(module, "_sha256", lambda path: hashed.append(path) or real(path))
    assert problem(folder) is None and hashed == []  # size and time as recorded
    _flip(folder)
    assert "sha256" in (problem(folder) or "") and hashed == [folder / "model.onnx"]


def test_an_older_manifest_gets_the_times_once_its_files_check_out() -> None:
    folder = cached_export("m-1", Exporter())
    manifest = json.loads((folder / MANIFEST).read_text())
    for entry in manifest["files"].values():
        del entry["mtime_ns"]
    (folder / MANIFEST).write_text(json.dumps(manifest))
    exporter = Exporter()
    assert cached_export("m-1", exporter) == folder and exporter.calls == 0
    stamped = json.loads((folder / MANIFEST).read_text())["files"]["model.onnx"]
    assert stamped["mtime_ns"] == (folder / "model.onnx").stat().st_mtime_ns


def test_failed_export_leaves_nothing(cache: Path) -> None:
    def fail(folder: Path) -> dict[str, Any]:
        (folder / "model.onnx").write_bytes(b"half")
        raise OSError("No space left on device")

    with pytest.raises(OnnxExportError, match=r"No space left on device.*RAGBRAIN_BACKEND=torch"):
        cached_export("m-1", fail)
    assert list((cache / "onnx").iterdir()) == []


def test_source_key_follows_the_source(tmp_path: Path) -> None:
    source = tmp_path / "model.safetensors"
    source.write_bytes(b"a")
    key = source_key([source], "int8")
    assert key == source_key([source], "int8")
    assert key != source_key([source], "fp16")
    source.write_bytes(b"ab")
    assert key != source_key([source], "int8")


def test_the_export_message_names_the_model_folder_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragbrain.models import onnx_backend
    from ragbrain.models.embeddings import minilm_path

    said: list[str] = []

    def record(name: str, export: object, *, what: str = "model") -> Path:
        said.append(what)
        return Path(name)

    monkeypatch.setattr(onnx_backend, "cached_export", record)
    onnx_backend.export_embedding_model(minilm_path())
    assert said == [f"embedding model in {minilm_path()}"]  # not "embedding model model"
