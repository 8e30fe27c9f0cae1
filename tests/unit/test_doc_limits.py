"""The docs' and benchmarks' size limits (tests.support.doc_limits, also run by `make lint`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import doc_limits

ROOT = Path(__file__).resolve().parents[2]


def lines(count: int) -> str:
    return "".join(f"line {i}\n" for i in range(count))


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A checkout with every file at its limit."""
    write(tmp_path / "README.md", lines(doc_limits.README_LINES))
    write(tmp_path / "docs" / "page.md", lines(doc_limits.PAGE_LINES))
    write(tmp_path / "docs" / "decisions" / "record.md", lines(doc_limits.DECISION_LINES))
    write(tmp_path / "docs" / "critic" / "set" / "critic-eval.md", lines(1000))
    bench = tmp_path / "benchmarks"
    for name in ("__init__.py", "common.py"):
        write(bench / name, "")
    for i in range(doc_limits.BENCHMARK_SCRIPTS - 1):
        write(bench / f"script{i}.py", "")
    write(bench / "package" / "__init__.py", "")
    write(bench / "package" / "one.py", "")
    write(bench / "package" / "two.py", "")
    write(bench / "results" / "x.json", "{}")
    entry = "- **A change**: what a user sees,\n" + "  more of it\n" * 5
    write(tmp_path / "CHANGELOG.md", "# Changelog\n\n## Unreleased\n\n" + entry)
    store = tmp_path / doc_limits.STORE
    write(store / "__init__.py", '"""Re-exports."""\n\nfrom x import y\n\n__all__ = ["y"]\n')
    for i in range(doc_limits.STORE_MODULES - 1):
        write(store / f"room{i}.py", lines(doc_limits.STORE_MIN_LINES))
    return tmp_path


def test_a_tree_at_every_limit_passes(tree: Path) -> None:
    assert doc_limits.check(tree) == []
    assert doc_limits.main([str(tree)]) == 0


@pytest.mark.parametrize(
    ("path", "limit"),
    [
        ("README.md", doc_limits.README_LINES),
        ("docs/page.md", doc_limits.PAGE_LINES),
        ("docs/new.md", doc_limits.PAGE_LINES),
        ("docs/decisions/record.md", doc_limits.DECISION_LINES),
    ],
)
def test_one_line_over_a_page_limit_fails(tree: Path, path: str, limit: int) -> None:
    write(tree / path, lines(limit) + "one more, without a newline")
    passed = doc_limits.check(tree)
    assert [(p.where, p.size, p.limit) for p in passed] == [(path, limit + 1, limit)]
    assert doc_limits.main([str(tree)]) == 1


def test_a_sixteenth_script_fails_and_a_package_counts_once(tree: Path) -> None:
    write(tree / "benchmarks" / "package" / "three.py", "")
    assert doc_limits.check(tree) == []
    write(tree / "benchmarks" / "extra.py", "")
    [passed] = doc_limits.check(tree)
    assert (passed.size, passed.limit, passed.what) == (16, 15, "scripts")
    assert "extra.py" in passed.where
    assert "package/" in passed.where


def test_a_long_changelog_entry_fails(tree: Path) -> None:
    changelog = tree / "CHANGELOG.md"
    text = changelog.read_text(encoding="utf-8")
    write(changelog, text + "\n- **Another**: measured at length,\n" + "  and on\n" * 6)
    [passed] = doc_limits.check(tree)
    assert (passed.where, passed.size) == ("CHANGELOG.md:12 (an entry)", 7)


def test_a_long_changelog_section_fails(tree: Path) -> None:
    changelog = tree / "CHANGELOG.md"
    text = changelog.read_text(encoding="utf-8")
    write(changelog, text + "".join(f"\n- change {i}\n" for i in range(150)))
    [passed] = doc_limits.check(tree)
    assert passed.where == "CHANGELOG.md ## Unreleased"
    assert passed.size > doc_limits.CHANGELOG_SECTION_LINES


def test_the_project_is_within_its_limits() -> None:
    assert [str(p) for p in doc_limits.check(ROOT)] == []


def test_an_eleventh_store_module_fails(tree: Path) -> None:
    write(tree / doc_limits.STORE / "extra.py", lines(doc_limits.STORE_MIN_LINES))
    [passed] = doc_limits.check(tree)
    assert (passed.size, passed.limit, passed.what) == (11, 10, "modules")
    assert "extra.py" in passed.where


def test_a_store_module_under_the_least_fails(tree: Path) -> None:
    write(tree / doc_limits.STORE / "room0.py", lines(doc_limits.STORE_MIN_LINES - 1))
    [passed] = doc_limits.check(tree)
    assert (passed.where, passed.size, passed.limit) == ("src/ragbrain/store/room0.py", 59, 60)


def test_a_short_init_passes_only_if_it_only_reexports(tree: Path) -> None:
    init = tree / doc_limits.STORE / "__init__.py"
    write(init, init.read_text(encoding="utf-8") + "\nLIMIT = 3\n")
    [passed] = doc_limits.check(tree)
    assert passed.where == "src/ragbrain/store/__init__.py"
