"""Overview questions: their cues, the deeper search they get, and the hand-over of the best
chunk of each note."""

from __future__ import annotations

import math

import pytest

from ragbrain.context import RetrievalContext
from ragbrain.critic.handover import HandOverRule, breadth
from ragbrain.errors import InvalidInputError
from ragbrain.graph import build_graph
from ragbrain.nodes.depth import plan_depth
from ragbrain.query.overview import overview_cue
from ragbrain.store import Store
from tests.support.fakes import OverlapCritic


@pytest.mark.parametrize(
    ("question", "cue"),
    [
        ("What have I written about managing Wi-Fi on Linux?", "what the notes hold"),
        ("what do we know about the billing migration", "what the notes hold"),
        ("DNS servers: what do my notes cover?", "what the notes hold"),
        ("LVM: everything I have on volume groups", "what the notes hold"),
        ("Which command-line tools can compress files?", "inventory"),
        ("tools for converting CSV files in the terminal", "inventory"),
        ("list the ways I've set up redirects", "inventory"),
        ("consul: cluster health, service DNS records, maintenance mode", "three or more facets"),
        ("a disk filling up (pg_wal growing, archiving stuck, slots)", "three or more facets"),
        ("Dockerについて書いたページはどれ？", "what the notes hold"),
        ("我记过哪些跟 nginx 有关的笔记？", "what the notes hold"),
        ("มีหน้าไหนบ้างที่พูดถึงการแชร์รายงาน", "what the notes hold"),
        ("ネットワークの設定（DNS、プロキシ、VPN）", "three or more facets"),
    ],
)
def test_an_overview_question_names_its_cue(question: str, cue: str) -> None:
    said = overview_cue(question)
    assert said is not None and cue in said


@pytest.mark.parametrize(
    "question",
    [
        "interactive rebase to reorder or drop some of my last 5 commits",
        "git: search commit messages for a word, ignoring case",  # one comma after the colon
        "where is my global git config file and how do I open it in an editor",
        "write custom markdown to the summary page of a GitHub Actions run",
        "what colour does argon glow compared with neon?",
        "toolsetoverview of the week",  # a word holding a cue is not one
        "バックアップの方法：設定と確認",  # two facets
        "铁路沿线设有哪些站点？",  # 'which ones', about the world, not the notes
        "北陸線の事故で全部何人が亡くなった？",
    ],
)
def test_a_pointed_question_has_no_cue(question: str) -> None:
    assert overview_cue(question) is None


def test_an_overview_question_is_searched_deeper_and_says_why() -> None:
    plan = plan_depth("which tools can resize images", RetrievalContext())
    assert plan["depth"] == 10 and plan["candidates"] == 20
    assert plan["overview"] is not None and "an overview question" in plan["notes"][0]
    plain = plan_depth("resize an image", RetrievalContext())
    assert plain["overview"] is None and plain["candidates"] == 10
    off = plan_depth("which tools can resize images", RetrievalContext(overview=False))
    assert off["overview"] is None and off["candidates"] == 10
    asked = plan_depth("which tools can resize images", RetrievalContext(k=4))
    assert asked["overview"] is None and asked["candidates"] == 4
    compound = plan_depth("which tools: imagemagick vs pillow", RetrievalContext())
    assert compound["overview"] is None


def test_the_share_of_the_cut_must_be_a_share() -> None:
    with pytest.raises(InvalidInputError, match="overview_share must be in"):
        RetrievalContext(overview_share=1.5)
    with pytest.raises(InvalidInputError, match="judged_overview"):
        RetrievalContext(judged_overview=0)


def test_breadth_keeps_each_notes_best_chunk_in_score_order_up_to_the_count() -> None:
    sources = ["a.md", "b.md", "a.md", "c.md", "d.md"]
    scores = [0.5, 0.9, 0.8, 0.3, math.nan]
    kept, line = breadth([0, 1, 2, 3, 4], scores, sources, 10)
    assert kept == [1, 2, 3, 4]  # b, a (its 0.8 chunk), c, d (unscored: last)
    assert "the best chunk of each of 4 notes" in line and "1 other chunk" in line
    kept, line = breadth([0, 1, 2, 3, 4], scores, sources, 2)
    assert kept == [1, 2] and "the 2 best of 4" in line


def test_the_graph_hands_an_overview_question_one_chunk_of_each_note(fake_store: Store) -> None:
    critic = OverlapCritic()
    critic.threshold = 0.0  # keeps every candidate
    graph = build_graph(fake_store, critic, handover=HandOverRule(1.0, "test"))
    pointed = graph.invoke(
        {"query": "nightly backup credentials expired", "type_filter": None},
        context=RetrievalContext(abstain="off"),
    )
    assert len(pointed["documents"]) == 1  # the rule: the best chunk alone
    wide = graph.invoke(
        {"query": "what have I written about nightly backup credentials", "type_filter": None},
        context=RetrievalContext(abstain="off"),
    )
    sources = [d.metadata["source"] for d in wide["documents"]]
    assert len(sources) > 1 and len(sources) == len(set(sources)) <= wide["depth"]
    assert wide["overview"] is not None
    assert any("an overview question, the best chunk of each" in n for n in wide["notes"])
    assert any("an overview question: 0.25 of the critic's cut" in n for n in wide["notes"])
    off = graph.invoke(
        {"query": "what have I written about nightly backup credentials", "type_filter": None},
        context=RetrievalContext(abstain="off", overview=False),
    )
    assert len(off["documents"]) == 1
