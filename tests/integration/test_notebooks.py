"""Every notebook in notebooks/ runs top to bottom, offline, in a fresh kernel."""

from __future__ import annotations

import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
# The goal is two minutes on an idle CPU; a CI machine shared with other jobs gets slack.
CELL_TIMEOUT_S = 600

pytestmark = pytest.mark.slow


def test_there_are_notebooks() -> None:
    assert any(nb.name == "quickstart.ipynb" for nb in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernel inherits the environment: caches and stores go to a fresh folder.
    monkeypatch.setenv("RAGBRAIN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("RAGBRAIN_STORE", str(tmp_path / "no-store"))
    notebook = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), (
        f"{path.name} is committed with outputs; clear them"
    )
    started = time.perf_counter()

    NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()

    seconds = time.perf_counter() - started
    print(f"{path.name}: {seconds:.0f} s")
