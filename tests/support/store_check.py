"""A fresh process's look at a store: every note on disk found by its own words, by dense
search and by BM25. Run as ``python -m tests.support.store_check STORE NOTES``; prints JSON
``{"notes": N, "dense_missed": [...], "bm25_missed": [...]}``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ragbrain.ingest.files import split_front_matter
from ragbrain.store import Store
from ragbrain.store.lexical import LexicalSearcher


def main(store_path: str, notes_path: str) -> None:
    store = Store.open(Path(store_path))  # the model the store records
    index = LexicalSearcher(store).index
    notes = Path(notes_path)
    dense_missed, bm25_missed, count = [], [], 0
    for path in sorted(notes.rglob("*.md")):
        source = path.relative_to(notes).as_posix()
        text = split_front_matter(path.read_text(encoding="utf-8"))[1].strip()
        count += 1
        if source not in {h["metadata"].get("source") for h in store.search(text, 5)}:
            dense_missed.append(source)
        ids = [hit.id for hit in index.search(text, 5)]
        if source not in {str(meta.get("source")) for _, _, meta in store.rows(ids)}:
            bm25_missed.append(source)
    print(json.dumps({"notes": count, "dense_missed": dense_missed, "bm25_missed": bm25_missed}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
