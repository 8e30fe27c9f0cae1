"""Line spans of chunks: exact, 1-based and inclusive, counted in the file (front matter too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragbrain.ingest.chunks import chunk_note, splitter
from ragbrain.ingest.files import read_note
from ragbrain.ingest.spans import Span, line_spans
from ragbrain.render import cite

PARAGRAPHS = [
    "# Deploy checklist\n",
    "Before a deploy, freeze the schema and tell the on-call engineer what is going out.",
    "- run the migrations on a copy of production\n- check the dashboards\n- tag the release",
    "```sh\n    helm upgrade api ./chart --atomic\n    helm history api\n```",
    "If anything fails, roll back with helm rollback and the previous revision number; "
    "then write down what happened in the incident log, with times, so the review has them.",
    "Rollbacks older than a week need the database snapshot of that day as well.",
]
BODY = "\n\n".join(PARAGRAPHS) + "\n"
FRONT = "---\ntitle: Deploy checklist\ntype: howto\ntags: [deploy, helm]\n---\n"

CASES = {
    "markdown-front-matter": ("note.md", FRONT + "\n\n" + BODY),
    "markdown-plain": ("note.md", BODY),
    "text-front-matter": ("note.txt", FRONT + BODY.replace("# ", "")),
    "crlf-and-bom": ("note.md", "\ufeff" + (FRONT + "\n" + BODY).replace("\n", "\r\n")),
    "leading-blank-lines": ("note.txt", "\n\n   \n" + BODY),
}


def _check_exact(raw: str, path: Path) -> int:
    """Every chunk's text lies on exactly its lines of the file as written."""
    note = read_note(path.parent, path, None)
    chunks = chunk_note(note, splitter(24, 6))  # small chunks: many spans, some mid-line
    lines = raw.lstrip("\ufeff").replace("\r\n", "\n").split("\n")
    for chunk in chunks:
        start, end = chunk.metadata["start_line"], chunk.metadata["end_line"]
        assert 1 <= start <= end <= len(lines)
        text_lines = chunk.text.split("\n")
        assert len(text_lines) == end - start + 1
        # A text with n line breaks inside a window of exactly n + 1 lines starts on the
        # window's first line and ends on its last: the span is exact.
        assert chunk.text in "\n".join(lines[start - 1 : end])
        offset = chunk.metadata["start_index"]
        assert note.body[offset : offset + len(chunk.text)] == chunk.text
    return len(chunks)


@pytest.mark.parametrize(("name", "raw"), CASES.values(), ids=list(CASES))
def test_spans_are_exact_lines_of_the_file(tmp_path: Path, name: str, raw: str) -> None:
    path = tmp_path / name
    path.write_bytes(raw.encode("utf-8"))
    assert _check_exact(raw, path) > 4


def test_spans_with_front_matter_by_hand(tmp_path: Path) -> None:
    path = tmp_path / "x.md"
    path.write_text("---\ntype: bug\n---\n\n# Title\n\nfirst para\n\nsecond\npara\n")
    note = read_note(tmp_path, path, None)
    assert note.first_line == 5  # after three front matter lines and one blank line
    spans = [(c.metadata["start_line"], c.metadata["end_line"]) for c in chunk_note(note)]
    assert spans == [(5, 10)]  # one chunk: '# Title' on line 5 to 'para' on line 10


def test_line_spans_by_hand() -> None:
    body = "aa bb\ncc\n\ndd ee\nff"
    assert line_spans(body, ["aa bb\ncc", "cc", "dd ee\nff", "ff"], 3) == [
        Span(3, 4, 0),
        Span(4, 4, 6),
        Span(6, 7, 10),
        Span(7, 7, 16),
    ]


def test_repeated_text_is_located_in_order() -> None:
    body = "same\n\nsame\n\nsame"
    assert [s.start_line for s in line_spans(body, ["same", "same", "same"], 1)] == [1, 3, 5]


def test_a_piece_not_from_the_body_is_refused() -> None:
    with pytest.raises(ValueError, match="chunk 1 is not a part of its note's text"):
        line_spans("abc def", ["abc", "xyz"], 1)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("bug/x.md", 12, 30), "bug/x.md:12-30"),
        (("bug/x.md", 7, 7), "bug/x.md:7"),
        (("bug/x.md", None, None), "bug/x.md"),
    ],
    ids=["range", "one-line", "no-span"],
)
def test_cite(args: tuple[str, int | None, int | None], expected: str) -> None:
    assert cite(*args) == expected
