"""The built wheel holds every file of the package (the shipped critic and the sample notes
too) and the `ragbrain` command, so an install from it works outside the repository."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import ragbrain

ROOT = Path(ragbrain.__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "ragbrain"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel built from a copy of the source tree (a build writes beside its sources)."""
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("not run from a source tree")
    tree = tmp_path_factory.mktemp("tree")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(PACKAGE, tree / "src" / "ragbrain", ignore=ignore)
    out = tmp_path_factory.mktemp("dist")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    result = subprocess.run(
        [*command, "--no-index", "-q", str(tree), "-w", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (built,) = out.glob("ragbrain-*.whl")
    return zipfile.ZipFile(built)


@pytest.mark.slow
def test_every_package_file_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    files = {
        path.relative_to(PACKAGE.parent).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    assert {"ragbrain/critic/default/model.safetensors", "ragbrain/py.typed"} <= files
    assert any(f.startswith("ragbrain/sample_notes/") for f in files)
    assert sorted(files - set(wheel.namelist())) == []


@pytest.mark.slow
def test_the_wheel_has_the_command_and_the_mcp_extra(wheel: zipfile.ZipFile) -> None:
    info = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    assert "ragbrain = ragbrain.cli:app" in wheel.read(info).decode().splitlines()
    metadata = wheel.read(info.replace("entry_points.txt", "METADATA")).decode()
    assert "Provides-Extra: mcp" in metadata.splitlines()
    assert "Requires-Dist: torch==2.13.0" in metadata.splitlines()
