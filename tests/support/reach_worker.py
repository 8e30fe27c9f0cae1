"""Processes for the index-reach tests: `python -m tests.support.reach_worker MODE STORE ...`.

- ``write STORE NOTES``: reads ``round SEED EDITS`` lines; rewrites EDITS notes and ingests
  the folder; answers ``done SUMMARY``.
- ``search STORE``: reads ``start`` and ``stop`` lines; between them searches in a loop;
  ``stop`` answers ``searches N errors M [first error]``.
- ``check STORE``: prints JSON: chunks, those missing from the vector index, and those in
  it that a search for their own vector does not find (a fresh process reads the files).

The model gives every text a random unit vector of its own (no two chunks share one, so a
chunk not found by its own vector is one the index lost).
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import threading
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

DIM = 32
PARAGRAPHS = 3


class RandomEmbeddings(Embeddings):
    """A random unit vector per text (the same text, the same vector)."""

    model_name = "random-32"

    def _embed(self, text: str) -> list[float]:
        seed = int(hashlib.md5(text.encode()).hexdigest()[:12], 16)
        vector = np.random.default_rng(seed).standard_normal(DIM)
        return [float(x) for x in vector / np.linalg.norm(vector)]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)


def note(rng: random.Random) -> str:
    """A note of ``PARAGRAPHS`` chunks, each its own text."""
    return "\n\n".join(f"Paragraph {p} {rng.random()} " + "word " * 150 for p in range(PARAGRAPHS))


def write_notes(folder: Path, count: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        (folder / f"n{n:04d}.md").write_text(note(rng), encoding="utf-8")


def writer(store_path: str, notes_path: str) -> None:
    from ragbrain.ingest import ingest
    from ragbrain.store import Store

    store, notes = Store.open(store_path, RandomEmbeddings()), Path(notes_path)
    files = sorted(notes.glob("*.md"))
    print("ready", flush=True)
    for line in sys.stdin:
        _, seed, edits = line.split()
        rng = random.Random(int(seed))
        for path in rng.sample(files, int(edits)):
            path.write_text(note(rng), encoding="utf-8")
        print(f"done {ingest(notes, store).summary()}", flush=True)


def searcher(store_path: str) -> None:
    from ragbrain.store import Store

    store = Store.open(store_path, RandomEmbeddings())
    stop, counts, errors = threading.Event(), [0, 0], []

    def loop() -> None:
        while not stop.is_set():
            try:
                store.search(f"query {counts[0]}", 5)
            except Exception as exc:  # reported, not raised: the test counts them
                counts[1] += 1
                errors.append(f"{type(exc).__name__}: {exc}")
            counts[0] += 1

    print("ready", flush=True)
    thread: threading.Thread | None = None
    for line in sys.stdin:
        if line.strip() == "start":
            stop.clear()
            thread = threading.Thread(target=loop)
            thread.start()
            print("started", flush=True)
        elif line.strip() == "stop" and thread is not None:
            stop.set()
            thread.join()
            print(f"searches {counts[0]} errors {counts[1]} {errors[:1]}", flush=True)
            counts[0] = counts[1] = 0
            errors.clear()


def check(store_path: str) -> None:
    from ragbrain.store import Store
    from ragbrain.store.processes import unreachable_vectors

    store = Store.open(store_path, RandomEmbeddings())
    collection = store.collection
    total = store.count()
    probe = collection.get(limit=1, include=["embeddings"])
    found = collection.query(
        query_embeddings=[list(probe["embeddings"][0])], n_results=total, include=[]
    )
    ids = store.all_ids()
    missing = sorted(set(ids) - set(found["ids"][0]))
    lost = unreachable_vectors(collection, [i for i in ids if i not in missing], store.call)
    print(json.dumps({"chunks": total, "missing": missing, "unreachable": lost}), flush=True)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "write":
        writer(sys.argv[2], sys.argv[3])
    elif mode == "search":
        searcher(sys.argv[2])
    else:
        check(sys.argv[2])
