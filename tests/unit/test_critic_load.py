"""Loading and validating critic folders: every bad input is a CriticLoadError naming the path."""

from __future__ import annotations

import json
import math
import pickle
from collections.abc import Callable
from pathlib import Path

import pytest

from ragbrain.critic import TransformerCritic, keep_mask
from ragbrain.critic.features import FEATURE_NAMES
from ragbrain.critic.folder import CALIBRATION_FILE, FEATURES_FILE, MORE_DISTANCE, WEIGHTS_FILE
from ragbrain.critic.training.distance_layer import add_distance_layer
from ragbrain.errors import CriticLoadError
from ragbrain.factory import resolve_critic
from ragbrain.graph import build_graph
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.store import Store
from tests.support.critic_folders import (
    COLUMNS,
    DISTANCE_MODEL,
    edit_calibration,
    list_aware,
    make_critic,
    with_distance_layer,
)
from tests.support.fakes import BagOfWordsEmbeddings


def _truncate(folder: Path) -> None:
    path = folder / WEIGHTS_FILE
    path.write_bytes(path.read_bytes()[:1000])


def _pickle(folder: Path) -> None:
    (folder / WEIGHTS_FILE).write_bytes(pickle.dumps({"weight": [1.0, 2.0]}))


def _wrong_shape(folder: Path) -> None:
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["intermediate_size"] = 48
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")


def _drop_tensor(folder: Path) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(folder / WEIGHTS_FILE))
    tensors.pop("classifier.weight")
    save_file(tensors, str(folder / WEIGHTS_FILE))


def _bad_idf(folder: Path) -> None:
    import torch
    from safetensors.torch import save_file

    save_file({"idf": torch.ones(7)}, str(folder / FEATURES_FILE))


def _softmax_one_label(folder: Path) -> None:
    data = json.loads((folder / CALIBRATION_FILE).read_text(encoding="utf-8"))
    del data["combiner"]
    data["activation"] = "softmax"
    (folder / CALIBRATION_FILE).write_text(json.dumps(data), encoding="utf-8")


def _unknown_inputs(folder: Path) -> None:
    data = json.loads((folder / CALIBRATION_FILE).read_text(encoding="utf-8"))
    data["combiner"]["inputs"] = ["logit", *FEATURE_NAMES, "rank"]  # half a list layout
    (folder / CALIBRATION_FILE).write_text(json.dumps(data), encoding="utf-8")


def _combiner(folder: Path) -> None:
    data = json.loads((folder / CALIBRATION_FILE).read_text(encoding="utf-8"))
    data["combiner"]["weights"] = [1.0]
    (folder / CALIBRATION_FILE).write_text(json.dumps(data), encoding="utf-8")


BAD: list[tuple[str, Callable[[Path], None], str]] = [
    ("missing-folder", lambda f: None, "no such critic folder"),
    ("missing-config", lambda f: (f / "config.json").unlink(), r"config\.json: missing"),
    ("garbage-config", lambda f: (f / "config.json").write_text("{oops"), "config"),
    ("missing-weights", lambda f: (f / WEIGHTS_FILE).unlink(), "safetensors weights only"),
    ("truncated-weights", _truncate, "not a readable safetensors file"),
    ("pickle-renamed", _pickle, "not a readable safetensors file"),
    ("wrong-shapes", _wrong_shape, "wrong shape"),
    ("missing-tensor", _drop_tensor, "missing"),
    ("missing-calibration", lambda f: (f / CALIBRATION_FILE).unlink(), "calibration file"),
    ("calibration-not-json", lambda f: (f / CALIBRATION_FILE).write_text("thr"), "not valid JSON"),
    ("threshold-out-of-range", lambda f: edit_calibration(f, threshold=1.5), "'threshold'"),
    ("threshold-nan", lambda f: edit_calibration(f, threshold=math.nan), "'threshold'"),
    ("unknown-activation", lambda f: edit_calibration(f, activation="relu"), "'activation'"),
    ("activation-vs-labels", _softmax_one_label, "does not fit"),
    ("combiner-needs-sigmoid", lambda f: edit_calibration(f, activation="softmax"), "'sigmoid'"),
    ("bad-max-length", lambda f: edit_calibration(f, max_length="long"), "'max_length'"),
    ("unknown-base", lambda f: edit_calibration(f, base="bert-large"), "'base'"),
    ("inconsistent-combiner", _combiner, "combiner 'weights'"),
    ("unknown-combiner-inputs", _unknown_inputs, "combiner 'inputs' must be"),
    ("missing-features", lambda f: (f / FEATURES_FILE).unlink(), FEATURES_FILE),
    ("wrong-idf", _bad_idf, "'idf' tensor"),
]


@pytest.mark.parametrize(("name", "damage", "match"), BAD, ids=[b[0] for b in BAD])
def test_bad_critic_folders_raise_critic_load_error(
    tmp_path: Path, name: str, damage: Callable[[Path], None], match: str
) -> None:
    folder = tmp_path / "critic"
    if name != "missing-folder":
        make_critic(folder)
        damage(folder)
    with pytest.raises(CriticLoadError, match=match) as caught:
        TransformerCritic(folder)
    assert str(folder) in str(caught.value)


def test_a_pickle_is_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_critic(tmp_path / "critic")
    _pickle(folder)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("unpickling attempted")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    with pytest.raises(CriticLoadError):
        TransformerCritic(folder)


def test_a_good_folder_loads_and_scores_a_batch(tmp_path: Path) -> None:
    critic = TransformerCritic(make_critic(tmp_path / "critic"))
    scores = critic.score("redis cache", ["redis cache stampede", "pdf export", "x" * 3000])
    assert len(scores) == 3 and all(0.0 <= s <= 1.0 for s in scores)
    assert critic.inputs("redis cache", ["redis cache stampede"]).shape == (1, COLUMNS)


def test_a_critic_without_combiner_uses_the_model_alone(tmp_path: Path) -> None:
    critic = TransformerCritic(make_critic(tmp_path / "critic", combiner=False))
    assert critic.features is None
    assert len(critic.score("q", ["a", "b"])) == 2


def test_nan_is_never_relevant() -> None:
    assert keep_mask([math.nan, 0.9, 0.1], 0.5) == [False, True, False]
    assert keep_mask([math.nan], 0.0) == [False]


def test_the_retriever_raises_or_disables_on_a_bad_folder(tmp_path: Path) -> None:
    folder = make_critic(tmp_path / "critic")
    _truncate(folder)
    with pytest.raises(CriticLoadError, match=str(folder)):
        resolve_critic(folder, "raise")
    critic, reason = resolve_critic(folder, "disable")
    assert critic is None and reason.startswith("failed to load") and str(folder) in reason


def _distance_inputs(folder: Path) -> None:
    with_distance_layer(folder)
    layer = json.loads((folder / CALIBRATION_FILE).read_text(encoding="utf-8"))["with_distance"]
    layer["combiner"]["inputs"] = ["logit", *FEATURE_NAMES]
    with_distance_layer(folder, combiner=layer["combiner"])


BAD_DISTANCE_LAYERS: list[tuple[str, Callable[[Path], object], str]] = [
    ("no-model", lambda f: with_distance_layer(f, embedding_model=""), "embedding_model"),
    ("threshold", lambda f: with_distance_layer(f, threshold=-0.1), "with_distance.threshold"),
    ("inputs", _distance_inputs, "'distance'"),
    ("not-an-object", lambda f: edit_calibration(f, with_distance=[1]), "'with_distance'"),
    (
        "abstain-missing-field",
        lambda f: with_distance_layer(f, abstain={"critic_below": 0.5}),
        r"with_distance.abstain: abstention cuts need critic_below, distance_above",
    ),
    (
        "abstain-out-of-range",
        lambda f: with_distance_layer(
            f, abstain={"critic_below": 0.5, "distance_above": 0.3, "coverage_below": 3.0}
        ),
        "coverage_below must be a share",
    ),
]


@pytest.mark.parametrize(
    ("name", "damage", "match"), BAD_DISTANCE_LAYERS, ids=[b[0] for b in BAD_DISTANCE_LAYERS]
)
def test_a_bad_distance_layer_raises_critic_load_error(
    tmp_path: Path, name: str, damage: Callable[[Path], object], match: str
) -> None:
    folder = make_critic(tmp_path / "critic")
    damage(folder)
    with pytest.raises(CriticLoadError, match=match) as caught:
        TransformerCritic(folder)
    assert str(folder) in str(caught.value)


def test_the_distance_layer_judges_only_distances_of_its_own_model(tmp_path: Path) -> None:
    folder = with_distance_layer(make_critic(tmp_path / "critic"))
    passages = ["redis cache stampede", "pdf export"]
    plain = TransformerCritic(folder)
    assert not plain.uses_distance and plain.threshold == 0.5
    assert plain.distance_model == DISTANCE_MODEL
    bound = plain.for_model(DISTANCE_MODEL)
    assert bound.uses_distance and bound.threshold == 0.25
    assert bound.model is plain.model  # a view, not a second copy of the weights
    near, far = bound.score("redis cache", passages, [0.1, 0.9])
    assert near > 0.9 > 0.1 > far  # sigmoid(4 - 8 d)
    with pytest.raises(ValueError, match="one distance per passage"):
        bound.score("redis cache", passages)
    other = bound.for_model("another-model")
    assert not other.uses_distance and other.threshold == 0.5
    # without its layer, distances change nothing
    assert other.score("redis cache", passages, [0.1, 0.9]) == plain.score("redis cache", passages)


def test_the_graph_binds_the_critic_to_its_store_model(tmp_path: Path, fake_store: Store) -> None:
    critic = TransformerCritic(with_distance_layer(make_critic(tmp_path / "critic")))
    out = CorrectiveRetriever(graph=build_graph(fake_store, critic)).run("redis cache stampede")
    assert out["critic"].endswith("with distance)"), out["critic"]

    class Renamed(BagOfWordsEmbeddings):  # same vectors' size, another model's name
        def __init__(self) -> None:
            super().__init__()
            self.model_name = "another-model"

    assert fake_store.folder is not None
    elsewhere = Store.open(fake_store.folder, Renamed())
    assert elsewhere.embedding_model is None  # the store records bag-of-words-64
    out = CorrectiveRetriever(graph=build_graph(elsewhere, critic)).run("redis cache stampede")
    assert "with distance" not in out["critic"]


def test_list_columns_place_each_chunk_in_its_list() -> None:
    import torch

    from ragbrain.critic.features import list_columns

    columns = ("logit", "bm25", "distance")
    x = torch.tensor([[2.0, 1.0, 0.2], [0.0, 3.0, 0.1], [1.0, 0.0, 0.5]])
    got = list_columns(x, columns)
    # rank, logit_gap, bm25_gap, logit_spread, bm25_spread, distance_gap, distance_spread
    expected = [
        [0.0, 0.0, -2.0, 2.0, 3.0, 0.1, 0.4],
        [math.log(2), -2.0, 0.0, 2.0, 3.0, 0.0, 0.4],
        [math.log(3), -1.0, -3.0, 2.0, 3.0, 0.4, 0.4],
    ]
    torch.testing.assert_close(got, torch.tensor(expected))
    assert list_columns(x[:, :2], columns[:2]).shape == (3, 5)  # no distance, no its columns
    assert list_columns(x[:0], columns).shape == (0, 7)


def test_a_list_aware_critic_judges_each_chunk_against_its_list(tmp_path: Path) -> None:
    critic = TransformerCritic(list_aware(make_critic(tmp_path / "critic"), rank=-1.0))
    first, second = critic.score("redis cache", ["pdf export", "redis cache stampede"])
    assert first == pytest.approx(0.5) and second == pytest.approx(1 / (1 + 2.0))  # 1/(1+e^log2)
    # the same chunk alone heads its list
    assert critic.score("redis cache", ["redis cache stampede"]) == pytest.approx([0.5])


OTHER_MODEL = "multilingual-toy"


def _other_layer(**changes: object) -> dict[str, object]:
    """A distance layer for ``OTHER_MODEL`` that ignores the distance (scores sigmoid(1))."""
    layer: dict[str, object] = {
        "embedding_model": OTHER_MODEL,
        "threshold": 0.6,
        "combiner": {
            "inputs": ["logit", *FEATURE_NAMES, "distance"],
            "mean": [0.0] * (len(FEATURE_NAMES) + 2),
            "scale": [1.0] * (len(FEATURE_NAMES) + 2),
            "weights": [0.0] * (len(FEATURE_NAMES) + 2),
            "bias": 1.0,
        },
    }
    layer.update(changes)
    return layer


def test_a_critic_picks_the_distance_layer_of_its_store_model(tmp_path: Path) -> None:
    folder = with_distance_layer(make_critic(tmp_path / "critic"))
    add_distance_layer(folder, _other_layer())
    plain = TransformerCritic(folder)
    assert plain.distance_models == (DISTANCE_MODEL, OTHER_MODEL)
    first, other = plain.for_model(DISTANCE_MODEL), plain.for_model(OTHER_MODEL)
    assert (first.threshold, other.threshold) == (0.25, 0.6)
    near, far = other.score("redis cache", ["redis cache stampede", "pdf export"], [0.1, 0.9])
    assert near == pytest.approx(far) == pytest.approx(0.7311, abs=1e-4)  # its own layer
    assert not plain.for_model("a-third-model").uses_distance


def test_adding_a_layer_twice_replaces_it(tmp_path: Path) -> None:
    folder = with_distance_layer(make_critic(tmp_path / "critic"))
    add_distance_layer(folder, _other_layer())
    add_distance_layer(folder, _other_layer(threshold=0.4))
    calibration = json.loads((folder / CALIBRATION_FILE).read_text(encoding="utf-8"))
    assert [m["threshold"] for m in calibration[MORE_DISTANCE]] == [0.4]
    add_distance_layer(folder, _other_layer(embedding_model=DISTANCE_MODEL, threshold=0.3))
    assert TransformerCritic(folder).for_model(DISTANCE_MODEL).threshold == 0.3


BAD_MORE_LAYERS: list[tuple[str, object, str]] = [
    ("not-a-list", {"embedding_model": OTHER_MODEL}, "must be a list"),
    ("not-an-object", [1], r"more_distance_layers\[0\]' must be an object"),
    ("no-model", [_other_layer(embedding_model="")], "embedding_model must name a model"),
    ("twice", [_other_layer(), _other_layer()], "two distance layers"),
    ("same-as-first", [_other_layer(embedding_model=DISTANCE_MODEL)], "two distance layers"),
    ("threshold", [_other_layer(threshold=2)], r"more_distance_layers\[0\].threshold"),
]


@pytest.mark.parametrize(
    ("name", "layers", "match"), BAD_MORE_LAYERS, ids=[b[0] for b in BAD_MORE_LAYERS]
)
def test_bad_further_distance_layers_raise_critic_load_error(
    tmp_path: Path, name: str, layers: object, match: str
) -> None:
    folder = with_distance_layer(make_critic(tmp_path / "critic"))
    edit_calibration(folder, **{MORE_DISTANCE: layers})
    with pytest.raises(CriticLoadError, match=match) as caught:
        TransformerCritic(folder)
    assert str(folder) in str(caught.value)


def test_a_bad_layer_is_not_written(tmp_path: Path) -> None:
    folder = with_distance_layer(make_critic(tmp_path / "critic"))
    before = (folder / CALIBRATION_FILE).read_bytes()
    with pytest.raises(CriticLoadError, match="threshold"):
        add_distance_layer(folder, _other_layer(threshold=-1))
    assert (folder / CALIBRATION_FILE).read_bytes() == before


def test_a_distance_layer_carries_its_abstention_thresholds(tmp_path: Path) -> None:
    """The layer's ``abstain`` record binds with the layer; another model's critic has none."""
    record = {"critic_below": 0.6, "distance_above": 0.3, "coverage_below": None}
    critic = TransformerCritic(with_distance_layer(make_critic(tmp_path / "c"), abstain=record))
    assert critic.abstain_thresholds is None  # not bound to the layer's model
    bound = critic.for_model(DISTANCE_MODEL).abstain_thresholds
    assert bound is not None
    assert (bound.critic_below, bound.distance_above, bound.coverage_below) == (0.6, 0.3, None)
    assert DISTANCE_MODEL in bound.source
    assert critic.for_model("another-model").abstain_thresholds is None


def test_passages_judged_again_come_from_the_cache_with_the_same_scores(tmp_path: Path) -> None:
    critic = TransformerCritic(make_critic(tmp_path / "critic"))
    passages = ["the cat sat on the mat", "a dog barked", "the cat sat on the mat"]
    cold = critic.score("where did the cat sit", passages)
    calls: list[list[str]] = []
    engine = critic._passages.engine
    real = engine.encode_batch_fast

    class Counting:
        def encode_batch_fast(self, texts: list[str], **kwargs: object) -> object:
            calls.append(list(texts))
            return real(texts, **kwargs)

    critic._passages.engine = Counting()
    view = critic.for_model(None)  # another view of the same critic shares the cache
    assert view.score("where did the cat sit", passages) == cold
    assert critic.score("a question", ["a dog barked", "new text"])
    assert calls == [["new text"]]  # only the passage never seen was tokenized
    direct = real(["a dog barked"], add_special_tokens=False)[0]
    assert critic.encode("q", ["a dog barked"])[1][0].ids == direct.ids


def test_the_encoding_cache_keeps_the_latest_passages() -> None:
    from ragbrain.critic.model import _EncodingCache

    class Engine:
        def encode_batch_fast(self, texts: list[str], **kwargs: object) -> list[str]:
            return [t.upper() for t in texts]

    cache = _EncodingCache(Engine(), size=2)
    assert cache.encode(["a", "b", "a"]) == ["A", "B", "A"]
    cache.encode(["a"])  # "a" is now the latest, "b" the oldest
    cache.encode(["c"])
    assert list(cache._by_text) == ["a", "c"]
