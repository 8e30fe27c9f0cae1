"""The critic's training loop, calibration and saved folder, on a tiny random BERT in tmp_path."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ragbrain.critic.folder import (
    CALIBRATION_FILE,
    DISTANCE_INPUTS,
    DISTANCE_LIST_INPUTS,
    PLAIN_INPUTS,
    PLAIN_LIST_INPUTS,
    WEIGHTS_FILE,
)
from ragbrain.critic.model import TransformerCritic
from ragbrain.critic.training.data import (
    Candidate,
    Group,
    NoTrainingDataError,
    QueryCandidates,
    check_usable,
)
from ragbrain.critic.training.recipe import Recipe
from ragbrain.critic.training.train import train_critic, work_dir

TOPICS = {
    "redis": "redis cache stampede after the deploy expired every key at once",
    "backup": "nightly backup job failed silently because the disk was full",
    "jwt": "login failures after the jwt signing key rotation in production",
    "pdf": "memory leak in the pdf export worker grew until the pod restarted",
    "csv": "csv export garbled non ascii names when opened in excel",
    "pool": "connection pool exhaustion during month end reporting queries",
}


def tiny_base(folder: Path) -> Path:
    """A random 2-layer BERT with MiniLM's vocabulary, saved as safetensors."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(folder, safe_serialization=True)
    return folder


def synthetic(seed: int = 0) -> tuple[list[Group], list[QueryCandidates], list[str]]:
    """Queries whose relevant passage shares its topic words; negatives are other topics."""
    rng = random.Random(seed)
    names = sorted(TOPICS)
    train, dev = [], []
    for round_ in range(6):
        for name in names:
            query = " ".join(rng.sample(TOPICS[name].split(), 3))
            others = [TOPICS[n] for n in names if n != name]
            if round_ < 4:
                train.append(Group(query, (TOPICS[name], *others[:3]), (1, 0, 0, 0)))
            else:
                hits = [Candidate(name, TOPICS[name], 0.2, True)] + [
                    Candidate(f"x{i}", text, 0.5, False) for i, text in enumerate(others)
                ]
                dev.append(QueryCandidates("toy", f"{name}{round_}", query, tuple(hits), (), ()))
    return train, dev, list(TOPICS.values())


TOY_MODEL = "bag-of-words-64"  # the embedding model the toy candidates' distances stand for
RECIPE = Recipe(
    layers=1,
    max_length=32,
    score_length=32,
    epochs=2,
    batch_groups=4,
    lr_encoder=1e-3,
    quantize=False,
)


@pytest.fixture(scope="module", autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Checkpoints go to a temporary cache, never the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGBRAIN_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("critic")
    return train_toy(root / "critic", root / "base")


def train_toy(out: Path, base: Path) -> Path:
    """Train the toy recipe on the synthetic set into ``out`` (a random base in ``base``)."""
    train, dev, corpus = synthetic()
    train_critic(
        train,
        dev,
        corpus,
        out,
        RECIPE,
        sources={"toy": {}},
        base=tiny_base(base),
        embedding_model=TOY_MODEL,
    )
    return out


def test_training_writes_a_loadable_calibrated_folder(trained: Path) -> None:
    calibration = json.loads((trained / CALIBRATION_FILE).read_text(encoding="utf-8"))
    assert 0.0 <= calibration["threshold"] <= 1.0
    assert calibration["activation"] == "sigmoid"
    assert calibration["recipe"]["epochs"] == 2 and "toy" in calibration["training"]
    assert calibration["dev"]["toy"]["relevant_kept"] >= 0.9  # the threshold meets its target
    critic = TransformerCritic(trained)
    scores = critic.score("redis cache stampede", [TOPICS["redis"], TOPICS["csv"]])
    assert len(scores) == 2 and all(0.0 <= s <= 1.0 for s in scores)


def test_training_fits_a_distance_layer_for_its_embedding_model(trained: Path) -> None:
    layer = json.loads((trained / CALIBRATION_FILE).read_text(encoding="utf-8"))["with_distance"]
    assert layer["embedding_model"] == TOY_MODEL
    assert "distance" in layer["combiner"]["inputs"]
    assert layer["dev"]["toy"]["relevant_kept"] >= 0.9  # its own threshold meets the target
    critic = TransformerCritic(trained, embedding_model=TOY_MODEL)
    assert critic.uses_distance and critic.threshold == layer["threshold"]
    # on the toy dev set relevant chunks are the near ones: the layer reads the distance
    near, far = critic.score("redis cache stampede", [TOPICS["redis"]] * 2, [0.2, 0.5])
    assert near > far


def test_training_learns_the_synthetic_task(trained: Path) -> None:
    critic = TransformerCritic(trained)
    _, dev, _ = synthetic(seed=1)
    wins = 0
    for item in dev:
        scores = critic.score(item.query, [c.text for c in item.candidates])
        wins += scores[0] == max(scores)
    assert wins >= 0.8 * len(dev)


def test_training_is_reproducible(trained: Path, tmp_path: Path) -> None:
    again = train_toy(tmp_path / "again", tmp_path / "b")
    first = json.loads((trained / CALIBRATION_FILE).read_text(encoding="utf-8"))
    second = json.loads((again / CALIBRATION_FILE).read_text(encoding="utf-8"))
    assert first["threshold"] == second["threshold"]
    assert first["combiner"]["weights"] == second["combiner"]["weights"]
    assert first["with_distance"] == second["with_distance"]


def test_a_finished_checkpoint_is_kept_for_restarts(trained: Path) -> None:
    state = work_dir(trained) / "checkpoint" / "state.json"
    assert json.loads(state.read_text(encoding="utf-8"))["epochs_done"] == 2
    assert (work_dir(trained) / "checkpoint" / WEIGHTS_FILE).is_file()


def test_forward_batches_do_not_change_the_scores(trained: Path) -> None:
    passages = list(TOPICS.values())
    small = TransformerCritic(trained, batch_size=2).score("jwt key rotation login", passages)
    whole = TransformerCritic(trained).score("jwt key rotation login", passages)
    assert small == pytest.approx(whole, abs=1e-4)
    assert TransformerCritic(trained).score("jwt", []) == []


def test_training_writes_list_aware_layers(trained: Path) -> None:
    calibration = json.loads((trained / CALIBRATION_FILE).read_text(encoding="utf-8"))
    assert calibration["combiner"]["inputs"] == list(PLAIN_LIST_INPUTS)
    assert calibration["with_distance"]["combiner"]["inputs"] == list(DISTANCE_LIST_INPUTS)
    critic = TransformerCritic(trained)
    chunk = TOPICS["csv"]
    alone = critic.score("redis cache stampede", [chunk])[0]
    behind = critic.score("redis cache stampede", [TOPICS["redis"], chunk])[1]
    assert alone != pytest.approx(behind, abs=1e-6)  # a chunk is judged within its list


def test_without_list_features_each_pair_is_judged_alone(trained: Path, tmp_path: Path) -> None:
    import dataclasses
    import shutil

    out = tmp_path / "per-pair"
    shutil.copytree(work_dir(trained), work_dir(out))  # recalibrates the same weights
    train, dev, corpus = synthetic()
    recipe = dataclasses.replace(RECIPE, list_features=False)
    train_critic(
        train,
        dev,
        corpus,
        out,
        recipe,
        sources={"toy": {}},
        base=tiny_base(tmp_path / "b"),
        embedding_model=TOY_MODEL,
    )
    calibration = json.loads((out / CALIBRATION_FILE).read_text(encoding="utf-8"))
    assert calibration["combiner"]["inputs"] == list(PLAIN_INPUTS)
    assert calibration["with_distance"]["combiner"]["inputs"] == list(DISTANCE_INPUTS)
    critic = TransformerCritic(out)
    passages = list(TOPICS.values())
    batched = critic.score("jwt key rotation login", passages)
    single = [critic.score("jwt key rotation login", [p])[0] for p in passages]
    assert batched == pytest.approx(single, abs=1e-4)


def test_a_nan_logit_scores_nan(trained: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    critic = TransformerCritic(trained)
    monkeypatch.setattr(critic, "_logits", lambda q, p: torch.full((len(p), 1), math.nan))
    assert all(math.isnan(s) for s in critic.score("q", ["a", "b"]))


@pytest.mark.parametrize(
    ("made", "match"),
    [
        ([Group("q", ("a", "b"), (0, 0))], "no positive pairs"),
        ([Group("q", ("a",), (1,))], "no usable negatives"),
    ],
    ids=["no-positives", "no-negatives"],
)
def test_unusable_training_data_stops_early(made: list[Group], match: str) -> None:
    with pytest.raises(NoTrainingDataError, match=match):
        check_usable("toy", [], made)


@pytest.mark.parametrize("candidates", ["hybrid", "dense"])
def test_eval_judges_the_retrievers_candidates(
    trained: Path, tmp_path: Path, candidates: str
) -> None:
    from ragbrain.critic.training.critic_eval import evaluate
    from ragbrain.critic.training.critic_report import markdown
    from tests.support.beir_folders import make_folder
    from tests.support.fakes import BagOfWordsEmbeddings

    data = make_folder(tmp_path / "tiny")
    critic = TransformerCritic(trained)
    report = evaluate(data, "test", critic, BagOfWordsEmbeddings(), k=3, candidates=candidates)
    assert report["candidate_search"] == candidates
    assert report["candidates"] == 3 * report["queries"]
    scorers = [row["scorer"] for row in report["rows"]]
    assert scorers[0] == "keep everything" and scorers[-1] == "Tiny-Critic"
    # bound to the store's model, as the retriever binds it; compared with its plain layer
    assert report["critic_uses_distance"] and scorers[-2] == "Tiny-Critic without distance"
    assert len(report["scores"]["plain"]) == report["candidates"]
    assert report["latency_ms"]["runs"] == report["queries"]
    assert len(report["scores"]["critic"]) == report["candidates"]
    assert f"{candidates} top 3" in markdown([report])


def tokenizer_pairs(critic: TransformerCritic, query: str, passages: list[str]) -> Any:
    """The (query, passage) pairs as the critic's transformers tokenizer makes them."""
    return critic.tokenizer(
        [query] * len(passages),
        passages,
        truncation="longest_first",
        max_length=critic.max_length,
        padding=True,
        return_tensors="pt",
    )


def test_pairs_are_cut_as_the_tokenizer_cuts_them(trained: Path) -> None:
    critic = TransformerCritic(trained)
    long_query = " ".join(TOPICS.values())  # longer than the window on its own
    for query in ("jwt", "redis cache stampede after deploy", long_query):
        passages = [*TOPICS.values(), "", " ".join(TOPICS.values()) * 3]
        made = critic.pair_batch(*critic.encode(query, passages))
        expected = tokenizer_pairs(critic, query, passages)
        for name in ("input_ids", "token_type_ids", "attention_mask"):
            assert made[name].tolist() == expected[name].tolist(), (query, name)


def test_a_rerun_that_changes_only_the_score_length_recalibrates(
    trained: Path, tmp_path: Path
) -> None:
    import dataclasses
    import shutil

    out = tmp_path / "shorter"
    shutil.copytree(work_dir(trained), work_dir(out))  # as if this folder had trained already
    steps: list[int] = []

    def stage(label: str) -> Callable[[int, int], None] | None:
        return (lambda done, _total: steps.append(done)) if label == "training" else None

    train, dev, corpus = synthetic()
    calibration = train_critic(
        train,
        dev,
        corpus,
        out,
        dataclasses.replace(RECIPE, score_length=24),
        sources={"toy": {}},
        progress=stage,
        base=tiny_base(tmp_path / "b"),
    )
    assert steps == []  # no optimizer step: the finished checkpoint was reused
    assert calibration["max_length"] == 24 == TransformerCritic(out).max_length
    assert (out / WEIGHTS_FILE).read_bytes() == (trained / WEIGHTS_FILE).read_bytes()


def _labelled_folder(root: Path) -> Path:
    """The tiny BEIR folder of test_beir, its judged queries also given as a train split."""
    from tests.support.beir_folders import make_folder

    folder = make_folder(root)
    (folder / "qrels" / "train.tsv").write_text(
        (folder / "qrels" / "test.tsv").read_text(encoding="utf-8"), encoding="utf-8"
    )
    return folder


def test_recalibrating_refits_the_layers_and_keeps_the_weights(
    trained: Path, tmp_path: Path
) -> None:
    from ragbrain.critic.training.data import is_dev
    from ragbrain.critic.training.recalibrate import recalibrate
    from ragbrain.critic.training.sources import retrieved_lists
    from tests.support.fakes import BagOfWordsEmbeddings

    folder = _labelled_folder(tmp_path / "tiny")
    lists, sources = retrieved_lists([folder], BagOfWordsEmbeddings(), RECIPE)
    assert sources["tiny"]["queries"] == len(lists) > 0
    dev, _ = retrieved_lists([folder], BagOfWordsEmbeddings(), RECIPE, dev_only=True)
    assert [item.query_id for item in dev] == [
        item.query_id
        for item in lists
        if is_dev("tiny", item.query_id, RECIPE.dev_fraction, RECIPE.seed)
    ]
    assert all(0 < len(item.candidates) <= RECIPE.eval_k for item in lists)
    out = tmp_path / "recalibrated"
    calibration = recalibrate(
        trained, lists, out, RECIPE, sources=sources, embedding_model=TOY_MODEL
    )
    before = json.loads((trained / CALIBRATION_FILE).read_text(encoding="utf-8"))
    written = json.loads((out / CALIBRATION_FILE).read_text(encoding="utf-8"))
    assert written == json.loads(json.dumps(calibration))
    assert written["recalibrated"]["queries"] == len(lists)
    assert written["recalibrated"]["tiny"]["split"] == "train"
    assert set(written["dev"]) == {"tiny"} and written["dev"]["tiny"]["relevant_kept"] >= 0.9
    assert written["with_distance"]["embedding_model"] == TOY_MODEL
    assert written["training"] == before["training"]  # what the weights came from, kept
    assert (out / WEIGHTS_FILE).read_bytes() == (trained / WEIGHTS_FILE).read_bytes()
    critic = TransformerCritic(out, embedding_model=TOY_MODEL)
    assert critic.threshold == written["with_distance"]["threshold"]


def test_recalibrating_fits_abstention_cuts_on_the_missing_answer_scenario(
    trained: Path, tmp_path: Path
) -> None:
    from ragbrain.critic.training.recalibrate import recalibrate
    from ragbrain.critic.training.sources import retrieved_lists, scenario_lists
    from ragbrain.evaluation.beir import load_split
    from ragbrain.refusal.abstain import AbstainThresholds
    from tests.support.fakes import BagOfWordsEmbeddings

    folder = _labelled_folder(tmp_path / "tiny")
    embeddings = BagOfWordsEmbeddings()
    lists, sources = retrieved_lists([folder], embeddings, RECIPE)
    scenario = scenario_lists([folder], embeddings, RECIPE)
    split = load_split(folder, "train")
    rows = scenario["tiny"]
    assert {item.query_id for _, item in rows} == {item.query_id for item in lists}
    answerless = [item for answerable, item in rows if not answerable]
    answerable = [item for ok, item in rows if ok]
    assert answerless and answerable  # a seeded half lost their answers
    removed = {d for item in answerless for d in split.relevant(item.query_id)}
    for item in rows:  # the removed documents are gone from every list, the rest stay
        assert not {c.doc_id for c in item[1].candidates} & removed
        assert item[1].candidates and 0.0 <= (item[1].bm25_coverage or 0.0) <= 1.0
    for item in answerable:  # each answerable query keeps a relevant document in the store
        assert split.relevant(item.query_id) - removed
    out = tmp_path / "recalibrated"
    calibration = recalibrate(
        trained,
        lists,
        out,
        RECIPE,
        sources=sources,
        embedding_model=TOY_MODEL,
        scenario=scenario,
    )
    written = json.loads((out / CALIBRATION_FILE).read_text(encoding="utf-8"))
    cuts = written["with_distance"]["abstain"]
    assert cuts == calibration["with_distance"]["abstain"]
    assert cuts["fit"]["queries"] == {"tiny": len(rows)}
    assert cuts["fit"]["false_refusal_worst"] <= 0.05
    assert written["recalibrated"]["abstention"]["critic_below"] == cuts["critic_below"]
    critic = TransformerCritic(out, embedding_model=TOY_MODEL)
    loaded = critic.abstain_thresholds
    assert isinstance(loaded, AbstainThresholds)
    assert loaded.critic_below == cuts["critic_below"]
    assert "ragbrain critic calibrate" in loaded.source
    # Without a scenario (or for the distance-free layer) no cuts are written.
    plain = recalibrate(
        trained, lists, tmp_path / "plain", RECIPE, sources=sources, embedding_model=TOY_MODEL
    )
    assert "abstain" not in plain["with_distance"]


def test_recalibrating_refuses_what_it_cannot_do_and_writes_nothing(
    trained: Path, tmp_path: Path
) -> None:
    from ragbrain.critic.training.recalibrate import recalibrate
    from ragbrain.critic.training.sources import retrieved_lists
    from ragbrain.errors import InvalidInputError
    from tests.support.fakes import BagOfWordsEmbeddings

    _, dev, _ = synthetic()
    occupied = tmp_path / "occupied"
    occupied.mkdir()
    (occupied / "notes.md").write_text("mine", encoding="utf-8")
    for out, match in [(trained, "another folder"), (occupied, "not an empty folder")]:
        with pytest.raises(InvalidInputError, match=match):
            recalibrate(trained, dev, out, RECIPE, sources={}, embedding_model=None)
    assert [p.name for p in occupied.iterdir()] == ["notes.md"]
    hopeless = [dataclasses.replace(item, candidates=item.candidates[1:]) for item in dev]
    with pytest.raises(NoTrainingDataError, match="No query has a relevant chunk"):
        recalibrate(trained, hopeless, tmp_path / "new", RECIPE, sources={}, embedding_model=None)
    assert not (tmp_path / "new").exists()
    folder = _labelled_folder(tmp_path / "tiny")
    with pytest.raises(InvalidInputError, match="never learns from a test split"):
        retrieved_lists([Path(f"{folder}@test")], BagOfWordsEmbeddings(), RECIPE)
