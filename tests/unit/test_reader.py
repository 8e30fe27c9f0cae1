"""Reading notes back from the store: whole, by lines, by chunk; caps; bad input as a table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragbrain import InvalidInputError, read_source
from ragbrain.ingest import ingest
from ragbrain.store import Store
from ragbrain.store.reader import parse_target
from tests.support.fakes import BagOfWordsEmbeddings

FRONT = "---\ntitle: Runbook\ntype: howto\ntags: [ops]\n---\n\n"
WORDS = [
    "deploy",
    "backup",
    "cache",
    "queue",
    "schema",
    "index",
    "replica",
    "alert",
    "rollback",
    "migration",
]


def _runbook() -> str:
    """A note long enough for several chunks: paragraphs, a list and an indented block."""
    parts = ["# Runbook"]
    for n in range(12):
        word = WORDS[n % len(WORDS)]
        parts.append(
            f"Step {n}: check the {word} first, then the {WORDS[(n + 3) % 10]} and the "
            f"{WORDS[(n + 5) % 10]}; write down what you saw and when, in the log of step {n}."
        )
        if n % 4 == 1:
            parts.append(f"- item {n}a\n- item {n}b\n    indented code {n}\n    more code {n}")
    return FRONT + "\n\n".join(parts) + "\n"


@pytest.fixture
def runbook(tmp_path: Path, fake_embeddings: BagOfWordsEmbeddings) -> tuple[Store, list[str]]:
    """A store holding ops/runbook.md; returns the store and the file's lines."""
    notes = tmp_path / "notes"
    (notes / "ops").mkdir(parents=True)
    text = _runbook()
    (notes / "ops" / "runbook.md").write_text(text, encoding="utf-8")
    (notes / "ops" / "short.md").write_text("# Short\n\nOne line.", encoding="utf-8")
    store = Store.open(tmp_path / "store", fake_embeddings, create=True)
    ingest(notes, store)
    return store, text.split("\n")


def _chunks(store: Store, source: str) -> list[dict[str, Any]]:
    return sorted((m for _, m in store.chunks_of(source)), key=lambda m: m["chunk"])


def test_whole_note_is_the_file_after_its_front_matter(runbook: tuple[Store, list[str]]) -> None:
    store, lines = runbook
    assert len(_chunks(store, "ops/runbook.md")) >= 3  # the rebuild joins several chunks

    excerpt = read_source(store, "ops/runbook.md")

    first = lines.index("# Runbook") + 1  # 7: five front matter lines and a blank one
    last = len(lines) - 1  # the file ends with a newline
    assert (excerpt.start_line, excerpt.end_line, excerpt.first_line) == (first, last, first)
    assert excerpt.text == "\n".join(lines[first - 1 : last])
    assert (excerpt.truncated, excerpt.next_lines, excerpt.title) == (False, None, "Runbook")


def test_a_moved_file_is_still_read_from_the_store(
    runbook: tuple[Store, list[str]], tmp_path: Path
) -> None:
    store, lines = runbook
    (tmp_path / "notes" / "ops" / "runbook.md").rename(tmp_path / "moved.md")

    assert read_source(store, "ops/runbook.md", lines=(12, 30)).text == "\n".join(lines[11:30])


def test_a_chunk_with_neighbours_is_whole_lines_around_it(
    runbook: tuple[Store, list[str]],
) -> None:
    store, lines = runbook
    chunks = _chunks(store, "ops/runbook.md")
    texts = {m["chunk"]: t for t, m in store.chunks_of("ops/runbook.md")}

    alone = read_source(store, "ops/runbook.md", chunk=1)
    around = read_source(store, "ops/runbook.md", chunk=1, neighbours=1)

    assert (alone.start_line, alone.end_line) == (chunks[1]["start_line"], chunks[1]["end_line"])
    assert texts[1] in alone.text
    assert (around.start_line, around.end_line) == (
        chunks[0]["start_line"],
        chunks[2]["end_line"],
    )
    assert around.text == "\n".join(lines[around.start_line - 1 : around.end_line])
    assert around.chunks[:3] == (0, 1, 2)


def test_a_cut_says_where_to_read_on_and_reading_on_gives_the_rest(
    runbook: tuple[Store, list[str]],
) -> None:
    store, _ = runbook
    whole = read_source(store, "ops/runbook.md")
    parts, lines = [], None
    for _ in range(50):
        part = read_source(store, "ops/runbook.md", lines=lines, max_chars=300)
        assert len(part.text) <= 300
        parts.append(part.text)
        if part.next_lines is None:
            break
        assert part.truncated and part.next_lines[0] == (part.end_line or 0) + 1
        lines = part.next_lines
    assert len(parts) > 3
    assert "\n".join(parts) == whole.text


def test_a_huge_range_is_read_to_the_end_and_capped(runbook: tuple[Store, list[str]]) -> None:
    store, lines = runbook
    excerpt = read_source(store, "ops/runbook.md", lines=(8, 10**9), max_chars=200)
    assert excerpt.start_line == 8 and excerpt.truncated
    assert excerpt.next_lines == ((excerpt.end_line or 0) + 1, len(lines) - 1)  # to the end
    assert read_source(store, "ops/short.md", lines=(1, 10**9)).text == "# Short\n\nOne line."


def test_one_line_longer_than_the_cap_is_cut_inside(
    tmp_path: Path, fake_embeddings: BagOfWordsEmbeddings
) -> None:
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "long.txt").write_text("word " * 100 + "\nsecond line\n")
    store = Store.open(tmp_path / "store", fake_embeddings, create=True)
    ingest(tmp_path / "n", store)
    excerpt = read_source(store, "long.txt", max_chars=50)
    assert (len(excerpt.text), excerpt.truncated, excerpt.next_lines) == (50, True, (2, 2))


def test_control_characters_are_removed(
    tmp_path: Path, fake_embeddings: BagOfWordsEmbeddings
) -> None:
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "esc.md").write_text("# Esc\n\nred \x1b[31malert\x1b[0m \u202eevil\n")
    store = Store.open(tmp_path / "store", fake_embeddings, create=True)
    ingest(tmp_path / "n", store)
    assert read_source(store, "esc.md").text == "# Esc\n\nred [31malert[0m evil"


@pytest.fixture
def other_store_source(tmp_path: Path, fake_embeddings: BagOfWordsEmbeddings) -> str:
    """A note in another store: its source must be unknown to ours."""
    (tmp_path / "other" / "team").mkdir(parents=True)
    (tmp_path / "other" / "team" / "secret.md").write_text("# Team secret\n\nNot here.")
    ingest(tmp_path / "other", Store.open(tmp_path / "store2", fake_embeddings, create=True))
    return "team/secret.md"


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("../notes/ops/runbook.md", {}, "must not hold '..'"),
    ("ops/../ops/runbook.md", {}, "must not hold '..'"),
    ("/etc/passwd", {}, "not an absolute path"),
    ("{abs}", {}, "not an absolute path"),
    ("C:\\notes\\x.md", {}, "not an absolute path"),
    ("~/notes/x.md", {}, "not an absolute path"),
    ("ops\\runbook.md", {}, "backslashes"),
    ("", {}, "source is empty"),
    ("ops/run\x1bbook.md", {}, "control characters"),
    ("x" * 1001, {}, "longer than 1000"),
    ("{other}", {}, "unknown source 'team/secret.md'"),
    ("ops/nothing.md", {}, "unknown source 'ops/nothing.md'"),
    ("ops/runbook.md", {"lines": (30, 12)}, r"lines 30-12 are reversed; ask for 12-30"),
    (
        "ops/runbook.md",
        {"lines": (900, 950)},
        r"past the end of ops/runbook.md, which has lines 7-",
    ),
    ("ops/runbook.md", {"lines": (0, 5)}, "line numbers start at 1"),
    (
        "ops/runbook.md",
        {"lines": (1, 5)},
        "front matter, which is not stored; its text is lines 7-",
    ),
    ("ops/runbook.md", {"chunk": 99}, "there is no chunk 99"),
    ("ops/runbook.md", {"chunk": -1}, "there is no chunk -1"),
    ("ops/runbook.md", {"chunk": 0, "neighbours": 11}, r"neighbours must be in 0\.\.10"),
    ("ops/runbook.md", {"neighbours": 1}, "neighbours needs a chunk number"),
    ("ops/runbook.md", {"chunk": 0, "lines": (7, 9)}, "either lines or chunk, not both"),
]


@pytest.mark.parametrize(
    ("source", "kwargs", "message"),
    BAD,
    ids=[
        "dot-dot-up",
        "dot-dot-inside",
        "absolute",
        "absolute-real-file",
        "windows-drive",
        "home",
        "backslash",
        "empty",
        "control-char",
        "too-long",
        "other-store",
        "unknown",
        "reversed",
        "past-the-end",
        "line-zero",
        "front-matter",
        "chunk-out-of-range",
        "chunk-negative",
        "neighbours-too-many",
        "neighbours-without-chunk",
        "lines-and-chunk",
    ],
)
def test_bad_reads_are_refused_clearly(
    runbook: tuple[Store, list[str]],
    other_store_source: str,
    tmp_path: Path,
    source: str,
    kwargs: dict[str, Any],
    message: str,
) -> None:
    store, _ = runbook
    source = source.format(abs=tmp_path / "notes" / "ops" / "runbook.md", other=other_store_source)
    with pytest.raises(InvalidInputError, match=message) as caught:
        read_source(store, source, **kwargs)
    assert str(tmp_path) not in str(caught.value)  # no path of this machine is named


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("bug/x.md", ("bug/x.md", None)),
        ("bug/x.md:12-30", ("bug/x.md", (12, 30))),
        ("bug/x.md:12", ("bug/x.md", (12, 12))),
        ("bug/x.md:12-", ("bug/x.md", (12, 10_000_000))),
        ("odd:name.md", ("odd:name.md", None)),
    ],
    ids=["plain", "range", "one-line", "open-end", "colon-in-name"],
)
def test_parse_target(target: str, expected: tuple[str, tuple[int, int] | None]) -> None:
    assert parse_target(target) == expected
