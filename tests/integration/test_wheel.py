"""The built wheel holds every file of the package (the shipped critic and the sample notes
too) and the `ragbrain` command, so an install from it works outside the repository; the
README's "Add it to your app" lines install it into a fresh venv."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

import ragbrain

ROOT = Path(ragbrain.__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "ragbrain"


@pytest.fixture(scope="module")
def wheel_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
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
    return built


@pytest.fixture(scope="module")
def wheel(wheel_path: Path) -> zipfile.ZipFile:
    return zipfile.ZipFile(wheel_path)


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
    # A range, not a pin: the app decides its torch (the pin lives in constraints.txt).
    assert "Requires-Dist: torch<3,>=2.5" in metadata.splitlines()


#: The longest each install step may take (the test took 130 s on the 2-core test machine, with
#: pip's cache warm and torch's CPU wheel on disk).
INSTALL_SECONDS = 900


def readme_install_lines() -> list[str]:
    """The commands of the README's "Add it to your app" block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Add it to your app", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, "the README's install block is missing"
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines() if line.strip()]


@pytest.mark.slow
def test_the_readmes_install_line_works_in_a_fresh_venv(wheel_path: Path, tmp_path: Path) -> None:
    """The README's lines in a new venv: torch first (here the CPU build this suite runs,
    from the machine's wheel folder: PyTorch's index is out of reach), then the wheel with
    no extra, as an app installs it; then ragbrain imports outside the repository."""
    import torch

    lines = readme_install_lines()
    assert lines[0] == "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    plain = lines[1]
    assert plain == 'pip install "dist/ragbrain-0.1.0-py3-none-any.whl"'
    probe = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "-q",
            "-d",
            str(tmp_path / "p"),
            "pathspec",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if probe.returncode != 0:
        pytest.skip(f"no package index reachable: {probe.stderr.strip()[-200:]}")
    target = tmp_path / "venv"
    venv.create(target, with_pip=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the venv's own only
    pip = [str(target / "bin" / "python"), "-m", "pip", "install", "-q"]
    steps = [
        [*pip, f"torch=={torch.__version__}"],
        [*pip, str(wheel_path)],  # the README's line, the wheel where this test built it
    ]
    for step in steps:
        done = subprocess.run(
            step,
            capture_output=True,
            text=True,
            check=False,
            timeout=INSTALL_SECONDS,
            cwd=tmp_path,
            env=env,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    check = subprocess.run(
        [
            str(target / "bin" / "python"),
            "-c",
            "import ragbrain, torch; from ragbrain import CorrectiveRetriever, WrongModelError; "
            "print(ragbrain.__file__, torch.__version__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=env,
    )
    where, version = check.stdout.split()
    assert str(target) in where and version == torch.__version__
