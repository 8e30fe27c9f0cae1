"""Filtered vs unfiltered search at 100k synthetic chunks: note types, folders and tags.

The query vectors are embedded once, beforehand (the embedding cost is the same on every side
and is not what this measures). The store is opened as the retriever opens it, with its
lexical index (which knows every chunk's type, source, tags and time). One subcommand each:

- ``types``: Chroma's ``where`` vs ``Store.search`` with a type filter. Types are drawn with
  shares from 40% down to 1%, so the rare type shows the slow path of over-fetching (too few
  of that type among the nearest chunks). Three states of ``Store.search``:

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

  Results: ``results/filter.*``.
- ``scopes``: path- and tag-filtered vs unfiltered ``Store.search`` and BM25, on a store
  whose folders and tags are drawn with shares from 40% down to 1% (``common.scoped_store``).
  Two states of a filtered ``Store.search``:

  - "warm": a long-lived store that has met the scope before (a small scope's vectors in
    memory; a scope of 10% or more needs none: it over-fetches);
  - "first query": the first query of a scope in a process: a small scope is answered by
    Chroma's search restricted to its ids while its vectors load in the background (the load
    is left out of these timings, so that it does not slow the other sides: "load" rows give
    its one-off cost per scope, measured alone).

  Results: ``results/scope.*``.

    python -m benchmarks.speed filter types [--size 100000] [--rounds 5]
    python -m benchmarks.speed filter scopes [--size 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

from benchmarks.common import (
    PATH_SHARES,
    QUERIES,
    TAG_SHARES,
    TYPE_SHARES,
    save,
    say,
    scoped_store,
    stats,
    synthetic_store,
    timed,
)
from ragbrain import Filters, Store
from ragbrain.models.embeddings import default_embeddings
from ragbrain.store.lexical import LexicalSearcher
from ragbrain.store.search import OVERFETCH, ScopeVectors, TypeIndex

if TYPE_CHECKING:
    from chromadb.api.types import Include, Where

K = 10
FRESH = "fresh process"
NOTHING_KEPT = "nothing kept"
FIRST = "first query"

# --- types: the type filter ------------------------------------------------------------------


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


def measure_types(store: Store, rounds: int) -> dict[str, dict[str, float]]:
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
        sides[f"Store.search type={type_}, {NOTHING_KEPT}"] = (False, type_)

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
        if name.endswith((FRESH, NOTHING_KEPT)):
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


def types(args: argparse.Namespace) -> None:
    """Run the type-filter benchmark and write results/filter.json and .md."""
    store = synthetic_store(args.size, default_embeddings())
    say(f"measuring {args.size} chunks")
    rows = measure_types(store, args.rounds)
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


# --- scopes: folders and tags ----------------------------------------------------------------


def scopes() -> dict[str, Filters]:
    """Each benchmarked filter by name."""
    found = {f"path={p}": Filters(paths=(p,)) for p in PATH_SHARES}
    found["path=projects"] = Filters(paths=("projects",))
    found |= {f"tag={t}": Filters(tags=(t,)) for t in TAG_SHARES}
    return found


def measure_scopes(
    store: Store, rounds: int
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Interleaved timings of the unfiltered and filtered searches; and each scope's share."""
    lexical = LexicalSearcher(store)
    index = lexical.index
    filters = scopes()
    shares = {n: float(index.scope_mask(None, f).mean()) for n, f in filters.items()}
    warm = store._scope_vectors
    for query in QUERIES:
        store.search(query, K)  # fills the query-embedding cache: searches only from here on
        for scope in filters.values():
            store.search(query, K, None, scope)  # starts the small scopes' vector loads
    for thread in threading.enumerate():
        if thread.name == "ragbrain-scope-vectors":
            thread.join()
    sides: dict[str, Callable[[str], Callable[[], object]]] = {
        "Store.search, no filter": lambda q: lambda: store.search(q, K),
        "BM25, no filter": lambda q: lambda: index.search(q, 30),
    }

    def filtered(scope: Filters, first: bool) -> Callable[[str], Callable[[], object]]:
        def make(query: str) -> Callable[[], object]:
            # No kept vectors and no load: what a scope's first query costs.
            store._scope_vectors = None if first else warm  # type: ignore[assignment]
            return lambda: store.search(query, K, None, scope)

        return make

    def bm25(scope: Filters) -> Callable[[str], Callable[[], object]]:
        return lambda query: lambda: index.search(query, 30, None, scope)

    for name, scope in filters.items():
        sides[f"Store.search {name}"] = filtered(scope, first=False)
        sides[f"Store.search {name}, {FIRST}"] = filtered(scope, first=True)
        sides[f"BM25 {name}"] = bm25(scope)
    names = list(sides)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for step in range(rounds * len(QUERIES)):
        query = QUERIES[step % len(QUERIES)]
        shift = step % len(names)
        for name in names[shift:] + names[:shift]:
            seconds[name].append(timed(sides[name](query)))
    store._scope_vectors = warm
    rows = {name: stats(values) for name, values in seconds.items()}
    vector = store.embed_query(QUERIES[0])
    for name, scope in filters.items():
        if shares[name] * OVERFETCH < 1:  # the scopes that keep vectors
            ids = index.ids_at(index.scope_mask(None, scope))
            fresh = ScopeVectors(store.collection)
            load = partial(fresh.nearest, ids, vector, K, wait=True)
            rows[f"load {name}"] = stats([timed(load)])
    return rows, shares


def scoped(args: argparse.Namespace) -> None:
    """Run the path and tag filter benchmark and write results/scope.json and .md."""
    store = scoped_store(args.size, default_embeddings())
    say(f"measuring {args.size} chunks")
    rows, shares = measure_scopes(store, args.rounds)
    lines = [
        f"| search ({args.size:,} chunks, k={K}) | share | p50 ms | p95 ms | p50 / unfiltered |",
        "|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        scope = name.split(" ", 1)[1].split(",")[0] if "=" in name else None
        base = rows["BM25, no filter" if name.startswith("BM25") else "Store.search, no filter"]
        if name.startswith("load "):
            lines.append(
                f"| {name} (once per scope) | {shares[scope]:.1%} | "  # type: ignore[index]
                f"{row['p50_ms']:.0f} | - | - |"
            )
            continue
        share = f"{shares[scope]:.1%}" if scope else "all"
        lines.append(
            f"| {name} | {share} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} "
            f"| {row['p50_ms'] / base['p50_ms']:.2f}x |"
        )
    table = "\n".join(lines)
    print(table)
    save("scope", {"size": args.size, "k": K, "shares": shares, "results": rows}, table + "\n")


def main() -> None:
    """Parse the subcommand and run its measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("types", help="a type filter: Chroma's where vs Store.search")
    one.add_argument("--size", type=int, default=100_000)
    one.add_argument("--rounds", type=int, default=5)
    one.set_defaults(run=types)
    two = commands.add_parser("scopes", help="path and tag filters: Store.search and BM25")
    two.add_argument("--size", type=int, default=100_000)
    two.add_argument("--rounds", type=int, default=3)
    two.set_defaults(run=scoped)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
