"""Type-filtered vs unfiltered search at 100k chunks: Chroma's ``where`` vs ``Store.search``.

The query vectors are embedded once, beforehand (the embedding cost is the same on every side
and is not what this measures). Types are drawn with shares from 40% down to 1%, so the rare
type shows the slow path of over-fetching (too few of that type among the nearest chunks).
The store is opened as the retriever opens it, with its lexical index (which knows every
chunk's type). Three states of ``Store.search``:

- "warm": a long-lived store (rare types' vectors in memory, after a first pass);
- "fresh process": the first query of a new process, with the rare types' vectors kept on
  disk as `ragbrain ingest` leaves them (here `Store.keep_small_types`, since the synthetic
  store is not ingested from files);
- "nothing kept": the same with nothing on disk and no keeping at open: Chroma's filter
  answers a rare type (the vectors' load it starts in the background is left out of this
  query's time). The retriever no longer meets this for the types that are rare when it
  opens the store (its `LexicalSearcher` keeps them, as `ragbrain ingest` does); a type that
  becomes rare while a process runs, or a `Store` searched without its lexical index, still
  does.

    python -m benchmarks.filter_speed [--size 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from benchmarks.common import QUERIES, TYPE_SHARES, save, say, stats, synthetic_store, timed
from ragbrain.lexical.sync import LexicalSearcher
from ragbrain.models.embeddings import default_embeddings
from ragbrain.store import Store
from ragbrain.store.type_index import TypeIndex

if TYPE_CHECKING:
    from chromadb.api.types import Include, Where

K = 10
FRESH = "fresh process"
FIRST = "nothing kept"


def chroma_query(
    store: Store, vector: Sequence[float], where: Where | None
) -> Callable[[], object]:
    """A raw Chroma query, as the issue author measured it."""
    embeddings: list[Sequence[float]] = [vector]
    include: Include = ["documents", "metadatas", "distances"]
    return lambda: store.collection.query(
        query_embeddings=embeddings, n_results=K, where=where, include=include
    )


def store_search(store: Store, query: str, type_: str | None) -> Callable[[], object]:
    """ragbrain's own search (its query embedding is cached, so this is the search only)."""
    return lambda: store.search(query, K, [type_] if type_ else None)


def measure(store: Store, rounds: int) -> dict[str, dict[str, float]]:
    """Interleaved timings of the unfiltered and the filtered searches, per type."""
    vectors = {q: store.embeddings.embed_query(q) for q in QUERIES}
    lexical = LexicalSearcher(store)  # registers itself as the store's source of types
    say(f"kept on disk: {store.keep_small_types(lexical.index) or 'already'}")
    warm = store._type_index
    for query in QUERIES:
        store.search(query, K)  # fills the query-embedding cache: searches only from here on
        for type_ in TYPE_SHARES:
            store.search(query, K, [type_])  # fills the warm type map, starts vector loads
    for thread in threading.enumerate():
        if thread.name == "ragbrain-type-vectors":
            thread.join()
    sides: dict[str, tuple[bool, str | None]] = {  # name -> (raw Chroma?, type)
        "chroma, no filter": (True, None),
        "Store.search, no filter": (False, None),
    }
    for type_ in TYPE_SHARES:
        sides[f"chroma where type={type_}"] = (True, type_)
        sides[f"Store.search type={type_}"] = (False, type_)
        sides[f"Store.search type={type_}, {FRESH}"] = (False, type_)
        sides[f"Store.search type={type_}, {FIRST}"] = (False, type_)

    def fresh(kept_on_disk: bool) -> TypeIndex:
        """The type index of a newly opened store (made outside the timed call)."""
        index = TypeIndex(
            store.collection,
            keep_vectors=kept_on_disk,
            cache_folder=warm._cache_folder if kept_on_disk else None,
        )
        index.learn_from(lambda: lexical.index)
        return index

    def call(name: str, query: str) -> Callable[[], object]:
        raw, type_ = sides[name]
        if raw:
            where: Where | None = {"type": type_} if type_ else None
            return chroma_query(store, vectors[query], where)
        if name.endswith((FRESH, FIRST)):
            store._type_index = fresh(kept_on_disk=name.endswith(FRESH))
        else:
            store._type_index = warm
        return store_search(store, query, type_)

    names = list(sides)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for index in range(rounds * len(QUERIES)):
        query = QUERIES[index % len(QUERIES)]
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            seconds[name].append(timed(call(name, query)))
    return {name: stats(values) for name, values in seconds.items()}


def main() -> None:
    """Run the benchmark and write results/filter.json and .md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    store = synthetic_store(args.size, default_embeddings())
    say(f"measuring {args.size} chunks")
    rows = measure(store, args.rounds)
    base = rows["chroma, no filter"]["p50_ms"]
    lines = [
        f"| search ({args.size:,} chunks, k={K}) | type share | p50 ms | p95 ms "
        "| p50 / unfiltered |",
        "|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        type_ = name.split("type=")[1].split(",")[0] if "type=" in name else None
        share = f"{TYPE_SHARES[type_]:.0%}" if type_ else "all"
        lines.append(
            f"| {name} | {share} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} "
            f"| {row['p50_ms'] / base:.1f}x |"
        )
    table = "\n".join(lines)
    print(table)
    save(
        "filter",
        {"size": args.size, "k": K, "type_shares": TYPE_SHARES, "results": rows},
        table + "\n",
    )


if __name__ == "__main__":
    main()
