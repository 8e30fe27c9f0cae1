"""The size limits of the docs, the benchmarks and the store package, checked by `make lint`.

    python -m tests.support.doc_limits [ROOT]     (exit 1, one line per limit passed)

The limits:

- README.md: at most 400 lines.
- docs/*.md: at most 300 lines a page (split a page by topic, or cut what repeats).
- docs/decisions/*.md: at most 120 lines a record (question, numbers, decision, command).
  docs/critic/ is not counted: it holds the critic evaluation's written reports
  (``critic-eval.md/.json/.png``), not pages.
- benchmarks/: at most 15 scripts. A script is what ``python -m benchmarks.<name>`` runs: each
  top-level module but ``__init__.py`` and ``common.py`` (shared helpers), and each package
  (a folder with ``__init__.py``, e.g. ``lodo/``, ``speed/``) once, however many modules it
  holds: a package is one entry point with subcommands. ``data/`` and ``results/`` hold no
  scripts.
- CHANGELOG.md: a few lines per change: each entry (a ``-`` bullet with its continuation
  lines) at most 6 lines, and each version's section (a ``## `` heading to the next) at most
  300 lines. Measurements belong in docs/ and docs/decisions/, which the entries link.
- src/ragbrain/store/: at most 10 modules, none under 60 lines (an ``__init__.py`` that only
  re-exports, holding nothing but a docstring, imports and ``__all__``, may be shorter): a
  few rooms, each named for what it holds (docs/architecture.md), not a module per helper.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

README_LINES = 400
PAGE_LINES = 300
DECISION_LINES = 120
BENCHMARK_SCRIPTS = 15
CHANGELOG_ENTRY_LINES = 6
CHANGELOG_SECTION_LINES = 300
STORE_MODULES = 10
STORE_MIN_LINES = 60
STORE = Path("src") / "ragbrain" / "store"
#: Modules of benchmarks/ that are not scripts.
BENCHMARK_HELPERS = frozenset({"__init__.py", "common.py"})

_BULLET = re.compile(r"^\s*[-*] ")


@dataclass(frozen=True)
class Passed:
    """One limit passed: where, how much, and the limit."""

    where: str
    size: int
    limit: int
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.size} {self.what}, limit {self.limit}"


def line_count(path: Path) -> int:
    """Lines in a text file, as ``wc -l`` counts them (a last line without newline counts)."""
    text = path.read_text(encoding="utf-8")
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def benchmark_scripts(folder: Path) -> list[str]:
    """benchmarks/'s scripts by the rule above, sorted."""
    if not folder.is_dir():
        return []
    modules = [
        p.name for p in folder.glob("*.py") if p.is_file() and p.name not in BENCHMARK_HELPERS
    ]
    packages = [f"{p.name}/" for p in folder.iterdir() if (p / "__init__.py").is_file()]
    return sorted(modules + packages)


def only_reexports(path: Path) -> bool:
    """Whether a module holds nothing but a docstring, imports and ``__all__``."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else []
        if [getattr(t, "id", None) for t in targets] == ["__all__"]:
            continue
        return False
    return True


def check_store(root: Path) -> list[Passed]:
    """The store package's limits: its module count, and each module's least size."""
    folder = root / STORE
    if not folder.is_dir():
        return []
    modules = sorted(p for p in folder.glob("*.py") if p.is_file())
    passed: list[Passed] = []
    if len(modules) > STORE_MODULES:
        where = f"{STORE.as_posix()}/ ({', '.join(p.name for p in modules)})"
        passed.append(Passed(where, len(modules), STORE_MODULES, "modules"))
    for module in modules:
        size = line_count(module)
        if size < STORE_MIN_LINES and not (module.name == "__init__.py" and only_reexports(module)):
            where = module.relative_to(root).as_posix()
            passed.append(Passed(where, size, STORE_MIN_LINES, "lines, under the least"))
    return passed


def changelog_entries(lines: list[str]) -> list[tuple[int, int]]:
    """Each bullet entry of a changelog as (first line number, lines), its continuation lines
    (non-blank, neither a bullet nor a heading) included."""
    entries: list[tuple[int, int]] = []
    for number, line in enumerate(lines, start=1):
        if _BULLET.match(line):
            entries.append((number, 1))
        elif entries and line.strip() and not line.startswith("#"):
            start, size = entries[-1]
            if start + size == number:
                entries[-1] = (start, size + 1)
    return entries


def changelog_sections(lines: list[str]) -> list[tuple[str, int]]:
    """Each ``## `` section of a changelog as (heading, lines), its heading included."""
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
    ends = [*starts[1:], len(lines)]
    return [(lines[s][3:].strip(), e - s) for s, e in zip(starts, ends, strict=True)]


def check(root: Path) -> list[Passed]:
    """Every limit passed under ``root`` (a checkout), in a stable order; empty when all hold."""
    passed: list[Passed] = []

    def over(path: Path, limit: int) -> None:
        size = line_count(path)
        if size > limit:
            passed.append(Passed(path.relative_to(root).as_posix(), size, limit, "lines"))

    if (root / "README.md").is_file():
        over(root / "README.md", README_LINES)
    for page in sorted((root / "docs").glob("*.md")):
        over(page, PAGE_LINES)
    for record in sorted((root / "docs" / "decisions").glob("*.md")):
        over(record, DECISION_LINES)
    scripts = benchmark_scripts(root / "benchmarks")
    if len(scripts) > BENCHMARK_SCRIPTS:
        where = f"benchmarks/ ({', '.join(scripts)})"
        passed.append(Passed(where, len(scripts), BENCHMARK_SCRIPTS, "scripts"))
    changelog = root / "CHANGELOG.md"
    if changelog.is_file():
        lines = changelog.read_text(encoding="utf-8").splitlines()
        for start, size in changelog_entries(lines):
            if size > CHANGELOG_ENTRY_LINES:
                where = f"CHANGELOG.md:{start} (an entry)"
                passed.append(Passed(where, size, CHANGELOG_ENTRY_LINES, "lines"))
        for heading, size in changelog_sections(lines):
            if size > CHANGELOG_SECTION_LINES:
                where = f"CHANGELOG.md ## {heading}"
                passed.append(Passed(where, size, CHANGELOG_SECTION_LINES, "lines"))
    passed.extend(check_store(root))
    return passed


def main(argv: list[str] | None = None) -> int:
    """Print every limit passed; 1 when any, else 0."""
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else Path(__file__).resolve().parents[2]
    passed = check(root)
    for item in passed:
        print(item)
    if passed:
        print(f"{len(passed)} size limit(s) passed: see tests/support/doc_limits.py")
        return 1
    print("docs, benchmarks and store/ within their size limits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
