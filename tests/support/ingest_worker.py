"""A process that ingests on command, for the SIGKILL tests: `python -m tests.support.ingest_worker
STORE NOTES` reads `ingest`, `dump` and `quit` lines on stdin and answers one line each."""

from __future__ import annotations

import json
import sys
import time

from ragbrain.ingest import ingest
from ragbrain.store import Store
from tests.support.fakes import BagOfWordsEmbeddings

EMBED_PAUSE = 0.05  # per batch of chunks, so that a kill lands mid-run


class SlowEmbeddings(BagOfWordsEmbeddings):
    """The fake model, slowed down so that ingestion takes long enough to interrupt."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        time.sleep(EMBED_PAUSE)
        return super().embed_documents(texts)


def dump(store: Store) -> dict[str, object]:
    """Every chunk (id -> text, source) and the ids not found first by their own text."""
    got = store.collection.get(include=["documents", "metadatas"])
    chunks = {
        id_: [text, meta["source"]]
        for id_, text, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
    }
    ids = list(chunks)
    hits = (
        store.collection.query(
            query_embeddings=BagOfWordsEmbeddings().embed_documents([chunks[i][0] for i in ids]),
            n_results=3,
            include=["distances"],
        )
        if ids
        else {"ids": [], "distances": []}
    )
    missed = []
    for id_, found, distances in zip(ids, hits["ids"], hits["distances"] or [], strict=True):
        if id_ not in [
            h for h, d in zip(found, distances, strict=True) if d <= distances[0] + 1e-4
        ]:
            missed.append(
                f"{id_} ({chunks[id_][1]}): got {list(zip(found, distances, strict=True))}"
            )
    return {"chunks": chunks, "count": store.count(), "missed": missed}


def main() -> None:
    """Serve commands until `quit` or the end of stdin."""
    store = Store.open(sys.argv[1], SlowEmbeddings(), create=True)
    print("ready", flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "ingest":
            print("start", flush=True)
            began = time.monotonic()
            report = ingest(sys.argv[2], store)
            print(f"done {time.monotonic() - began:.3f} {report.summary()}", flush=True)
        elif command == "dump":
            print(json.dumps(dump(store)), flush=True)
        elif command == "quit":
            return


if __name__ == "__main__":
    main()
