"""Leaving files out: .gitignore / .ragbrainignore syntax, --exclude / --include, pruning,
and doctor's link-list flag."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragbrain.doctor import diagnose
from ragbrain.errors import InvalidInputError
from ragbrain.ingest import ingest
from ragbrain.ingest.files import scan_notes
from ragbrain.ingest.linklists import link_stats
from ragbrain.store import Store
from tests.support.fakes import NOTES, BagOfWordsEmbeddings

TREE = {
    "README.md": "# Index\n\nroot readme",
    "a.md": "# A\n\nnote a",
    "draft.md": "# Draft\n\nnot ready",
    "sub/README.md": "# Sub index\n\nsub readme",
    "sub/b.md": "# B\n\nnote b",
    "sub/deep/c.md": "# C\n\nnote c",
    "build/out.md": "# Out\n\ngenerated",
    "logs/x.txt": "a log line",
}
ALL = sorted(TREE)
SUB = ("sub/README.md", "sub/b.md", "sub/deep/c.md")


def sources(folder: Path, **options: list[str]) -> list[str]:
    return sorted(n.source for n in scan_notes(folder, **options).notes)  # type: ignore[arg-type]


def without(*gone: str) -> list[str]:
    return [s for s in ALL if s not in gone]


@pytest.mark.parametrize(
    ("ignore_files", "expected"),
    [
        ({}, ALL),
        ({".ragbrainignore": "/README.md\n"}, without("README.md")),
        ({".ragbrainignore": "README.md\n"}, without("README.md", "sub/README.md")),
        ({".gitignore": "build/\n"}, without("build/out.md")),
        ({".gitignore": "*.txt\n# a comment\n\n"}, without("logs/x.txt")),
        ({".gitignore": "**/deep/\n"}, without("sub/deep/c.md")),
        ({".gitignore": "sub/*.md\n"}, without("sub/README.md", "sub/b.md")),
        ({".gitignore": "*.md\n!a.md\n"}, ["a.md", "logs/x.txt"]),
        ({".gitignore": "draft.md\n", ".ragbrainignore": "!draft.md\n"}, ALL),
        ({"sub/.ragbrainignore": "README.md\n"}, without("sub/README.md")),
        ({"sub/.gitignore": "/b.md\n"}, without("sub/b.md")),
        ({"sub/.gitignore": "c.md\n"}, without("sub/deep/c.md")),
        ({".gitignore": "*.md\n", "sub/.gitignore": "!b.md\n"}, ["logs/x.txt", "sub/b.md"]),
        (
            {".gitignore": "sub/\n", "sub/.gitignore": "!b.md\n"},
            without("sub/README.md", "sub/b.md", "sub/deep/c.md"),
        ),
        ({"sub/.ragbrainignore": "/README.md\n"}, without("sub/README.md")),
    ],
    ids=[
        "none",
        "anchored-root-only",
        "unanchored-any-depth",
        "folder",
        "suffix-and-comments",
        "double-star-folder",
        "slash-anchors-to-the-file",
        "negation",
        "ragbrainignore-takes-back-gitignore",
        "nested-applies-to-its-subtree",
        "nested-anchored",
        "nested-any-depth-below",
        "deeper-negation-wins",
        "left-out-folder-is-not-entered",
        "nested-anchored-readme",
    ],
)
def test_ignore_files(
    write_notes: Callable[[dict[str, str]], Path],
    ignore_files: dict[str, str],
    expected: list[str],
) -> None:
    folder = write_notes({**TREE, **ignore_files})
    assert sources(folder) == expected


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"exclude": ["README.md"]}, without("README.md", "sub/README.md")),
        ({"exclude": ["/README.md", "build"]}, without("README.md", "build/out.md")),
        ({"exclude": ["*.txt", "sub/deep/"]}, without("logs/x.txt", "sub/deep/c.md")),
        ({"include": ["sub/**"]}, ["sub/README.md", "sub/b.md", "sub/deep/c.md"]),
        ({"include": ["*.txt"]}, ["logs/x.txt"]),
        ({"include": ["sub/**"], "exclude": ["README.md"]}, ["sub/b.md", "sub/deep/c.md"]),
    ],
    ids=["exclude-name", "exclude-anchored", "exclude-two", "include", "include-suffix", "both"],
)
def test_exclude_and_include(
    write_notes: Callable[[dict[str, str]], Path],
    options: dict[str, list[str]],
    expected: list[str],
) -> None:
    assert sources(write_notes(TREE), **options) == expected


def test_exclude_wins_over_a_negation_in_an_ignore_file(
    write_notes: Callable[[dict[str, str]], Path],
) -> None:
    folder = write_notes({**TREE, ".ragbrainignore": "!a.md\n"})
    assert "a.md" not in sources(folder, exclude=["a.md"])


def test_excluded_paths_are_listed_and_folders_not_entered(
    write_notes: Callable[[dict[str, str]], Path],
) -> None:
    folder = write_notes({**TREE, ".gitignore": "build/\n/README.md\n"})
    scan = scan_notes(folder)
    assert sorted(p.relative_to(folder).as_posix() for p in scan.excluded) == [
        "README.md",
        "build",
    ]


def test_a_single_file_follows_its_folders_rules(
    write_notes: Callable[[dict[str, str]], Path],
) -> None:
    folder = write_notes({**TREE, ".ragbrainignore": "draft.md\n"})
    assert scan_notes(folder / "draft.md").notes == []
    assert [n.source for n in scan_notes(folder / "a.md").notes] == ["a.md"]


@pytest.mark.parametrize(
    "options",
    [{"exclude": ["notes\\"]}, {"include": ["!"]}],
    ids=["bad-exclude", "bad-include"],
)
def test_a_bad_pattern_is_refused(
    write_notes: Callable[[dict[str, str]], Path], options: dict[str, list[str]]
) -> None:
    with pytest.raises(InvalidInputError, match="not a valid gitignore pattern"):
        scan_notes(write_notes(TREE), **options)  # type: ignore[arg-type]


def test_a_bad_line_in_an_ignore_file_is_skipped_with_a_warning(
    write_notes: Callable[[dict[str, str]], Path], caplog: pytest.LogCaptureFixture
) -> None:
    folder = write_notes({**TREE, ".gitignore": "draft.md\nbad\\\n*.txt\n"})
    assert sources(folder) == without("draft.md", "logs/x.txt")
    assert "line 2" in caplog.text and "not a gitignore pattern" in caplog.text


LINKS = "# All notes\n\n" + "\n".join(
    f"- [Note number {i}](topic{i % 7}/note-{i}.md)" for i in range(40)
)


def test_an_excluded_file_already_stored_is_pruned(
    tmp_path: Path, write_notes: Callable[[dict[str, str]], Path]
) -> None:
    folder = write_notes({**NOTES, "README.md": LINKS})
    store = Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)
    ingest(folder, store)
    readme = store.collection.get(where={"source": "README.md"})["ids"]
    assert readme
    (folder / ".ragbrainignore").write_text("/README.md\n", encoding="utf-8")
    report = ingest(folder, store)
    assert store.collection.get(where={"source": "README.md"})["ids"] == []
    assert report.deleted == report.pruned_excluded == len(readme)
    assert [p.name for p in report.excluded] == ["README.md"]
    assert f"1 excluded, {len(readme)} chunks of excluded files pruned" in report.summary()
    again = ingest(folder, store)
    assert (again.deleted, again.pruned_excluded, len(again.excluded)) == (0, 0, 1)


def test_no_prune_keeps_excluded_files_chunks(
    tmp_path: Path, write_notes: Callable[[dict[str, str]], Path]
) -> None:
    folder = write_notes(NOTES)
    store = Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)
    ingest(folder, store)
    count = store.count()
    report = ingest(folder, store, exclude=["bug/"], prune=False)
    assert (report.deleted, store.count()) == (0, count)


def test_doctor_names_a_link_list_with_the_line_to_add(
    tmp_path: Path, write_notes: Callable[[dict[str, str]], Path]
) -> None:
    folder = write_notes({**NOTES, "README.md": LINKS})
    store = Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)
    ingest(folder, store)
    found = {f.check: f for f in diagnose(store.location)}
    flag = found["link lists"]
    assert not flag.ok and "README.md (" in flag.message
    assert f"`/README.md` to {folder / '.ragbrainignore'}" in flag.fix
    (folder / ".ragbrainignore").write_text("/README.md\n", encoding="utf-8")
    ingest(folder, store)
    assert {f.check: f for f in diagnose(store.location)}["link lists"].ok


@pytest.mark.parametrize(
    ("text", "is_list"),
    [
        (LINKS, True),
        ("\n".join(f"* <https://example.com/{i}>" for i in range(25)), True),
        ("\n".join(f"[[note {i}]]" for i in range(25)), True),
        (
            "\n".join(
                f"Step {i}: we read [the guide](g.md) and then changed the settings of the "
                "server so that the backups run at night and alert when they fail."
                for i in range(30)
            ),
            False,
        ),
        ("\n".join(f"- [n{i}](n{i}.md)" for i in range(10)), False),
        ("Just prose.\n" * 50, False),
    ],
    ids=["markdown-links", "bare-urls", "wiki-links", "prose-with-links", "few-links", "prose"],
)
def test_link_list_detection(text: str, is_list: bool) -> None:
    assert link_stats(text).is_link_list is is_list
