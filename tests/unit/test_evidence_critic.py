"""The evidence critic (English stores): its columns, its layer file, its scores, and which
critic the shipped choice gives each store."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragbrain.critic.choice import ShippedCritic, resolve_critic
from ragbrain.critic.evidence import (
    COLUMNS,
    EvidenceCritic,
    default_evidence_path,
    evidence_columns,
    read_layer,
    supports,
)
from ragbrain.errors import CriticLoadError
from ragbrain.lexical.index import LexicalIndex
from ragbrain.store import Store

NOTES = {
    "pg": "postgres vacuum freezes old transaction ids and reclaims dead tuples",
    "redis": "redis cache eviction policy picks keys to drop when memory is full",
    "git": "git rebase replays commits on top of another branch",
    "vim": "vim macros record keystrokes and replay them on a register",
    "tmux": "tmux panes split the window and keep a session alive",
}


@pytest.fixture
def index() -> LexicalIndex:
    return LexicalIndex.build(list(NOTES), list(NOTES.values()), ["note"] * len(NOTES))


def test_columns_place_each_chunk_by_distance_support_and_rank() -> None:
    x = evidence_columns([0.3, 0.2, 0.5], [0.1, 0.8, 0.8])
    assert x.shape == (3, len(COLUMNS))
    col = {name: x[:, i].tolist() for i, name in enumerate(COLUMNS)}
    assert col["distance_gap"] == pytest.approx([0.1, 0.0, 0.3])
    assert col["support_gap"] == pytest.approx([0.7, 0.0, 0.0])
    # by distance: 2nd, 1st, 3rd; by support (ties keep the list's order): 3rd, 1st, 2nd
    assert col["distance_rank"] == pytest.approx(np.log1p([1, 0, 2]).tolist())
    assert col["support_rank"] == pytest.approx(np.log1p([2, 0, 1]).tolist())
    assert col["rank"] == pytest.approx(np.log1p([0, 1, 2]).tolist())
    assert evidence_columns([], []).shape == (0, len(COLUMNS))


def test_support_weighs_the_rare_words_a_chunk_holds(index: LexicalIndex) -> None:
    query = "how does postgres vacuum reclaim dead tuples"
    held = supports(index, query, [NOTES["pg"], NOTES["redis"], "vacuum"])
    assert held[0] > held[2] > held[1] == 0.0
    assert all(0.0 <= s <= 1.0 for s in held)
    # a word the notes never use weighs the most: the same chunk holds less of the question
    assert supports(index, query + " zygomorphic", [NOTES["pg"]])[0] < held[0]
    assert supports(index, "the of and", [NOTES["pg"], NOTES["git"]]) == [0.0, 0.0]


def test_indexed_chunks_read_their_terms_from_the_index(index: LexicalIndex) -> None:
    query = "postgres vacuum bloat after the redis deploy"
    ids = [*NOTES, "not-indexed"]
    texts = [*NOTES.values(), "vacuum"]
    assert supports(index, query, texts, ids) == supports(index, query, texts)


def test_the_shipped_layer_keeps_the_answer_and_drops_the_far_unrelated_chunk(
    index: LexicalIndex,
) -> None:
    critic = EvidenceCritic(lexical=index)
    passages = [NOTES["pg"], NOTES["redis"], NOTES["git"]]
    question = "how does postgres vacuum reclaim dead tuples"
    scores = critic.score(question, passages, [0.25, 0.7, 0.8])
    assert scores[0] >= critic.threshold > scores[2]
    assert critic.score("anything", [], []) == []


def test_scoring_needs_distances_and_a_lexical_index(index: LexicalIndex) -> None:
    with pytest.raises(ValueError, match="one distance per passage"):
        EvidenceCritic(lexical=index).score("postgres", [NOTES["pg"]], None)
    with pytest.raises(ValueError, match="lexical index"):
        EvidenceCritic().score("postgres", [NOTES["pg"]], [0.2])


def test_the_shipped_layer_says_how_it_was_fit() -> None:
    layer = read_layer(default_evidence_path())
    assert layer["embedding_model"] == "all-MiniLM-L6-v2"
    assert 0.0 < layer["threshold"] < 1.0
    assert "by" in layer["fit"] and layer["fit"]["sets"]
    assert EvidenceCritic().abstain_thresholds is not None


def _layer() -> dict[str, Any]:
    return dict(read_layer(default_evidence_path()))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(inputs=["distance"]), "'inputs'"),
        (lambda d: d.update(scale=[1.0] * (len(COLUMNS) - 1) + [0.0]), "'scale'"),
        (lambda d: d.update(weights=[1.0, "x", *[0.0] * (len(COLUMNS) - 2)]), "'weights'"),
        (lambda d: d.update(threshold=1.5), "'threshold'"),
        (lambda d: d.update(bias=math.inf), "'bias'"),
        (lambda d: d.pop("embedding_model"), "'embedding_model'"),
        (lambda d: d.update(abstain={"critic_below": "low"}), "evidence.json"),
    ],
)
def test_a_bad_layer_file_raises_critic_load_error(tmp_path: Path, edit: Any, message: str) -> None:
    layer = _layer()
    edit(layer)
    path = tmp_path / "evidence.json"
    path.write_text(json.dumps(layer), encoding="utf-8")
    with pytest.raises(CriticLoadError, match=message):
        EvidenceCritic(path)


def test_a_missing_or_unreadable_layer_file_raises_critic_load_error(tmp_path: Path) -> None:
    with pytest.raises(CriticLoadError, match="missing"):
        EvidenceCritic(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(CriticLoadError, match="not a readable JSON"):
        EvidenceCritic(tmp_path / "bad.json")


def test_the_shipped_choice_picks_the_evidence_critic_for_english_stores_only() -> None:
    critic, reason = resolve_critic("default")
    assert isinstance(critic, ShippedCritic) and reason == ""
    assert isinstance(critic.critic_for("all-MiniLM-L6-v2"), EvidenceCritic)
    # nothing heavy loaded for that: the cross-encoder loads when a store needs it
    assert critic._transformer is None


def test_a_broken_evidence_layer_fails_the_shipped_choice_when_chosen(tmp_path: Path) -> None:
    (tmp_path / "evidence.json").write_text("[]", encoding="utf-8")
    with pytest.raises(CriticLoadError, match="JSON object"):
        ShippedCritic(evidence=tmp_path / "evidence.json")


def test_a_critic_with_for_store_is_bound_to_the_graphs_store(fake_store: Store) -> None:
    from ragbrain.graph import build_graph
    from ragbrain.store.lexical import LexicalSearcher
    from tests.support.fakes import OverlapCritic

    bound = OverlapCritic()

    class Binding(OverlapCritic):
        seen: tuple[object, object] | None = None

        def for_store(self, store: Store, lexical: object) -> OverlapCritic:
            Binding.seen = (store, lexical)
            return bound

    lexical = LexicalSearcher(fake_store)
    unbound = Binding()
    build_graph(fake_store, unbound, lexical=lexical).invoke(
        {"query": "redis cache", "type_filter": None}
    )
    assert Binding.seen == (fake_store, lexical)
    assert bound.calls and not unbound.calls  # the graph judged with the bound critic


def test_the_shipped_cross_encoder_failing_to_load_raises_or_disables(
    fake_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped choice loads the cross-encoder's weights only for a store that needs them
    (not an English one); ``on_critic_error`` covers that load too."""
    from ragbrain import CorrectiveRetriever

    def broken(self: ShippedCritic) -> object:
        raise CriticLoadError("model.safetensors: not a readable safetensors file.")

    monkeypatch.setattr(ShippedCritic, "transformer", broken)
    assert fake_store.folder is not None
    with pytest.raises(CriticLoadError, match="safetensors"):
        CorrectiveRetriever.from_store(fake_store.folder, embeddings=fake_store.embeddings)
    off = CorrectiveRetriever.from_store(
        fake_store.folder, embeddings=fake_store.embeddings, on_critic_error="disable"
    ).run("redis cache")
    assert off["critic"].startswith("off: failed to load") and off["documents"]
