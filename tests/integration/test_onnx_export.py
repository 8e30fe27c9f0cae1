"""The ONNX backend end to end on a tiny model the test builds: export into the cache, load,
agree with torch, survive a damaged export, refuse what it cannot export."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from ragbrain.models import onnx_backend
from ragbrain.models.backend import load_embeddings
from ragbrain.models.embeddings import model_name_of
from ragbrain.models.onnx_backend import INT8_FILE, OnnxEmbeddings
from ragbrain.models.onnx_cache import MANIFEST, OnnxExportError, problem
from tests.support.tiny_models import make_sentence_model

TEXTS = ["the quick brown fox jumps over the lazy dog", "paris is a city in france", "cell", ""]


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sentence_model(tmp_path_factory.mktemp("models") / "tiny-bert")


@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_onnx_matches_torch(pooling: str, tmp_path: Path) -> None:
    folder = make_sentence_model(tmp_path / f"tiny-{pooling}", pooling=pooling)
    onnx, torch = load_embeddings(folder, "onnx"), load_embeddings(folder, "torch")
    a, b = np.array(onnx.embed_documents(TEXTS)), np.array(torch.embed_documents(TEXTS))
    assert a.shape == b.shape == (len(TEXTS), 32)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert (a * b).sum(axis=1).min() > 0.99
    assert float(np.dot(onnx.embed_query("brown fox"), torch.embed_query("brown fox"))) > 0.99
    assert model_name_of(onnx) == model_name_of(torch) == folder.name  # the model, not the backend


def test_order_and_prompts_are_kept(tiny: Path) -> None:
    plain = OnnxEmbeddings(tiny, batch_size=2)
    rows = np.array(plain.embed_documents(TEXTS))  # batched by length, back in input order
    alone = np.array([plain.embed_documents([text])[0] for text in TEXTS])
    # dynamic int8 scales each batch's activations by its own range: close, not identical
    assert (rows * alone).sum(axis=1).min() > 0.99
    assert list((rows @ alone.T).argmax(axis=1)) == list(range(len(TEXTS)))
    prompted = OnnxEmbeddings(tiny, query_prompt="query: ", passage_prompt="passage: ")
    assert prompted.embed_query("cell") == plain.embed_documents(["query: cell"])[0]


def test_passes_stay_under_the_token_budget_and_the_last_frees_the_arena(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = OnnxEmbeddings(tiny, batch_size=8)
    texts = [f"{'word ' * (3 * i)}end" for i in range(7)]
    whole = np.array(model.embed_documents(texts))  # within the budget: one pass
    calls: list[tuple[tuple[int, ...], object]] = []
    real_run = model.session.run

    def run(names: object, feed: dict[str, np.ndarray], options: object = None) -> object:
        calls.append((feed["input_ids"].shape, options))
        return real_run(names, feed, options)

    monkeypatch.setattr(model.session, "run", run, raising=False)
    monkeypatch.setattr(onnx_backend, "BATCH_TOKENS", 40)
    parts = np.array(model.embed_documents(texts))
    assert all(rows * width <= 40 for (rows, width), _ in calls) and len(calls) > 1
    # only the call's last pass shrinks the arena
    assert [options is model._release for _, options in calls] == [False] * (len(calls) - 1) + [
        True
    ]
    assert (parts * whole).sum(axis=1).min() > 0.99


def test_export_is_cached_and_checked(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = OnnxEmbeddings(tiny).export_folder
    manifest = json.loads((folder / MANIFEST).read_text())
    assert set(manifest["files"]) == {INT8_FILE}
    assert manifest["quantization"]["weights"] == "QInt8"
    monkeypatch.setattr(onnx_backend, "quantize", _must_not_run)
    assert OnnxEmbeddings(tiny).export_folder == folder  # loaded, not exported again


def _must_not_run(*_: object) -> None:
    raise AssertionError("exported again")


def test_killed_export_is_redone(tiny: Path, caplog: pytest.LogCaptureFixture) -> None:
    first = OnnxEmbeddings(tiny)
    model = first.export_folder / INT8_FILE
    model.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    with caplog.at_level(logging.WARNING, logger="ragbrain.models.onnx_cache"):
        again = OnnxEmbeddings(tiny)
    assert "damaged ONNX export" in caplog.text
    assert problem(again.export_folder) is None
    assert again.embed_documents(TEXTS) == first.embed_documents(TEXTS)


def test_failed_export_raises_and_leaves_no_model(
    tiny: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(onnx_backend, "quantize", full_disk)
    with pytest.raises(OnnxExportError, match="No space left on device"):
        OnnxEmbeddings(tiny)
    assert list((cache / "onnx").iterdir()) == []


def test_unsupported_pooling_is_refused(tmp_path: Path) -> None:
    folder = make_sentence_model(tmp_path / "tiny-max", pooling="max")
    with pytest.raises(OnnxExportError, match="is not mean or cls"):
        OnnxEmbeddings(folder)


def test_a_store_made_on_one_backend_opens_on_the_other(
    tiny: Path, tmp_path: Path, notes_dir: Path
) -> None:
    from ragbrain.ingest import ingest
    from ragbrain.store import Store

    folder = tmp_path / "store"
    ingest(notes_dir, Store.open(folder, load_embeddings(tiny, "torch"), create=True))
    store = Store.open(folder, load_embeddings(tiny, "onnx"))
    assert store.embedding_model == tiny.name
    hits = store.search("the quick brown fox", k=3)
    assert len(hits) == 3


def test_critic_scores_agree_on_both_backends(tmp_path: Path) -> None:
    from ragbrain.critic import TransformerCritic
    from tests.support.critic_folders import make_critic

    folder = make_critic(tmp_path / "critic")
    passages = [text * 3 for text in TEXTS[:3]] + ["brown fox", "a dog in paris"]
    torch_critic = TransformerCritic(folder, backend="torch")
    onnx_critic = TransformerCritic(folder, backend="onnx")
    assert onnx_critic.onnx is not None and torch_critic.onnx is None
    np.testing.assert_allclose(
        onnx_critic.logits("brown fox", passages).numpy(),
        torch_critic.logits("brown fox", passages).numpy(),
        atol=0.05,
    )
    np.testing.assert_allclose(
        onnx_critic.score("brown fox", passages),
        torch_critic.score("brown fox", passages),
        atol=0.02,
    )
    assert onnx_critic.lexical("fox", passages).equal(torch_critic.lexical("fox", passages))


@pytest.mark.parametrize("setting", ["onnx", "torch", None], ids=["onnx", "torch", "unset"])
def test_the_critic_runs_on_torch_whatever_the_backend_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None
) -> None:
    from ragbrain.critic import TransformerCritic
    from tests.support.critic_folders import make_critic

    if setting is None:
        monkeypatch.delenv("RAGBRAIN_BACKEND", raising=False)
    else:
        monkeypatch.setenv("RAGBRAIN_BACKEND", setting)
    critic = TransformerCritic(make_critic(tmp_path / "critic"))
    assert critic.backend == "torch" and critic.onnx is None


def test_the_session_stops_spinning_after_a_run(tiny: Path) -> None:
    options = OnnxEmbeddings(tiny).session.get_session_options()
    # spinning threads would take the cores from the torch critic that runs next
    assert options.get_session_config_entry("session.force_spinning_stop") == "1"
