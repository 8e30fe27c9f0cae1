"""Many threads and async tasks on one retriever while another thread ingests."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from langchain_core.documents import Document

from ragbrain import RETRIEVAL_KEY, CorrectiveRetriever, build_graph
from ragbrain.ingest import ingest
from ragbrain.state import Hit
from ragbrain.store import Store
from tests.support.fakes import NOTES, BagOfWordsEmbeddings

pytestmark = pytest.mark.faults

# Each query names the note it must find first; a cross-talk between runs would break that.
EXPECTED = {
    "nightly backup s3 credentials expired alert": "bug/backup.md",
    "redis cache stampede jitter ttl deploy": "bug/cache.md",
    "alembic schema migrations one head": "decision/alembic.md",
    "statement timeout reporting queries connection": "lesson/timeout.md",
    "helm rollback previous revision": "howto/rollback.md",
}
BLOCK = 0.5  # seconds each embedding call sleeps, as a real model would hold its thread
CALLERS: set[int] = set()  # threads that ran a model or store call


class SlowEmbeddings(BagOfWordsEmbeddings):
    """The fake model, blocking its thread like a real one."""

    def embed_query(self, text: str) -> list[float]:
        CALLERS.add(threading.get_ident())
        time.sleep(BLOCK)
        return super().embed_query(text)


class RecordingStore(Store):
    """The store, noting which threads search it."""

    def search(self, query: str, k: int, types: Sequence[str] | None = None) -> list[Hit]:
        CALLERS.add(threading.get_ident())
        return super().search(query, k, types)


def check(query: str, k: int, docs: list[Document]) -> None:
    assert 0 < len(docs) <= k, (query, k, len(docs))
    assert docs[0].metadata["source"] == EXPECTED[query], (query, docs[0].metadata["source"])
    distances = [d.metadata[RETRIEVAL_KEY]["distance"] for d in docs]
    assert distances == sorted(distances)
    assert {d.metadata[RETRIEVAL_KEY]["depth"] for d in docs} == {k}


def writer(store: Store, root: Path, stop: threading.Event, errors: list[BaseException]) -> None:
    """Ingest again and again, adding and removing unrelated notes."""
    serial = 0
    try:
        while not stop.is_set():
            extra = root / "misc" / f"extra-{serial % 3}.md"
            extra.parent.mkdir(exist_ok=True)
            extra.write_text(f"# Extra {serial}\n\nunrelated words about gardening {serial}")
            ingest(root, store)
            serial += 1
    except BaseException as exc:  # surfaced by the test, not swallowed
        errors.append(exc)


def test_threads_and_tasks_while_ingesting(
    tmp_path: Path, write_notes: Callable[[dict[str, str]], Path]
) -> None:
    root = write_notes(NOTES)
    store = RecordingStore.open(tmp_path / "store", SlowEmbeddings(), create=True)
    ingest(root, store)
    retriever = CorrectiveRetriever(graph=build_graph(store))
    stop, errors = threading.Event(), []
    ingesting = threading.Thread(target=writer, args=(store, root, stop, errors))
    ingesting.start()
    try:
        jobs = [(q, k) for q in EXPECTED for k in (1, 3, 5)] * 2

        def one(job: tuple[str, int]) -> None:
            query, k = job
            check(query, k, retriever.invoke(query, k=k))

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(one, jobs))

        async def many() -> None:
            store.forget_queries()  # the model runs again for every query
            CALLERS.clear()
            results = await asyncio.gather(*(retriever.ainvoke(q, k=k) for q, k in jobs))
            for (query, k), docs in zip(jobs, results, strict=True):
                check(query, k, docs)
            # Every model and store call ran on a worker thread, never on the loop's own
            # thread (where each would stall the loop for BLOCK s). Checked by thread identity,
            # not by timing the loop, so a loaded machine cannot fail it.
            assert CALLERS and threading.get_ident() not in CALLERS

        asyncio.run(many())
    finally:
        stop.set()
        ingesting.join(timeout=60)
    assert not errors, errors
