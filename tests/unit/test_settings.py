"""A store's settings, decided once (``ragbrain.settings``): what the value holds, that a run
never asks for the model's name again, and that it is resolved again when the store changes in
a way that matters (another model, after a re-embed elsewhere; a large change in size)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console

from ragbrain.context import RetrievalContext
from ragbrain.graph import build_graph, store_resolution
from ragbrain.ingest import ingest
from ragbrain.ingest.reembed import re_embed
from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, E5_SMALL
from ragbrain.models.profiles import profile
from ragbrain.render import print_run
from ragbrain.store import Store
from tests.support.fakes import BagOfWordsEmbeddings, Named

QUERY = {"query": "redis cache stampede", "type_filter": None}


class ForModel:
    """A critic that keeps everything, bound per store to a critic named for its model (as
    the shipped critic picks the evidence critic or the cross-encoder by the store's model)."""

    threshold = 0.0

    def __init__(self, model: str | None = None) -> None:
        self.kind = f"for-{model}"

    def for_store(self, store: Store, lexical: object = None) -> ForModel:
        return ForModel(store.embedding_model)

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        return [1.0] * len(passages)


def test_the_value_holds_every_per_store_decision_and_the_run_shows_it(
    fake_store: Store,
) -> None:
    settings = store_resolution(fake_store, ForModel()).current()
    assert settings.model.name == fake_store.model and settings.chunks == fake_store.count()
    assert settings.gate_source == "default" and settings.critic is not None
    assert settings.critic.kind == f"for-{fake_store.model}"  # type: ignore[attr-defined]
    summary = settings.summary()
    assert set(summary) >= {"model", "gate", "offtopic_cut", "critic", "handover", "bm25_power"}

    out = build_graph(fake_store, ForModel()).invoke(QUERY, context=RetrievalContext())
    assert out["store_settings"] == summary  # what Studio shows of the run
    console = Console(file=io.StringIO(), width=200)
    print_run(QUERY["query"], out, console)
    assert "store settings: model bag-of-words" in console.file.getvalue()  # type: ignore[attr-defined]


def test_a_run_never_asks_the_store_for_its_model(
    fake_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = build_graph(fake_store, ForModel())
    asked: list[str] = []
    real = Store.model

    def counted(self: Store) -> str:
        asked.append("model")
        return real.fget(self)  # type: ignore[attr-defined,no-any-return]

    monkeypatch.setattr(Store, "model", property(counted))
    for mode in ("hybrid", "dense"):
        graph.invoke(QUERY, context=RetrievalContext(search_mode=mode))  # type: ignore[arg-type]
    assert asked == []


def test_a_re_embed_elsewhere_switches_the_graphs_critic_and_gate(
    registered_models: dict[str, Named], notes_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "s"
    ingest(notes_dir, Store.open(folder, create=True))
    follower = Store.open(folder)  # no model chosen: it follows the store's
    graph = build_graph(follower, ForModel())
    before = graph.invoke(QUERY, context=RetrievalContext(abstain="off"))
    assert before["store_settings"]["critic"].startswith(f"for-{DEFAULT_EMBEDDING_MODEL}")

    re_embed(notes_dir, folder, registered_models[E5_SMALL])  # another process, another model

    after = graph.invoke(QUERY, context=RetrievalContext(abstain="off"))
    shipped = profile(E5_SMALL)
    assert shipped is not None
    assert after["store_settings"]["model"] == E5_SMALL
    assert after["store_settings"]["critic"].startswith(f"for-{E5_SMALL}")
    assert after["gate"] == shipped.gate.threshold != before["gate"]
    assert after["documents"]


def test_a_large_change_in_size_resolves_again_and_a_small_one_does_not(
    tmp_path: Path,
) -> None:
    embeddings = BagOfWordsEmbeddings()
    store = Store.open(tmp_path / "s", embeddings, create=True)

    def add(writer: Store, start: int, count: int) -> None:
        texts = [f"note {i} about topic{i} and word{i * 7}" for i in range(start, start + count)]
        ids = [f"n{i}" for i in range(start, start + count)]
        writer.upsert(ids, texts, [{"type": "note"}] * count, embeddings.embed_documents(texts))

    add(store, 0, 40)
    resolution = store_resolution(store, None)
    first = resolution.current()
    assert first.chunks == 40
    other = Store.open(tmp_path / "s", embeddings)  # another process
    add(other, 40, 2)
    store.search("note", 1)  # the store follows the write
    assert resolution.current() is first  # 5%: nothing that matters
    add(other, 42, 20)
    store.search("note", 1)
    again = resolution.current()
    assert again is not first and again.chunks == 62
