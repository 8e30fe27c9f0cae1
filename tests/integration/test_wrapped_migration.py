"""The documented migration of a wrapped store, across processes: the one-liner
``from_vectorstore(vs)`` first, ``from_vectorstore(vs, type_key="kind")`` in a later process
with the same cache folder; the later one sees the kinds and filters by them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import json, sys
from langchain_chroma import Chroma
from langchain_core.documents import Document
from ragbrain import CorrectiveRetriever
from tests.support.fakes import NOTES, BagOfWordsEmbeddings

folder, step = sys.argv[1], sys.argv[2]
if step == "first":
    docs = [
        Document(page_content=t, metadata={"source": p, "kind": p.split("/")[0]})
        for p, t in NOTES.items()
    ]
    Chroma.from_documents(docs, BagOfWordsEmbeddings(), collection_name="app",
                          persist_directory=folder)
keys = {} if step == "first" else {"type_key": "kind"}
retriever = CorrectiveRetriever.from_vectorstore(
    Chroma("app", BagOfWordsEmbeddings(), persist_directory=folder), critic=None, **keys
)
out = retriever.run("redis cache", type_filter="decision")
print(json.dumps({
    "types": sorted(retriever.known_types()),
    "fallback": out["fallback"],
    "kinds": [d.metadata["kind"] for d in out["documents"]],
}))
"""


def step(name: str, folder: Path, cache: Path) -> dict[str, object]:
    env = {
        **os.environ,
        "RAGBRAIN_CACHE": str(cache),
        "PYTHONPATH": os.pathsep.join(
            [str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")]
        ),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(folder), name],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_type_key_added_in_a_later_process_is_seen(tmp_path: Path) -> None:
    folder, cache = tmp_path / "chroma", tmp_path / "cache"
    first = step("first", folder, cache)
    assert first["types"] == [""]  # no `type` key: one unnamed type
    later = step("later", folder, cache)
    assert later["types"] == ["bug", "decision", "howto", "lesson"]
    assert later["fallback"] is False
    kinds = later["kinds"]
    assert isinstance(kinds, list) and kinds and set(kinds) == {"decision"}
