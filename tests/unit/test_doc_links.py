"""Every relative link of the README, the changelog and docs/ reaches a file, and its anchor a
heading of that file (pages split by topic keep their links)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", flags=re.S | re.M)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in re.finditer(r"^#+ (.*)$", FENCE.sub("", page.read_text("utf-8")), re.M):
        name = slug(match.group(1))
        count = seen.get(name, 0)
        seen[name] = count + 1
        found.add(name if count == 0 else f"{name}-{count}")
    return found


def broken_links(root: Path) -> list[str]:
    pages = [root / "README.md", root / "CHANGELOG.md", *sorted((root / "docs").rglob("*.md"))]
    broken = []
    for page in (p for p in pages if p.is_file()):
        for target in LINK.findall(FENCE.sub("", page.read_text("utf-8"))):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(root)}: {target}"
            if not dest.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where} (no such heading)")
    return broken


def test_the_docs_links_resolve() -> None:
    assert broken_links(ROOT) == []


@pytest.mark.parametrize(
    ("link", "problem"),
    [("other.md", "no such file"), ("page.md#nowhere", "no such heading")],
)
def test_a_broken_link_is_found(tmp_path: Path, link: str, problem: str) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## A `code` heading, here\n")
    (tmp_path / "README.md").write_text(
        f"[fine](docs/page.md#a-code-heading-here) [bad](docs/{link})\n"
    )
    assert broken_links(tmp_path) == [f"README.md: docs/{link} ({problem})"]
