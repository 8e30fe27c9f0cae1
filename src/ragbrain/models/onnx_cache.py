"""Exported ONNX models in the cache folder: written whole or not at all, checked on each load.

An export is a folder under ``cache_root()/onnx/`` holding the model files and a
``manifest.json`` with the size, sha256 and modification time of each. A folder whose
manifest is missing, unreadable or does not match its files (a process killed mid-export, a
full disk, an edited file) is exported again, with a warning; it is never used and never
silently replaced by the fp32 model. A file whose size and modification time are those the
manifest recorded is not hashed again (hashing a large export is a noticeable share of a
cold start); any other is.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ragbrain._util import write_text
from ragbrain.errors import RagbrainError
from ragbrain.paths import cache_root

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
FORMAT = 1


class OnnxExportError(RagbrainError, RuntimeError):
    """Exporting a model to ONNX (or quantizing it) failed; nothing was left in the cache."""


def onnx_cache() -> Path:
    """The folder of every exported model: ``cache_root()/onnx``."""
    return cache_root() / "onnx"


def source_key(files: Iterable[Path], *extra: str) -> str:
    """A short key naming one version of a model's source files (path, size and mtime of
    each, plus ``extra`` settings): a changed source gets a new export folder."""
    digest = hashlib.sha256()
    for path in sorted(files):
        stat = path.stat()
        digest.update(f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    for item in extra:
        digest.update(f"{item}\0".encode())
    return digest.hexdigest()[:16]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def problem(folder: Path) -> str | None:  # noqa: PLR0911 (one return per way to be damaged)
    """Why ``folder`` is not a complete, intact export (None: it is)."""
    manifest_path = folder / MANIFEST
    if not folder.is_dir():
        return "not exported yet"
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files: dict[str, Any] = manifest["files"]
        if manifest.get("format") != FORMAT or not isinstance(files, dict) or not files:
            return f"{MANIFEST} has an unknown format"
    except (OSError, ValueError, KeyError, TypeError):
        return f"{MANIFEST} is missing or unreadable"
    for name, entry in files.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        stat = path.stat()
        if stat.st_size != entry.get("size"):
            return f"{name} has {stat.st_size} bytes, not {entry.get('size')}"
        if stat.st_mtime_ns == entry.get("mtime_ns"):
            continue  # untouched since the manifest was written: its digest still holds
        if _sha256(path) != entry.get("sha256"):
            return f"{name} does not match its sha256"
    return None


def _write_manifest(folder: Path, details: dict[str, Any]) -> None:
    files = {
        path.name: {
            "size": path.stat().st_size,
            "sha256": _sha256(path),
            "mtime_ns": path.stat().st_mtime_ns,
        }
        for path in sorted(folder.iterdir())
        if path.is_file()
    }
    manifest = {"format": FORMAT, "files": files, **details}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def _stamp(folder: Path) -> None:
    """Record each file's modification time in an intact export's manifest that lacks them
    (one written before manifests held them), so later loads need not hash the files."""
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        files = manifest["files"]
        if all("mtime_ns" in entry for entry in files.values()):
            return
        for name, entry in files.items():
            entry["mtime_ns"] = (folder / name).stat().st_mtime_ns
        write_text(path, json.dumps(manifest, indent=2))
    except (OSError, ValueError, KeyError, TypeError) as exc:  # a read-only cache stays as it is
        log.debug("Could not stamp %s: %s", path, exc)


def cached_export(
    name: str, export: Callable[[Path], dict[str, Any]], *, what: str = "model"
) -> Path:
    """The intact export folder ``onnx_cache()/name``, exported first when it is absent or
    damaged.

    Args:
        name: The folder's name (carry a ``source_key`` in it so a new source re-exports).
        export: Writes the model files into the (empty, temporary) folder it gets and returns
            details to record in the manifest.
        what: What is exported, for the messages.

    Returns:
        The export folder, checked against its manifest.

    Raises:
        OnnxExportError: The export failed (the cache is left as it was, minus a damaged
            folder) or produced a folder that does not pass its own check.
    """
    target = onnx_cache() / name
    reason = problem(target)
    if reason is None:
        _stamp(target)
        return target
    if target.exists():
        log.warning(
            "%s: damaged ONNX export of the %s (%s); exporting it again.", target, what, reason
        )
    else:
        # A warning, as the e5 conversion's: the first command waits 20-40 s for it.
        log.warning("Exporting the %s to ONNX int8 in %s (once, 20-40 s).", what, target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{name}.", suffix=".tmp"))
    try:
        try:
            details = export(temporary)
            _write_manifest(temporary, details)
        except OnnxExportError:
            raise
        except Exception as exc:  # torch.onnx, onnx and onnxruntime raise many kinds
            raise OnnxExportError(
                f"Exporting the {what} to ONNX in {target} failed ({type(exc).__name__}: "
                f"{exc}); set RAGBRAIN_BACKEND=torch to run it without ONNX Runtime."
            ) from exc
        _replace(temporary, target)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    if (reason := problem(target)) is not None:
        raise OnnxExportError(f"{target}: the fresh ONNX export does not check out ({reason}).")
    return target


def _replace(temporary: Path, target: Path) -> None:
    """Put the finished folder ``temporary`` at ``target``: the old (damaged) one is moved
    aside first, then removed; a folder another process finished meanwhile is kept."""
    if target.exists():
        if problem(target) is None:  # another process won the race
            return
        aside = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".old"))
        os.replace(target, aside / target.name)
        shutil.rmtree(aside, ignore_errors=True)
    with contextlib.suppress(OSError):  # lost a race to a finished folder: keep that one
        os.replace(temporary, target)
