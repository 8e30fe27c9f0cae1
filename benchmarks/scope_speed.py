"""Path- and tag-filtered vs unfiltered search at 100k chunks (``Store.search`` and BM25).

The synthetic store (``benchmarks.scoped_store``) has folders and tags drawn with shares from
40% down to 1%. The query vectors are embedded once, beforehand. The store is opened as the
retriever opens it, with its lexical index (which knows every chunk's source, tags and time).
Two states of a filtered ``Store.search``:

- "warm": a long-lived store that has met the scope before (a small scope's vectors in
  memory; a scope of 10% or more needs none: it over-fetches);
- "first query": the first query of a scope in a process: a small scope is answered by
  Chroma's search restricted to its ids while its vectors load in the background (the load
  is left out of these timings, so that it does not slow the other sides: "load" rows give
  its one-off cost per scope, measured alone).

    python -m benchmarks.scope_speed [--size 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from functools import partial

from benchmarks.common import QUERIES, save, say, stats, timed
from benchmarks.scoped_store import PATH_SHARES, TAG_SHARES, scoped_store
from ragbrain.lexical.sync import LexicalSearcher
from ragbrain.models.embeddings import default_embeddings
from ragbrain.query.filters import Filters
from ragbrain.store import Store
from ragbrain.store.scoped import ScopeVectors
from ragbrain.store.type_index import OVERFETCH

K = 10
FIRST = "first query"


def scopes() -> dict[str, Filters]:
    """Each benchmarked filter by name."""
    found = {f"path={p}": Filters(paths=(p,)) for p in PATH_SHARES}
    found["path=projects"] = Filters(paths=("projects",))
    found |= {f"tag={t}": Filters(tags=(t,)) for t in TAG_SHARES}
    return found


def measure(store: Store, rounds: int) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
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


def main() -> None:
    """Run the benchmark and write results/scope.json and .md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    store = scoped_store(args.size, default_embeddings())
    say(f"measuring {args.size} chunks")
    rows, shares = measure(store, args.rounds)
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


if __name__ == "__main__":
    main()
