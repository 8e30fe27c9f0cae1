"""SentenceEmbeddings and ragbrain.models.bert give sentence-transformers' and transformers' numbers
(tiny models built here, the installed MiniLM, the converted e5), and refuse bad folders."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragbrain.errors import ModelLoadError
from ragbrain.models.sentence import SentenceEmbeddings, is_bert_folder
from tests.support.tiny_models import make_sentence_model

TEXTS = [
    "the quick brown fox",
    "a cell of the brain\nand the light",
    "",
    "   notes  search ",
    "paris " * 80,  # longer than the tiny model's 64-token window: truncated
    "Ünïcödé çafé 東京",
    "[CLS] [SEP] [PAD] <s> </s>",
    "x",
    "the quick brown fox",  # a tie in length with the first
]


def _reference(folder: Path, query_prompt: str = "", passage_prompt: str = "") -> Any:
    """sentence-transformers over ``folder`` as ragbrain loaded it before (the reference)."""
    from langchain_huggingface import HuggingFaceEmbeddings

    kwargs: dict[str, Any] = {"normalize_embeddings": True, "batch_size": 4}
    passages = {**kwargs, **({"prompt": passage_prompt} if passage_prompt else {})}
    queries = {**kwargs, **({"prompt": query_prompt} if query_prompt else {})}
    return HuggingFaceEmbeddings(
        model_name=str(folder),
        model_kwargs={"device": "cpu", "local_files_only": True},
        encode_kwargs=passages,
        query_encode_kwargs=queries,
    )


def _assert_same(ours: Any, theirs: Any, texts: list[str]) -> None:
    got = np.asarray(ours.embed_documents(texts))
    want = np.asarray(theirs.embed_documents(texts))
    assert got.shape == want.shape
    assert np.abs(got - want).max() <= 1e-5
    for text in texts[:3]:
        diff = np.abs(np.asarray(ours.embed_query(text)) - np.asarray(theirs.embed_query(text)))
        assert diff.max() <= 1e-5


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_tiny_model_vectors_equal_sentence_transformers(tmp_path: Path, pooling: str) -> None:
    folder = make_sentence_model(tmp_path / pooling, pooling=pooling)
    ours = SentenceEmbeddings(folder, batch_size=4)
    _assert_same(ours, _reference(folder), TEXTS)
    assert ours.model_name == str(folder)


def test_prompts_go_before_each_text_as_sentence_transformers_puts_them(tmp_path: Path) -> None:
    folder = make_sentence_model(tmp_path / "tiny")
    ours = SentenceEmbeddings(folder, batch_size=4, query_prompt="query: ", passage_prompt="a ")
    _assert_same(ours, _reference(folder, "query: ", "a "), TEXTS)
    plain = SentenceEmbeddings(folder, batch_size=4)
    assert ours.embed_query("the fox") != plain.embed_query("the fox")


def test_the_batch_size_does_not_change_the_vectors(tmp_path: Path) -> None:
    folder = make_sentence_model(tmp_path / "tiny")
    one = np.asarray(SentenceEmbeddings(folder, batch_size=1).embed_documents(TEXTS))
    many = np.asarray(SentenceEmbeddings(folder, batch_size=32).embed_documents(TEXTS))
    np.testing.assert_allclose(one, many, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(many, axis=1), 1.0, atol=1e-6)


@pytest.mark.slow
def test_minilm_vectors_equal_sentence_transformers() -> None:
    from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, minilm_path, model_name_of

    long = "why did the nightly backup fail " * 60  # over MiniLM's 256-token window
    ours = SentenceEmbeddings(minilm_path())
    _assert_same(ours, _reference(minilm_path()), [*TEXTS, long, "redis\n\ncache eviction"])
    assert model_name_of(ours) == DEFAULT_EMBEDDING_MODEL


@pytest.mark.slow
def test_e5_vectors_equal_sentence_transformers(converted: Path) -> None:
    import torch

    from ragbrain.models.e5.half import HalfEmbedding

    texts = [*TEXTS, "ขอบคุณมาก", "ありがとう ございます", "word " * 600]
    ours = SentenceEmbeddings(
        converted, query_prompt="query: ", passage_prompt="passage: ", half_word_embeddings=True
    )
    table = ours.model.embeddings.word_embeddings
    assert isinstance(table, HalfEmbedding) and table.weight.dtype == torch.float16
    _assert_same(ours, _reference(converted, "query: ", "passage: "), texts)


def test_the_light_critic_model_gives_transformers_logits(tmp_path: Path) -> None:
    import torch

    from ragbrain.critic.folder import build_model
    from ragbrain.models.bert import BertClassifier
    from tests.support.critic_folders import make_critic

    folder = make_critic(tmp_path / "critic")
    light, full = build_model(folder, {}, light=True), build_model(folder, {})
    assert isinstance(light, BertClassifier) and not isinstance(full, BertClassifier)
    ids = torch.tensor(
        [[101, 2054, 2003, 102, 7592, 102, 0, 0], [101, 2023, 102, 2003, 5, 6, 7, 102]]
    )
    batch = {
        "input_ids": ids,
        "attention_mask": (ids != 0).long(),
        "token_type_ids": torch.tensor([[0, 0, 0, 0, 1, 1, 0, 0], [0, 0, 0, 1, 1, 1, 1, 1]]),
    }
    with torch.inference_mode():
        got, want = light(**batch).logits, full(**batch).logits
        unpadded = {k: v[1:] for k, v in batch.items()}
        got_one, want_one = light(**unpadded).logits, full(**unpadded).logits
    assert torch.allclose(got, want, atol=1e-6) and torch.allclose(got_one, want_one, atol=1e-6)
    assert light.config.num_labels == 1
    assert light.get_input_embeddings().weight.shape == (30522, 16)


def test_training_calibrates_the_model_that_loads_later(tmp_path: Path) -> None:
    """``light_twin``: training fits thresholds on the classifier a folder loads as (int8
    logits depend on which positions each layer computes), holding the trained weights."""
    import torch

    from ragbrain.critic.folder import build_model, light_twin, quantized
    from ragbrain.models.bert import BertClassifier
    from tests.support.critic_folders import make_critic

    folder = make_critic(tmp_path / "critic")
    trained = build_model(folder, {})  # transformers' model, as training holds it
    twin = light_twin(trained)
    assert isinstance(twin, BertClassifier)
    ids = torch.tensor(
        [[101, 2054, 2003, 102, 7592, 2023, 102, 0], [101, 2023, 102, 5, 6, 7, 8, 102]]
    )
    batch = {"input_ids": ids, "attention_mask": (ids != 0).long()}
    loaded = quantized(build_model(folder, {}, light=True))  # what TransformerCritic runs
    with torch.inference_mode():
        assert torch.allclose(twin(**batch).logits, trained(**batch).logits, atol=1e-6)
        assert torch.equal(quantized(twin)(**batch).logits, loaded(**batch).logits)


def test_the_first_token_alone_equals_the_whole_outputs_first_row() -> None:
    """``first_only`` (what the critic's classifier runs) skips the last layer's work for
    every token but ``[CLS]``: the row it returns is the whole output's first, padded or not,
    through more than one layer."""
    import torch

    from ragbrain.models.bert import BertEncoder, BertShape

    torch.manual_seed(0)
    shape = BertShape(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        type_vocab_size=2,
        layer_norm_eps=1e-12,
        hidden_act="gelu",
        pad_token_id=0,
        num_labels=1,
    )
    model = BertEncoder(shape).eval()
    for parameter in model.parameters():
        torch.nn.init.normal_(parameter, std=0.5)
    ids = torch.tensor([[1, 7, 9, 2, 4, 0, 0, 0], [1, 3, 5, 2, 8, 6, 11, 2]])
    mask = (ids != 0).long()
    with torch.inference_mode():
        whole = model(ids, mask)
        first = model(ids, mask, first_only=True)
        first_unpadded = model(ids[1:], mask[1:], first_only=True)
    assert whole.shape == (2, 8, 16) and first.shape == (2, 1, 16)
    assert torch.allclose(first[:, 0], whole[:, 0], atol=1e-5)
    assert torch.allclose(first_unpadded[0, 0], whole[1, 0], atol=1e-5)
    # the other rows differ from the first: the test would see a wrong row
    assert not torch.allclose(whole[:, 1], whole[:, 0], atol=1e-3)


def _edit_config(**changes: Any) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        config.update(changes)
        (folder / "config.json").write_text(json.dumps(config))

    return edit


def _drop_key(key: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        del config[key]
        (folder / "config.json").write_text(json.dumps(config))

    return edit


def _drop_tensor(folder: Path) -> None:
    from safetensors.torch import load_file, save_file

    weights = load_file(str(folder / "model.safetensors"))
    del weights["encoder.layer.0.output.dense.bias"]
    save_file(weights, str(folder / "model.safetensors"))


def _wrong_shape(folder: Path) -> None:
    import torch
    from safetensors.torch import load_file, save_file

    weights = load_file(str(folder / "model.safetensors"))
    weights["encoder.layer.1.intermediate.dense.weight"] = torch.zeros(3, 3)
    save_file(weights, str(folder / "model.safetensors"))


def _pickle_only(folder: Path) -> None:
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04K\x01.")


def _pooling(mode: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        (folder / "1_Pooling" / "config.json").write_text(
            json.dumps({"word_embedding_dimension": 32, f"pooling_mode_{mode}_tokens": True})
        )

    return edit


BAD: list[tuple[str, Callable[[Path], None], str]] = [
    ("config-not-json", lambda f: (f / "config.json").write_text("{"), "not a readable"),
    ("relative-positions", _edit_config(position_embedding_type="relative_key"), "unsupported"),
    ("decoder", _edit_config(is_decoder=True), "is_decoder=True"),
    ("activation", _edit_config(hidden_act="swish"), "hidden_act='swish'"),
    ("no-hidden-size", _drop_key("hidden_size"), "incomplete BERT config"),
    ("missing-tensor", _drop_tensor, "missing \\['encoder.layer.0.output.dense.bias'\\]"),
    ("wrong-shape", _wrong_shape, "wrong shape"),
    (
        "truncated-weights",
        lambda f: (f / "model.safetensors").write_bytes(b"\0" * 9),
        "safetensors",
    ),
    ("pickle-only", _pickle_only, "safetensors"),
    ("no-tokenizer", lambda f: (f / "tokenizer.json").unlink(), "tokenizer.json"),
    ("garbage-tokenizer", lambda f: (f / "tokenizer.json").write_text("[]"), "tokenizer.json"),
    ("max-pooling", _pooling("max"), "not mean or cls"),
    ("pooling-not-json", lambda f: (f / "1_Pooling" / "config.json").write_text("x"), "JSON"),
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sentence_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.mark.parametrize(("name", "damage", "match"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_folder_raises_model_load_error(
    tiny: Path, tmp_path: Path, name: str, damage: Callable[[Path], None], match: str
) -> None:
    folder = tmp_path / name
    shutil.copytree(tiny, folder)
    damage(folder)
    with pytest.raises(ModelLoadError, match=match) as caught:
        SentenceEmbeddings(folder)
    assert str(folder) in str(caught.value)


def test_only_a_bert_folder_takes_this_path(tiny: Path, tmp_path: Path) -> None:
    from ragbrain.errors import InvalidInputError
    from ragbrain.models.backend import load_embeddings

    other = tmp_path / "other"
    shutil.copytree(tiny, other)
    _edit_config(model_type="roberta")(other)
    half = tmp_path / "half"
    shutil.copytree(tiny, half)
    _edit_config(dtype="float16")(half)
    untokenized = tmp_path / "untokenized"
    shutil.copytree(tiny, untokenized)
    (untokenized / "tokenizer.json").unlink()
    assert is_bert_folder(tiny)
    assert not any(is_bert_folder(f) for f in (other, half, untokenized, tmp_path / "missing"))
    assert isinstance(load_embeddings(tiny, "torch"), SentenceEmbeddings)
    with pytest.raises(InvalidInputError, match="needs a BERT folder"):
        load_embeddings(other, "torch", half_word_embeddings=True)
