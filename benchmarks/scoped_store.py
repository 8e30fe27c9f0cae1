"""A cached synthetic store whose chunks carry folders, tags and modification times, drawn
with known shares, for the path, tag and date filter benchmarks (``scope_speed``).

    python -m benchmarks.scoped_store [--size 100000]   # builds it once, then reuses it
"""

from __future__ import annotations

import argparse
import json
import random
from typing import TYPE_CHECKING

from benchmarks.common import DIMENSION, TYPE_SHARES, WORDS, say
from ragbrain.paths import cache_root

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from ragbrain.store import Store

#: Folders of the synthetic files, with the share of the files each holds (the rest: misc).
PATH_SHARES = {
    "projects/alpha": 0.40,
    "projects/beta": 0.20,
    "ops": 0.10,
    "team/small": 0.05,
    "archive/rare": 0.01,
}
#: Tags, each drawn independently per file with this probability.
TAG_SHARES = {"common": 0.40, "medium": 0.10, "rare": 0.01}
CHUNKS_PER_FILE = 4
#: Modification times are uniform over 2020-01-01 .. 2025-01-01 (UTC).
START, END = 1_577_836_800, 1_735_689_600


def scoped_store(size: int, embeddings: Embeddings, seed: int = 0) -> Store:
    """A store of ``size`` synthetic chunks (random unit vectors, word-salad texts), built once
    per size under the cache folder; files of ``CHUNKS_PER_FILE`` chunks share a folder,
    tags and a modification time."""
    import numpy

    from ragbrain.store import Store

    folder = cache_root() / "bench" / f"scoped-{size}-seed{seed}"
    store = Store.open(folder, embeddings, create=True)
    if (folder / "complete.json").is_file():
        return store
    rng = random.Random(seed)
    folders = [*PATH_SHARES, "misc"]
    weights = [*PATH_SHARES.values(), 1 - sum(PATH_SHARES.values())]
    types, type_weights = list(TYPE_SHARES), list(TYPE_SHARES.values())
    files: dict[int, dict[str, object]] = {}
    for file in range(0, size // CHUNKS_PER_FILE + 1):
        tags = [tag for tag, share in TAG_SHARES.items() if rng.random() < share]
        files[file] = {
            "source": f"{rng.choices(folders, weights)[0]}/f{file}.md",
            "tags": ", ".join(tags),
            "modified": rng.randrange(START, END),
            "type": rng.choices(types, type_weights)[0],
        }
    done = store.count()
    for start in range(done, size, 1000):
        ids = [f"chunk-{i}" for i in range(start, min(start + 1000, size))]
        block = numpy.random.default_rng(seed * 1_000_003 + start).standard_normal(
            (len(ids), DIMENSION)
        )
        vectors = (block / numpy.linalg.norm(block, axis=1, keepdims=True)).tolist()
        texts = [" ".join(rng.choices(WORDS, k=40)) for _ in ids]
        metadatas = [
            {**files[i // CHUNKS_PER_FILE], "root": "bench", "chunk": i % CHUNKS_PER_FILE}
            for i in range(start, start + len(ids))
        ]
        store.upsert(ids, texts, metadatas, vectors)
        if (start // 1000) % 10 == 0:
            say(f"  scoped store {size}: {start + len(ids)}/{size}")
    (folder / "complete.json").write_text(json.dumps({"chunks": size}), encoding="utf-8")
    return store


def main() -> None:
    """Build (or find) the store."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    args = parser.parse_args()
    from ragbrain.models.embeddings import default_embeddings

    store = scoped_store(args.size, default_embeddings())
    say(f"{store.count()} chunks at {store.location}")


if __name__ == "__main__":
    main()
