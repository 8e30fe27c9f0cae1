"""Printing a run: the abstention line people see, and the JSON fields machines read."""

from __future__ import annotations

import io

from rich.console import Console

from ragbrain.render import print_run, run_to_dict
from ragbrain.state import RetrievalOutput


def output(answerable: bool, reason: str | None) -> RetrievalOutput:
    return RetrievalOutput(
        documents=[],
        complexity=0,
        depth=5,
        candidates=10,
        best_distance=0.8,
        gate=0.455,
        verdict="poor",
        fallback=False,
        critic="on (threshold 0.065)",
        answerable=answerable,
        abstain_reason=reason,
        notes=["critic on: kept 0, dropped 5 of 5"],
    )


def printed(run: RetrievalOutput) -> str:
    buffer = io.StringIO()
    print_run("kafka consumer groups", run, Console(file=buffer, width=200))
    return buffer.getvalue()


def test_an_abstaining_run_prints_why() -> None:
    reason = "the critic judged every chunk irrelevant (best score 0.010 < 0.065)"
    text = printed(output(False, reason))
    assert f"not answerable: {reason}" in text
    assert "no chunks returned" not in text
    assert run_to_dict("q", output(False, reason))["answerable"] is False


def test_an_empty_answerable_run_says_no_chunks() -> None:
    text = printed(output(True, None))
    assert "not answerable" not in text and "no chunks returned" in text


def test_a_chunk_kept_for_a_part_says_which() -> None:
    from langchain_core.documents import Document

    from ragbrain.state import RETRIEVAL_KEY

    trace = {"distance": 0.4, "critic_score": 0.7, "from_fallback": False}
    docs = [
        Document(id="a", page_content="alembic", metadata={RETRIEVAL_KEY: {**trace, "part": "uv"}}),
        Document(id="b", page_content="redis", metadata={RETRIEVAL_KEY: {**trace, "part": None}}),
    ]
    run = {**output(True, None), "documents": docs}
    assert [d["part"] for d in run_to_dict("q", run)["documents"]] == ["uv", None]  # type: ignore[arg-type]
    lines = [line for line in printed(run).splitlines() if "distance 0.400" in line]  # type: ignore[arg-type]
    assert ["(for 'uv')" in line for line in lines] == [True, False]


def test_escape_sequences_in_notes_never_reach_the_terminal() -> None:
    from langchain_core.documents import Document

    from ragbrain.state import RETRIEVAL_KEY

    text = (
        "\x1b[31mred alert\x1b[0m \x1b]0;owned\x07kept "
        "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x07bell"
    )
    trace = {"distance": 0.1, "critic_score": None, "from_fallback": False}
    doc = Document(
        page_content=text,
        metadata={"source": "\x1b[2Jbug.md", "type": "bug", "chunk": 0, RETRIEVAL_KEY: trace},
    )
    run = output(True, None)
    run["documents"] = [doc]
    run["verdict"] = "good"
    shown = printed(run)
    assert "\x1b" not in shown and "\x07" not in shown
    assert "red alert kept link bell" in shown and "bug.md" in shown and "[31m" not in shown
