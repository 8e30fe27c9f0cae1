"""A critic cut from multilingual-e5-small (``--base e5-small``): trained on the toy task with the
real converted e5 weights, saved without its word embeddings, loaded with e5's tokenizer."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragbrain.critic.folder import (
    BASE_CHOICES,
    CALIBRATION_FILE,
    WEIGHTS_FILE,
    WORD_VECTORS,
    base_folder,
    default_critic_path,
    read_tensors,
)
from ragbrain.critic.model import TransformerCritic
from ragbrain.critic.training.train import train_critic
from tests.integration.test_critic_train import (
    RECIPE,
    TOPICS,
    TOY_MODEL,
    synthetic,
    tokenizer_pairs,
)

MINILM_BASE, E5_BASE = BASE_CHOICES["minilm"], BASE_CHOICES["e5-small"]

#: Text MiniLM's English WordPiece vocabulary reads as [UNK] or single characters.
THAI = "ระบบสำรองข้อมูลล้มเหลวเพราะดิสก์เต็ม"
JAPANESE = "東京の天気は晴れです"


@pytest.fixture(scope="module")
def e5_critic(tmp_path_factory: pytest.TempPathFactory, converted: Path) -> Iterator[Path]:
    """The toy recipe on the e5 base (the session's converted folder stands in for the cache)."""
    out = tmp_path_factory.mktemp("e5-critic") / "critic"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGBRAIN_CACHE", str(tmp_path_factory.mktemp("cache")))
        patch.setattr("ragbrain.models.e5.convert.model_folder", lambda: converted)
        train, dev, corpus = synthetic()
        recipe = dataclasses.replace(RECIPE, base=E5_BASE)
        train_critic(
            train, dev, corpus, out, recipe, sources={"toy": {}}, embedding_model=TOY_MODEL
        )
        yield out


def test_the_folder_records_its_base_and_leaves_its_word_embeddings_to_it(
    e5_critic: Path, converted: Path
) -> None:
    calibration = json.loads((e5_critic / CALIBRATION_FILE).read_text(encoding="utf-8"))
    assert calibration["base"] == E5_BASE and calibration["recipe"]["base"] == E5_BASE
    stored = read_tensors(e5_critic / WEIGHTS_FILE)
    assert WORD_VECTORS not in stored  # 250k x 384: it loads from the base
    assert not (e5_critic / "tokenizer.json").exists()  # nor is the tokenizer copied
    assert base_folder(E5_BASE) == converted
    assert base_folder(MINILM_BASE).is_dir()


def test_it_reads_scripts_minilm_cannot(e5_critic: Path) -> None:
    e5 = TransformerCritic(e5_critic)
    assert e5.model.config.vocab_size > 200_000
    for text in (THAI, JAPANESE):
        pieces = e5._words.encode(text, add_special_tokens=False)
        assert pieces.ids and e5._words.token_to_id("<unk>") not in pieces.ids, text
        # whole words, not one piece per character
        assert len(pieces.ids) < len(text), pieces.tokens
    shipped = TransformerCritic(default_critic_path())  # cut from MiniLM
    assert "[UNK]" in shipped._words.encode(THAI).tokens


def test_it_learns_the_toy_task(e5_critic: Path) -> None:
    critic = TransformerCritic(e5_critic)
    _, dev, _ = synthetic(seed=1)
    wins = sum(
        (scores := critic.score(item.query, [c.text for c in item.candidates]))[0] == max(scores)
        for item in dev
    )
    assert wins >= 0.8 * len(dev)


def test_pairs_are_cut_and_padded_as_its_tokenizer_makes_them(e5_critic: Path) -> None:
    critic = TransformerCritic(e5_critic)
    passages = [TOPICS["redis"], THAI, JAPANESE * 8, "", " ".join(TOPICS.values()) * 3]
    for query in ("jwt", JAPANESE, THAI * 6):
        made = critic.pair_batch(*critic.encode(query, passages))
        expected = tokenizer_pairs(critic, query, passages)
        for name in ("input_ids", "attention_mask"):
            assert made[name].tolist() == expected[name].tolist(), (query, name)
        # e5's tokenizer gives no type ids (the model reads zeros then); the critic passes zeros
        assert "token_type_ids" not in expected and not made["token_type_ids"].any()
    assert critic.pad_id == critic.tokenizer.pad_token_id != 0  # XLM-R pads with 1


def test_a_folder_naming_an_unknown_base_is_refused(e5_critic: Path, tmp_path: Path) -> None:
    import shutil

    from ragbrain.errors import CriticLoadError

    copy = tmp_path / "critic"
    shutil.copytree(e5_critic, copy)
    calibration = json.loads((copy / CALIBRATION_FILE).read_text(encoding="utf-8"))
    calibration["base"] = "xlm-roberta-large"
    (copy / CALIBRATION_FILE).write_text(json.dumps(calibration), encoding="utf-8")
    with pytest.raises(CriticLoadError, match="'base' must be one of"):
        TransformerCritic(copy)


def test_its_word_table_stays_in_fp16_and_scores_as_transformers_does(e5_critic: Path) -> None:
    import torch

    from ragbrain.critic.folder import build_model

    critic = TransformerCritic(e5_critic)  # the toy recipe does not quantize
    assert critic.model.get_input_embeddings().weight.dtype == torch.float16
    reference = build_model(e5_critic, critic.calibration, light=False)
    batch = critic.pair_batch(*critic.encode(JAPANESE, [TOPICS["redis"], THAI, JAPANESE]))
    with torch.inference_mode():
        ours = critic.model(**batch).logits
        theirs = reference(**batch).logits
    assert torch.allclose(ours, theirs, atol=1e-4)


def test_it_runs_on_onnx_too(e5_critic: Path) -> None:
    """The export takes the e5 base's word table and reads its tokenizer's pairs: the int8
    logits stay within the tolerance the MiniLM critic's test allows, and the best passage
    stays the best."""
    import numpy as np

    passages = [TOPICS["redis"], THAI, JAPANESE, " ".join(TOPICS.values())]
    torch_critic = TransformerCritic(e5_critic, backend="torch")
    onnx_critic = TransformerCritic(e5_critic, backend="onnx")
    assert onnx_critic.onnx is not None
    for query in ("redis cache stampede", JAPANESE):
        np.testing.assert_allclose(
            onnx_critic.logits(query, passages).numpy(),
            torch_critic.logits(query, passages).numpy(),
            atol=0.05,
        )
        ours, theirs = onnx_critic.score(query, passages), torch_critic.score(query, passages)
        assert np.argmax(ours) == np.argmax(theirs), (query, ours, theirs)
