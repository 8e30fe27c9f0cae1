"""On a multilingual-e5-small store of Japanese notes, the shipped critic is chosen per question
by its script (``ragbrain.settings.StoreSettings.judging``): a Japanese question gets the
evidence critic on scaled e5 distances with the hand-over rule and strict cuts fit on Japanese,
Thai and Chinese notes (applied to each of them); an English question keeps the
cross-encoder and no hand-over, and is answered. MiniLM stores and e5 stores of one-chunk
passages have one critic for every question. (The e5 and MiniLM models are fakes under their
names: ``registered_models``.)"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from ragbrain.context import RetrievalContext
from ragbrain.critic.choice import ShippedCritic
from ragbrain.critic.evidence import EvidenceCritic
from ragbrain.graph import build_graph, store_resolution
from ragbrain.ingest import ingest
from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, E5_SMALL
from ragbrain.settings import describe_summary
from ragbrain.store import Store
from ragbrain.store.lexical import LexicalSearcher
from tests.support.fakes import Named, OverlapCritic

#: Japanese notes that name their tools in Latin letters (an English question shares those).
TOPICS = {
    "backup": "毎晩 の データベース の backup が 失敗 した 。 "
    "S3 の 認証 情報 の 期限 が 切れて いた 。",
    "cache": "Redis の cache が 満杯 に なり 、 応答 が 遅く なった 。 "
    "最大 メモリ の 設定 を 見直した 。",
    "dns": "A レコード は ドメイン を IP アドレス に 結びつける 。 CNAME は 別名 で ある 。",
    "git": "間違えて commit した ファイル は git reset で 取り消す 。 "
    "共有 ブランチ で は revert を 使う 。",
    "tea": "緑茶 は 八十 度 の お湯 で 淹れる と 苦く なり にくい 。 "
    "玉露 は さらに 低い 温度 で 淹れる 。",
}


class CrossEncoder(OverlapCritic):
    """Stands in for the shipped cross-encoder (its weights are not loaded in unit tests)."""

    threshold = 0.1

    def for_model(self, model: str | None) -> CrossEncoder:
        return self

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        return [max(s, 0.2) for s in super().score(query, passages, distances)]


def _notes(folder: Path, sections: int) -> Path:
    folder.mkdir()
    for topic, text in TOPICS.items():
        body = [f"# {topic}"]
        for n in range(1, sections + 1):
            body += ["", f"## 第{n}節", "", " ".join([text] * 6) + f" 第{n}節 の 記録 。"]
        (folder / f"{topic}.md").write_text("\n".join(body) + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def shipped(monkeypatch: pytest.MonkeyPatch) -> ShippedCritic:
    cross = CrossEncoder()
    monkeypatch.setattr(ShippedCritic, "transformer", lambda self: cross)
    return ShippedCritic()


def _store(tmp_path: Path, embeddings: Named, sections: int) -> Store:
    store = Store.open(tmp_path / "store", embeddings, create=True)
    ingest(_notes(tmp_path / "notes", sections), store)
    return store


def test_a_question_in_the_notes_script_gets_the_evidence_critic_and_hand_over(
    registered_models: dict[str, Named], shipped: ShippedCritic, tmp_path: Path
) -> None:
    store = _store(tmp_path, registered_models[E5_SMALL], sections=6)
    settings = store_resolution(store, shipped, lexical=LexicalSearcher(store)).current()
    assert settings.offtopic is not None and settings.offtopic.per_source >= 1.25
    own = settings.notes_script
    assert own is not None and own.script == "cjk"
    assert isinstance(own.critic, EvidenceCritic) and own.critic.distance_scale > 3
    assert own.handover is not None and "ja, th, zh" in own.handover.source
    assert own.critic.abstain_thresholds is not None
    assert "ja, th, zh" in own.critic.abstain_thresholds.source  # the cuts fit on e5 notes
    assert isinstance(settings.critic, CrossEncoder) and settings.handover is None
    line = describe_summary(settings.summary())
    assert "questions in the notes' script (cjk): critic evidence" in line

    graph = build_graph(store, shipped, lexical=LexicalSearcher(store))
    question = {"query": "Redis の 応答 が 遅く なった 原因 は 何 です か", "type_filter": None}
    out = graph.invoke(question)
    assert out["critic"].startswith("on (evidence"), out["critic"]
    assert "a question in the notes' script (cjk)" in out["notes"][-1]
    assert out["documents"], out["abstain_reason"]
    # Every chunk kept (a cut at 0): the hand-over rule fit on e5 notes narrows them.
    every = graph.invoke(question, context=RetrievalContext(critic_threshold=0.0))
    assert "hand-over" in every["notes"][-1] and "ja, th, zh" in every["notes"][-1]


def test_a_question_in_another_script_gets_the_cross_encoder_and_is_answered(
    registered_models: dict[str, Named], shipped: ShippedCritic, tmp_path: Path
) -> None:
    store = _store(tmp_path, registered_models[E5_SMALL], sections=6)
    graph = build_graph(store, shipped, lexical=LexicalSearcher(store))
    question = {"query": "how do I undo a commit with git reset or revert", "type_filter": None}
    out = graph.invoke(question, context=RetrievalContext())
    assert not out["critic"].startswith("on (evidence"), out["critic"]
    assert "a question not in the notes' script (cjk)" in out["notes"][-1]
    assert "hand-over" not in out["notes"][-1]
    assert out["answerable"] and out["documents"], out["abstain_reason"]
    assert "git" in {Path(d.metadata["source"]).stem for d in out["documents"]}


def test_one_chunk_passages_and_minilm_stores_keep_one_critic_for_every_question(
    registered_models: dict[str, Named], shipped: ShippedCritic, tmp_path: Path
) -> None:
    passages = _store(tmp_path / "e5", registered_models[E5_SMALL], sections=1)
    e5 = store_resolution(passages, shipped).current()
    assert e5.offtopic is not None and e5.offtopic.per_source < 1.25
    assert e5.notes_script is None and e5.judging("Redis の cache")[2] == ""
    # The notes' script is the rule's script the chunks use, however much code is Latin;
    # Thai notes (long pages) as well; a script the rule was not fit on keeps the cross-encoder.
    found = shipped.for_script(passages, {"latin": 0.79, "cjk": 0.21}, 3.8)
    assert found is not None and found[0] == "cjk"
    thai = shipped.for_script(passages, {"thai": 0.8, "latin": 0.2}, 12.6)
    assert thai is not None and thai[0] == "thai"
    assert shipped.for_script(passages, {"hangul": 0.8, "latin": 0.2}, 3.8) is None
    assert shipped.for_script(passages, {"latin": 0.97, "cjk": 0.03}, 3.8) is None
    minilm = _store(tmp_path / "minilm", registered_models[DEFAULT_EMBEDDING_MODEL], sections=6)
    english = store_resolution(minilm, shipped).current()
    assert english.notes_script is None and isinstance(english.critic, EvidenceCritic)
    assert english.critic.distance_scale == 1.0


def test_a_question_is_in_the_notes_script_when_it_has_a_letter_of_it() -> None:
    from ragbrain.refusal.offtopic import script_of, writes_in

    mostly_latin = "TypeScript の satisfies operator と as const の違い"
    assert script_of(mostly_latin) == "latin" and writes_in(mostly_latin, "cjk")
    assert not writes_in("What does the satisfies operator do in TypeScript?", "cjk")
    assert writes_in("Power BI ใช้ทำอะไร", "thai") and not writes_in("Power BI ใช้ทำอะไร", "cjk")


def test_a_hand_over_rule_with_bad_scripts_is_refused(tmp_path: Path) -> None:
    from ragbrain.critic.handover import read_rules
    from ragbrain.errors import CriticLoadError

    path = tmp_path / "handover.json"
    path.write_text('{"rules": {"evidence@m": {"ratio": 0.5, "scripts": "cjk"}}}')
    with pytest.raises(CriticLoadError, match="scripts must be a list"):
        read_rules(path)
    path.write_text('{"rules": {"evidence@m": {"ratio": 0.5, "scripts": ["cjk"], "fit": "x"}}}')
    rule = read_rules(path)["evidence@m"]
    assert rule.scripts == ("cjk",) and rule.source == "ratio 0.50, x"
