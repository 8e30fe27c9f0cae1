"""The strict level's cuts fit on notes folders: a store of notes takes them, any other store
(or a missing, unreadable or stale fit file) keeps the critic's own."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from ragbrain.context import RetrievalContext
from ragbrain.critic.evidence import EvidenceCritic
from ragbrain.errors import InvalidInputError
from ragbrain.refusal import abstain
from ragbrain.refusal.abstain import notes_cuts, read_notes_cuts
from ragbrain.refusal.offtopic import OffTopicCut
from ragbrain.state import RetrievalInput
from ragbrain.store import Store


def entry(**changes: Any) -> dict[str, Any]:
    cuts = {
        "critic_below": 0.8,
        "distance_above": 0.43,
        "coverage_below": 0.55,
        "min_per_source": 1.25,
        "layer": "abc",
    }
    return {**cuts, **changes}


def write(path: Path, **changes: Any) -> Path:
    path.write_text(json.dumps({"cuts": {"evidence": entry(**changes)}}), encoding="utf-8")
    return path


def test_a_store_of_notes_takes_the_notes_cuts_and_others_keep_their_own(tmp_path: Path) -> None:
    path = write(tmp_path / "cuts.json")
    got = notes_cuts("evidence", "abc", 3.0, path)
    assert got is not None and got.coverage_below == 0.55 and "notes folders" in got.source
    assert notes_cuts("evidence", "abc", 1.25, path) is not None  # the bound is inclusive
    assert notes_cuts("evidence", "abc", 1.0, path) is None  # one chunk a document
    assert notes_cuts("evidence", "abc", None, path) is None  # not measured
    assert notes_cuts("evidence", "other", 3.0, path) is None  # fit with another layer
    assert notes_cuts("transformer", "abc", 3.0, path) is None  # no cuts for that kind


def test_a_missing_file_keeps_the_critics_cuts(tmp_path: Path) -> None:
    assert notes_cuts("evidence", "abc", 3.0, tmp_path / "none.json") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not a readable JSON file"),
        ("[]", "must hold an object 'cuts'"),
        (json.dumps({"cuts": {"evidence": entry(layer="")}}), "layer must name"),
        (json.dumps({"cuts": {"evidence": entry(min_per_source="2")}}), "min_per_source"),
        (json.dumps({"cuts": {"evidence": entry(critic_below=3.0)}}), "critic_below"),
        (json.dumps({"cuts": {"evidence": 1}}), "must be an object"),
    ],
)
def test_an_unreadable_file_names_the_problem_and_falls_back_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, text: str, message: str
) -> None:
    path = tmp_path / "cuts.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message):
        read_notes_cuts(path)
    with caplog.at_level(logging.WARNING, logger="ragbrain.refusal.abstain"):
        assert notes_cuts("evidence", "abc", 3.0, path) is None
    assert message in caplog.text and "critic's own cuts" in caplog.text


def test_the_shipped_cuts_were_fit_with_the_shipped_layer() -> None:
    shipped = read_notes_cuts(abstain.default_notes_cuts_path())
    critic = EvidenceCritic()
    assert shipped["evidence"].layer == critic.fingerprint
    on_notes = critic.for_notes(shipped["evidence"].min_per_source + 1)
    assert on_notes.abstain_thresholds == shipped["evidence"].thresholds
    assert critic.for_notes(1.0) is critic and critic.for_notes(None) is critic


def test_the_graph_gives_a_store_of_notes_the_notes_cuts(
    fake_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragbrain.graph import build_graph
    from ragbrain.store.lexical import LexicalSearcher

    critic = EvidenceCritic()
    # Cuts every question meets: the run refuses exactly when the graph chose them.
    path = write(
        tmp_path / "cuts.json",
        critic_below=1.0,
        distance_above=0.0,
        coverage_below=None,
        layer=critic.fingerprint,
    )
    monkeypatch.setattr(abstain, "default_notes_cuts_path", lambda: path)
    lexical = LexicalSearcher(fake_store)
    query: RetrievalInput = {"query": "nightly backup credentials expired", "type_filter": None}
    context = RetrievalContext(abstain="strict")

    def run(per_source: float) -> dict[str, Any]:
        cut = OffTopicCut(2.0, 2.0, "never refuses", "test", per_source=per_source)
        graph = build_graph(fake_store, critic, lexical=lexical, offtopic=cut)
        out: dict[str, Any] = graph.invoke(query, context=context)
        return out

    notes = run(3.0)
    assert notes["documents"] == [] and "fit on notes folders" in (notes["abstain_reason"] or "")
    passages = run(1.0)
    assert "fit on notes folders" not in (passages["abstain_reason"] or "")


def cuts(**changes: Any) -> abstain.AbstainThresholds:
    values: dict[str, Any] = {"one_note_above": 0.8, "one_note_chunks": 2, **changes}
    return abstain.AbstainThresholds(0.8, 0.43, "fit on notes folders", **values)


def test_a_confident_set_of_one_note_is_kept_and_a_spread_one_is_not() -> None:
    kept = abstain.one_note(["a.md", "a.md"], [0.9, 0.5], cuts())
    assert kept is not None and "one note" in kept and "0.900" in kept
    assert abstain.one_note(["a.md", "b.md"], [0.9, 0.85], cuts()) is None  # two notes
    assert abstain.one_note(["a.md", "a.md"], [0.7, 0.6], cuts()) is None  # not confident
    assert abstain.one_note(["a.md"], [0.95], cuts()) is None  # fewer chunks than asked
    assert abstain.one_note(["a.md"], [0.95], cuts(one_note_chunks=1)) is not None
    assert abstain.one_note(["a.md", "a.md"], [0.9, 0.9], cuts(one_note_above=None)) is None
    assert abstain.one_note(["a.md", "a.md"], [float("nan")] * 2, cuts()) is None
    assert abstain.one_note(["a.md", "a.md"], [0.9, 0.9], None) is None


def test_the_one_note_rule_is_read_from_the_cuts_file(tmp_path: Path) -> None:
    path = write(tmp_path / "cuts.json", one_note_above=0.85, one_note_chunks=3)
    got = notes_cuts("evidence", "abc", 3.0, path)
    assert got is not None and got.one_note_above == 0.85 and got.one_note_chunks == 3
    path = write(tmp_path / "old.json")  # a file without the rule: the cuts alone decide
    old = read_notes_cuts(path)["evidence"].thresholds
    assert old.one_note_above is None
    with pytest.raises(InvalidInputError, match="one_note_chunks"):
        read_notes_cuts(write(tmp_path / "bad.json", one_note_chunks=1.5))
    with pytest.raises(InvalidInputError, match="one_note_above"):
        read_notes_cuts(write(tmp_path / "bad.json", one_note_above=2.0))


def test_at_the_strict_level_one_notes_confident_set_is_kept_and_a_spread_set_refused(
    fake_store: Store,
) -> None:
    from ragbrain.graph import build_graph
    from ragbrain.store.lexical import LexicalSearcher

    # Cuts every question meets, and a one-note rule every scored set of one note meets: the
    # run answers exactly when what it would hand over comes from one note.
    rule = abstain.AbstainThresholds(
        1.0, 0.0, "test", coverage_below=None, one_note_above=0.0, one_note_chunks=1
    )
    cut = OffTopicCut(2.0, 2.0, "never refuses", "test", per_source=3.0)
    lexical = LexicalSearcher(fake_store)
    # Every chunk the critic keeps goes out (no hand-over rule): several notes' at depth 10.
    graph = build_graph(fake_store, EvidenceCritic(), lexical=lexical, offtopic=cut, handover=None)
    query: RetrievalInput = {"query": "nightly backup credentials expired", "type_filter": None}

    def run(k: int) -> dict[str, Any]:
        context = RetrievalContext(
            abstain="strict", abstain_thresholds=rule, critic_threshold=0.0, k=k
        )
        out: dict[str, Any] = graph.invoke(query, context=context)
        return out

    one = run(1)
    assert one["answerable"] and len({d.metadata["source"] for d in one["documents"]}) == 1
    assert any("all come from one note" in line for line in one["notes"])
    spread = run(10)
    assert not spread["answerable"] and spread["documents"] == []
    assert "nothing fits" in (spread["abstain_reason"] or "")


def test_at_the_strict_level_a_set_whose_rare_words_a_chunk_holds_is_kept_over_notes(
    fake_store: Store,
) -> None:
    """A question naming what a chunk holds is not missing its answer, whether the set to
    hand over is one note's or spreads over several; without the support floor it is
    refused."""
    from ragbrain.graph import build_graph
    from ragbrain.store.lexical import LexicalSearcher

    cut = OffTopicCut(2.0, 2.0, "never refuses", "test", per_source=3.0)
    lexical = LexicalSearcher(fake_store)
    graph = build_graph(fake_store, EvidenceCritic(), lexical=lexical, offtopic=cut, handover=None)
    query: RetrievalInput = {"query": "nightly backup credentials expired", "type_filter": None}

    def run(support: float | None) -> dict[str, Any]:
        rule = abstain.AbstainThresholds(  # refuses every set but the one-note rule's
            1.0, 0.0, "test", coverage_below=None, one_note_chunks=1, one_note_support=support
        )
        context = RetrievalContext(
            abstain="strict", abstain_thresholds=rule, critic_threshold=0.0, k=10
        )
        out: dict[str, Any] = graph.invoke(query, context=context)
        return out

    kept = run(0.5)
    assert kept["lexical_support"] is not None and kept["lexical_support"] >= 0.5
    assert len({d.metadata["source"] for d in kept["documents"]}) > 1  # a spread set
    assert any("strict: kept" in line and "rare words" in line for line in kept["notes"])
    refused = run(None)  # no support floor: the strict cuts alone decide
    assert not refused["answerable"] and refused["documents"] == []
