"""The public API is pinned, and the package's modules import in any order, with no circle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import ragbrain

SRC = Path(ragbrain.__file__).resolve().parent

EXPECTED_ALL = [
    "RETRIEVAL_KEY",
    "CorrectiveRetriever",
    "Critic",
    "CriticLoadError",
    "Excerpt",
    "Filters",
    "InvalidInputError",
    "MissingExtraError",
    "ModelLoadError",
    "RagbrainError",
    "RetrievalContext",
    "RetrievalOutput",
    "ServerAccessError",
    "Store",
    "StoreLockedError",
    "StoreMismatchError",
    "StoreNotFoundError",
    "StorePolicy",
    "StoreUnavailableError",
    "TransformerCritic",
    "UnknownTypeWarning",
    "WrongModelError",
    "WrongTypeError",
    "build_graph",
    "default_graph",
    "default_store_path",
    "open_graph",
    "read_source",
]


def test_public_api_is_pinned() -> None:
    assert sorted(EXPECTED_ALL) == sorted(ragbrain.__all__)
    assert all(hasattr(ragbrain, name) for name in ragbrain.__all__)


def module_names() -> dict[str, Path]:
    names = {}
    for file in SRC.rglob("*.py"):
        parts = file.relative_to(SRC.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return names


def imports_of(name: str, file: Path, known: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports at run time, wherever the import stands (inside
    functions too); imports under ``if TYPE_CHECKING:`` do not run and are left out."""
    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in known else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(file.read_text(encoding="utf-8")))
    return {module for module in found if module in known and module != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of two or more."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in order:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], order[target])
        if low[node] == order[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            if component:
                found.append(sorted([node, *component]))

    for node in sorted(graph):
        if node not in order:
            connect(node)
    return found


def test_the_cycle_finder_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_even_inside_functions() -> None:
    known = module_names()
    graph = {name: imports_of(name, file, known) for name, file in known.items()}
    assert graph["ragbrain.factory"], "the import scan found nothing: it is broken"
    assert cycles(graph) == []


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    """Each module imported on its own, in a fresh interpreter, in reverse order: an import
    that only works after another module has been imported fails here."""
    names = sorted(module_names(), reverse=True)
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n"
    code += "    [sys.modules.pop(m) for m in list(sys.modules) if m.startswith('ragbrain')]\n"
    code += "    importlib.import_module(name)\n"
    result = subprocess.run(
        [sys.executable, "-c", code, *names], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_runtime_never_imports_training_or_evaluation() -> None:
    """Training and evaluation sit beside the runtime and import it, never the reverse; only
    the command line reaches both."""
    known = module_names()
    beside = ("ragbrain.critic.training", "ragbrain.evaluation")
    runtime = [n for n in known if not n.startswith((*beside, "ragbrain.cli"))]
    reaching = {
        name: sorted(m for m in imports_of(name, known[name], known) if m.startswith(beside))
        for name in runtime
    }
    assert {name: found for name, found in reaching.items() if found} == {}


def test_the_top_floor_shows_the_architecture() -> None:
    """At most 15 modules directly under the package: the rest live in named packages."""
    top = sorted(p.name for p in SRC.glob("*.py"))
    assert len(top) <= 15, top


def test_the_evaluation_api_resolves_from_where_each_name_lives() -> None:
    """``ragbrain.evaluation.__all__``: every name loads, is its home module's object, and is
    the same list mypy reads under ``TYPE_CHECKING``."""
    import importlib

    import ragbrain.evaluation as evaluation

    where = evaluation._WHERE
    assert sorted(evaluation.__all__) == sorted(where)
    tree = ast.parse((SRC / "evaluation" / "__init__.py").read_text(encoding="utf-8"))
    typed = {
        alias.name: node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module != "typing"
        for alias in node.names
        if node.module and node.module.startswith("ragbrain.evaluation.")
    }
    assert typed == where
    for name in evaluation.__all__:
        assert getattr(evaluation, name) is getattr(importlib.import_module(where[name]), name)
    assert set(evaluation.__all__) <= set(dir(evaluation))


def test_the_evaluation_api_imports_on_its_own_and_lazily() -> None:
    """In a fresh interpreter: importing the package loads none of its modules; a name from
    it loads its module only."""
    code = (
        "import sys\n"
        "import ragbrain.evaluation\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('ragbrain.evaluation.'))\n"
        "assert loaded == [], loaded\n"
        "from ragbrain.evaluation import ndcg_at_k\n"
        "assert ndcg_at_k(['a', 'b'], {'a': 1}) == 1.0\n"
        "assert 'ragbrain.evaluation.metrics' in sys.modules\n"
        "assert 'ragbrain.evaluation.beir' not in sys.modules\n"
        "try:\n"
        "    ragbrain.evaluation.no_such_name\n"
        "except AttributeError as error:\n"
        "    assert 'no_such_name' in str(error)\n"
        "else:\n"
        "    raise SystemExit('an unknown name resolved')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_benchmarks_take_evaluation_names_from_the_public_api() -> None:
    """A benchmark imports a name that ``ragbrain.evaluation.__all__`` holds from there, not
    from the submodule behind it."""
    import ragbrain.evaluation as evaluation

    benchmarks = Path(__file__).resolve().parents[2] / "benchmarks"
    files = sorted(benchmarks.rglob("*.py"))
    assert files, f"no benchmarks under {benchmarks}"
    public = set(evaluation.__all__)
    found = [
        f"{file.relative_to(benchmarks)}:{node.lineno} {node.module}.{alias.name}"
        for file in files
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("ragbrain.evaluation.")
        for alias in node.names
        if alias.name in public
    ]
    assert found == []
