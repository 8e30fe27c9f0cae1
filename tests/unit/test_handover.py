"""The hand-over rule: the best chunk, and another chunk (of its note or another) only when close
in score."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragbrain.critic import handover
from ragbrain.critic.handover import HandOverRule, narrow, read_rules, rule_for
from ragbrain.errors import CriticLoadError
from ragbrain.graph import build_graph
from ragbrain.store import Store
from tests.support.fakes import OverlapCritic

RULE = HandOverRule(0.6, "test")


def test_only_the_best_notes_chunks_go_when_the_others_score_far_below() -> None:
    sources = ["b.md", "a.md", "c.md", "a.md"]
    scores = [0.3, 0.9, 0.2, 0.7]
    chosen, line = narrow([0, 1, 2, 3], scores, sources, RULE)
    assert chosen == [1, 3]
    assert "only the best note (a.md, 2 chunks)" in line and "2 other kept chunks" in line


def test_a_close_note_stays_and_each_notes_chunks_go_together() -> None:
    sources = ["b.md", "a.md", "c.md", "b.md", "a.md"]
    scores = [0.6, 0.9, 0.1, 0.2, 0.55]
    chosen, line = narrow([0, 1, 2, 3, 4], scores, sources, RULE)
    # b.md's first chunk is close (0.6 >= 0.54), its second is not; a.md's second is (0.55).
    assert chosen == [0, 1, 4]
    assert "3 chunks of 2 notes" in line


def test_the_best_notes_own_far_chunks_stay_behind() -> None:
    sources = ["a.md", "a.md", "b.md", "a.md"]
    chosen, line = narrow([0, 1, 2, 3], [0.9, 0.2, 0.6, 0.7], sources, RULE)
    assert chosen == [0, 3, 2]  # a.md's 0.2 section goes; each note's chunks together
    assert "3 chunks of 2 notes; 1 scored below" in line
    chosen, line = narrow([0, 1], [0.3, 0.9], ["a.md", "a.md"], RULE)
    assert chosen == [1]
    assert "only the best chunk (a.md); 1 other kept chunk scored below 0.60 of its 0.900" in line


def test_a_single_chunk_or_all_close_is_left_as_it_is() -> None:
    assert narrow([0], [0.9], ["a.md"], RULE) == ([0], "")
    chosen, line = narrow([0, 1], [0.8, 0.9], ["a.md", "b.md"], RULE)
    assert chosen == [0, 1] and "all 2 kept chunks score within" in line


def test_ratio_zero_keeps_everything_and_one_keeps_the_best_notes_only() -> None:
    sources, scores = ["a.md", "b.md", "c.md"], [0.5, 0.9, 0.89]
    assert narrow([0, 1, 2], scores, sources, HandOverRule(0.0, "t"))[0] == [0, 1, 2]
    chosen, line = narrow([0, 1, 2], scores, sources, HandOverRule(1.0, "t"))
    assert chosen == [1] and "only the best chunk (b.md)" in line


NOTES_RULE = HandOverRule(0.8, "test", others=0.4, order="score")


def test_a_plateau_of_documents_keeps_each_documents_best_chunk() -> None:
    # Five documents whose best chunks score 0.9-0.45 (>= 0.4 of the best): each stays, by
    # its best chunk; their weaker chunks (0.6 and 0.5 < 0.8 x 0.9) stay behind.
    sources = ["d.md", "a.md", "b.md", "a.md", "c.md", "e.md", "b.md"]
    scores = [0.45, 0.9, 0.6, 0.5, 0.7, 0.5, 0.75]
    chosen, line = narrow(list(range(7)), scores, sources, NOTES_RULE)
    # Notes in the order of their best score: a (0.9), b (0.75), c (0.7), e (0.5), d (0.45).
    assert chosen == [1, 6, 4, 5, 0]
    assert [sources[i] for i in chosen] == ["a.md", "b.md", "c.md", "e.md", "d.md"]
    assert "5 chunks of 5 notes; 2 scored below 0.80 (another note's best chunk: 0.40)" in line


def test_a_clear_winner_is_narrowed_to_its_own_close_chunks() -> None:
    # One note scores 0.95; the others' best chunks are below 0.4 x 0.95 = 0.38.
    sources = ["b.md", "a.md", "c.md", "a.md", "a.md"]
    scores = [0.3, 0.95, 0.2, 0.8, 0.4]
    chosen, line = narrow(list(range(5)), scores, sources, NOTES_RULE)
    assert chosen == [1, 3]  # a.md's 0.8 section (>= 0.76) goes with it, its 0.4 one does not
    assert "only the best note (a.md, 2 chunks); 3 other kept chunks scored below 0.80" in line


def test_others_equal_to_the_ratio_in_rank_order_is_the_one_ratio_rule() -> None:
    sources = ["b.md", "a.md", "c.md", "b.md", "a.md", "d.md"]
    scores = [0.6, 0.9, 0.1, 0.2, 0.55, 0.3]
    one = narrow(list(range(6)), scores, sources, HandOverRule(0.5, "t"))[0]
    same = HandOverRule(0.5, "t", others=0.5, order="rank")
    assert narrow(list(range(6)), scores, sources, same)[0] == one == [0, 1, 4]
    by_score = HandOverRule(0.5, "t", order="score")
    assert narrow(list(range(6)), scores, sources, by_score)[0] == [1, 4, 0]


def test_caps_keep_a_long_pages_best_sections_and_anothers_best_chunk() -> None:
    # a.md is a long page whose sections all score near its best; b.md is a close runner-up
    # with two close chunks; c.md is far.
    sources = ["a.md", "b.md", "a.md", "a.md", "b.md", "a.md", "c.md"]
    scores = [0.9, 0.85, 0.88, 0.86, 0.8, 0.3, 0.2]
    rule = HandOverRule(0.5, "t", others=0.5, order="score")
    assert narrow(list(range(7)), scores, sources, rule)[0] == [0, 2, 3, 1, 4]
    capped = HandOverRule(0.5, "t", others=0.5, order="score", per_note=2, others_per_note=1)
    chosen, line = narrow(list(range(7)), scores, sources, capped)
    assert chosen == [0, 2, 1]  # a.md's best two (0.9, 0.88), b.md's best (0.85)
    said = "4 scored below 0.50 of the best or past 2 chunks a note / 1 chunk of another note"
    assert f"3 chunks of 2 notes; {said}" in line
    one = HandOverRule(0.5, "t", others=0.5, order="score", per_note=1)
    assert narrow(list(range(7)), scores, sources, one)[0] == [0, 1]
    # The best chunk stays whatever the caps: a note whose best is out of the list order.
    assert narrow([1, 0], [0.5, 0.9], ["x.md", "x.md"], one)[0] == [1]


def test_caps_are_read_from_the_rules_file(tmp_path: Path) -> None:
    path = tmp_path / "handover.json"
    path.write_text(
        '{"rules": {"evidence": {"ratio": 0.5, "per_note": 2, "others_per_note": 1}}}',
        encoding="utf-8",
    )
    rule = read_rules(path)["evidence"]
    assert (rule.per_note, rule.others_per_note) == (2, 1)
    assert "2 chunks a note, 1 chunk of another note" in rule.source


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{", "not a readable JSON"),
        ('{"rules": []}', "must hold an object 'rules'"),
        ('{"rules": {"evidence": {"ratio": 1.5}}}', "ratio must be a number"),
        ('{"rules": {"evidence": {"ratio": "0.5"}}}', "ratio must be a number"),
        ('{"rules": {"evidence": {"ratio": 0.5, "min_per_source": -1}}}', "min_per_source"),
        ('{"rules": {"evidence": {}}}', "ratio must be a number"),
        ('{"rules": {"evidence": {"ratio": 0.5, "others": 2}}}', "others must be a number"),
        ('{"rules": {"evidence": {"ratio": 0.5, "order": "name"}}}', "order must be one of"),
        ('{"rules": {"evidence": {"ratio": 0.5, "per_note": 1.5}}}', "whole numbers"),
        ('{"rules": {"evidence": {"ratio": 0.5, "others_per_note": -1}}}', "whole numbers"),
    ],
)
def test_a_malformed_rules_file_is_a_critic_load_error(
    tmp_path: Path, content: str, says: str
) -> None:
    path = tmp_path / "handover.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CriticLoadError, match=says):
        read_rules(path)


def test_a_missing_rules_file_means_no_rule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(CriticLoadError, match="missing"):
        read_rules(tmp_path / "none.json")
    monkeypatch.setattr(handover, "default_rules_path", lambda: tmp_path / "none.json")
    handover.shipped_rules.cache_clear()
    try:
        assert handover.shipped_rules() == {}

        class Evidence:
            kind = "evidence"

        assert rule_for(Evidence()) is None
    finally:
        handover.shipped_rules.cache_clear()


def test_the_shipped_file_reads_and_names_the_evidence_critic() -> None:
    handover.shipped_rules.cache_clear()
    rules = handover.shipped_rules()
    assert "evidence" in rules and 0.0 <= rules["evidence"].ratio <= 1.0
    assert rules["evidence"].others is not None and rules["evidence"].order in ("rank", "score")
    assert rule_for(OverlapCritic()) is None  # a critic without a kind: no rule


def test_the_graph_narrows_what_the_critic_keeps_and_says_so(fake_store: Store) -> None:
    critic = OverlapCritic()
    critic.threshold = 0.0  # keeps every candidate
    wide = build_graph(fake_store, critic, handover=None)
    narrow_ = build_graph(fake_store, critic, handover=HandOverRule(1.0, "test"))
    query = {"query": "nightly backup credentials expired", "type_filter": None}
    from ragbrain.context import RetrievalContext

    context = RetrievalContext(abstain="off")
    all_kept = wide.invoke(query, context=context)
    best_only = narrow_.invoke(query, context=context)
    sources = {d.metadata["source"] for d in best_only["documents"]}
    assert len(sources) == 1
    assert len(best_only["documents"]) < len(all_kept["documents"])
    assert len(best_only["documents"]) == 1
    assert any("hand-over: only the best chunk" in n for n in best_only["notes"])


def test_a_k_set_by_the_caller_hands_over_every_chunk_the_critic_keeps(fake_store: Store) -> None:
    """LangChain's ``k``: the number of chunks asked for. The critic still drops what it
    judges irrelevant; the hand-over rule does not narrow the rest."""
    from ragbrain.context import RetrievalContext

    critic = OverlapCritic()
    critic.threshold = 0.0  # keeps every candidate
    graph = build_graph(fake_store, critic, handover=HandOverRule(1.0, "test"))
    query = {"query": "nightly backup credentials expired", "type_filter": None}
    asked = graph.invoke(query, context=RetrievalContext(abstain="off", k=3))
    assert len(asked["documents"]) == 3
    assert any("hand-over: every kept chunk (k=3 set by the caller)" in n for n in asked["notes"])
    narrowed = graph.invoke(query, context=RetrievalContext(abstain="off"))
    assert len(narrowed["documents"]) == 1


def test_a_store_of_one_chunk_passages_keeps_the_critics_hand_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "handover.json"
    path.write_text('{"rules": {"evidence": {"ratio": 0.5, "min_per_source": 1.25}}}')
    monkeypatch.setattr(handover, "default_rules_path", lambda: path)
    handover.shipped_rules.cache_clear()
    try:

        class Evidence:
            kind = "evidence"

        assert rule_for(Evidence(), per_source=1.0) is None
        got = rule_for(Evidence(), per_source=3.2)
        assert got is not None and got.ratio == 0.5 and got.min_per_source == 1.25
        assert rule_for(Evidence()) is not None  # not measured: the rule applies
    finally:
        handover.shipped_rules.cache_clear()


def test_the_store_cut_records_chunks_per_note(fake_store: Store) -> None:
    from ragbrain.refusal.offtopic import calibrate

    cut = calibrate(fake_store)
    assert cut is None or cut.per_source >= 1.0


def test_an_unsure_best_score_keeps_everything_the_critic_kept() -> None:
    rule = HandOverRule(0.5, "test", confident=0.8)
    chosen, line = narrow([0, 1, 2], [0.7, 0.2, 0.1], ["a.md", "b.md", "c.md"], rule)
    assert chosen == [0, 1, 2] and "unsure of the best note" in line
    assert narrow([0, 1, 2], [0.9, 0.2, 0.1], ["a.md", "b.md", "c.md"], rule)[0] == [0]


class _EvidenceKind(OverlapCritic):
    kind = "evidence"


def test_the_graph_without_a_rules_file_hands_over_all_kept_and_a_broken_one_is_named(
    fake_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragbrain.context import RetrievalContext

    critic = _EvidenceKind()
    critic.threshold = 0.0  # keeps every candidate
    query = {"query": "nightly backup credentials expired", "type_filter": None}
    context = RetrievalContext(abstain="off")
    wide = build_graph(fake_store, critic, handover=None).invoke(query, context=context)
    path = tmp_path / "handover.json"
    monkeypatch.setattr(handover, "default_rules_path", lambda: path)
    handover.shipped_rules.cache_clear()
    try:
        missing = build_graph(fake_store, critic).invoke(query, context=context)
        assert len(missing["documents"]) == len(wide["documents"]) > 1
        assert not any("hand-over" in n for n in missing["notes"])
        path.write_text('{"rules": {"evidence": {"ratio": 1.0}}}', encoding="utf-8")
        handover.shipped_rules.cache_clear()
        ruled = build_graph(fake_store, critic).invoke(query, context=context)
        assert len(ruled["documents"]) < len(wide["documents"])  # the file is what narrows
        path.write_text('{"rules": {"evidence": {"ratio": 2}}}', encoding="utf-8")
        handover.shipped_rules.cache_clear()
        with pytest.raises(CriticLoadError, match=r"handover\.json.*rules\.evidence\.ratio"):
            build_graph(fake_store, critic)
    finally:
        handover.shipped_rules.cache_clear()
