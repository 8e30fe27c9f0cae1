"""The plain-torch BERT (ragbrain.bert) against the libraries it replaces at load time:
sentence-transformers for the embeddings, transformers for the critic's classifier."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragbrain.bert import BertConfig
from ragbrain.embeddings import minilm_path
from ragbrain.errors import CriticLoadError

pytestmark = pytest.mark.slow

TEXTS = [
    "  Why did the nightly backup fail?  ",
    "x",
    "バックアップが失敗した理由は何ですか。",
    "การสำรองข้อมูลล้มเหลวเพราะอะไร",
    "word " * 700,  # past the 256-token window: cut as sentence-transformers cuts it
    "The nightly backup to S3 failed because the credentials expired.",
] * 6


def test_embeddings_equal_sentence_transformers() -> None:
    from langchain_huggingface import HuggingFaceEmbeddings

    from ragbrain.minilm import MiniLMEmbeddings

    ours = MiniLMEmbeddings(minilm_path())
    theirs = HuggingFaceEmbeddings(
        model_name=str(minilm_path()),
        model_kwargs={"device": "cpu"},
        encode_kwargs={"normalize_embeddings": True, "batch_size": 32},
    )
    assert ours.model_name == theirs.model_name  # stores record the same model name
    got, want = np.array(ours.embed_documents(TEXTS)), np.array(theirs.embed_documents(TEXTS))
    assert got.shape == want.shape and np.abs(got - want).max() < 1e-5
    query = "what does WAL mode do"
    assert np.abs(np.array(ours.embed_query(query)) - theirs.embed_query(query)).max() < 1e-5
    assert ours.embed_documents([]) == []


def test_the_critic_model_equals_transformers() -> None:
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    from ragbrain.critic import TransformerCritic, default_critic_path

    folder = default_critic_path()
    if not folder.is_dir():
        pytest.skip("no shipped critic installed")
    from ragbrain.critic.folder import build_model, read_calibration

    critic = TransformerCritic(folder)
    ours_model = build_model(folder, read_calibration(folder))  # unquantized, as loaded
    reference = AutoModelForSequenceClassification.from_config(
        AutoConfig.from_pretrained(folder, local_files_only=True)
    )
    missing, unexpected = reference.load_state_dict(ours_model.state_dict(), strict=False)
    assert not unexpected and all("position_ids" in name for name in missing)
    reference.eval()
    query, passages = "why did the backup fail", [t.strip() for t in TEXTS[:6]]
    batch = critic.pair_batch(*critic.encode(query, passages))
    with torch.inference_mode():
        ours = ours_model(**batch).logits
        theirs = reference(**batch).logits
    assert torch.allclose(ours, theirs, atol=1e-5)


def test_the_critic_engine_is_the_fast_tokenizers() -> None:
    from ragbrain.critic import TransformerCritic, default_critic_path

    folder = default_critic_path()
    if not folder.is_dir():
        pytest.skip("no shipped critic installed")
    critic = TransformerCritic(folder)
    for text in TEXTS[:6]:
        assert (
            critic._words.encode(text, add_special_tokens=False).ids
            == critic.tokenizer(text, add_special_tokens=False)["input_ids"]
        )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"model_type": "roberta"}, "not 'bert'"),
        ({"hidden_act": "relu"}, "not 'gelu'"),
        ({"position_embedding_type": "relative_key"}, "absolute"),
        ({}, "missing"),
    ],
    ids=["other-model", "other-activation", "relative-positions", "missing-fields"],
)
def test_an_unsupported_config_is_refused(
    tmp_path: Path, config: dict[str, str], message: str
) -> None:
    base = json.loads((minilm_path() / "config.json").read_text(encoding="utf-8"))
    raw = {**base, **config} if config else {"model_type": "bert"}
    (tmp_path / "config.json").write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(CriticLoadError, match=message):
        BertConfig.read(tmp_path / "config.json")
