"""Server mode against a real `chroma run`: absent, killed mid-query, frozen, restarted, and
the same results as the embedded store."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import chromadb
import httpx
import pytest

from ragbrain import RETRIEVAL_KEY, CorrectiveRetriever, StorePolicy, StoreUnavailableError
from ragbrain.ingest import ingest
from ragbrain.store import COLLECTION, Store
from tests.support.chroma_server import ChromaServer, free_port
from tests.support.fakes import BagOfWordsEmbeddings

pytestmark = [pytest.mark.slow, pytest.mark.faults]

# Short deadlines keep the suite fast; the margins are what the issue promises.
POLICY = StorePolicy(deadline=1.5, attempt_timeout=0.5, retries=3, backoff=0.05, max_backoff=0.2)
MARGIN = 0.5
QUERIES = [
    ("redis cache stampede after deploy", {}),
    ("nightly backup s3 credentials expired", {"type_filter": "lesson"}),
    ("nightly backup s3 credentials expired", {"type_filter": ["bug", "decision"]}),
    ("alembic migrations", {"k": 2}),
    ("what is the difference between redis and rabbitmq and celery queues", {}),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """One server for the module; tests that kill or freeze it restore it before they end."""
    running = ChromaServer(tmp_path_factory.mktemp("chroma")).start()
    yield running
    running.kill()


@pytest.fixture
def server_store(server: ChromaServer, notes_dir: Path) -> Store:
    """The small notes on the server, in a collection emptied first."""
    client = chromadb.HttpClient(host="127.0.0.1", port=server.port)
    if COLLECTION in {c.name for c in client.list_collections()}:
        client.delete_collection(COLLECTION)
    store = Store.open(None, BagOfWordsEmbeddings(), create=True, server=server.url, policy=POLICY)
    ingest(notes_dir, store)
    return store


def retriever_on(url: str) -> CorrectiveRetriever:
    return CorrectiveRetriever.from_server(
        url, embeddings=BagOfWordsEmbeddings(), critic=None, policy=POLICY
    )


def test_absent_server_is_a_clear_error_within_the_deadline() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    start = time.monotonic()
    with pytest.raises(
        StoreUnavailableError, match=r"Reaching the Chroma server .* failed"
    ) as info:
        retriever_on(url)
    assert time.monotonic() - start < POLICY.deadline + MARGIN
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert "Check that the Chroma server is running" in str(info.value)


def test_same_results_as_the_embedded_store(server_store: Store, fake_store: Store) -> None:
    on_server = CorrectiveRetriever.from_server(
        server_store.location, embeddings=BagOfWordsEmbeddings(), critic=None, policy=POLICY
    )
    embedded = CorrectiveRetriever.from_store(
        fake_store.location, embeddings=BagOfWordsEmbeddings(), critic=None
    )
    assert server_store.count() == fake_store.count() > 0
    for query, kwargs in QUERIES:
        a, b = on_server.run(query, **kwargs), embedded.run(query, **kwargs)
        assert [d.metadata["source"] for d in a["documents"]] == [
            d.metadata["source"] for d in b["documents"]
        ], query
        for x, y in zip(a["documents"], b["documents"], strict=True):
            assert x.page_content == y.page_content
            assert x.metadata[RETRIEVAL_KEY]["distance"] == pytest.approx(
                y.metadata[RETRIEVAL_KEY]["distance"], abs=1e-5
            )
        assert (a["verdict"], a["fallback"], a["depth"]) == (
            b["verdict"],
            b["fallback"],
            b["depth"],
        )


def test_frozen_server_times_out_within_the_deadline(
    server: ChromaServer, server_store: Store
) -> None:
    retriever = retriever_on(server.url)
    assert retriever.invoke("redis cache")
    threads = threading.active_count()
    server.freeze()
    try:
        start = time.monotonic()
        with pytest.raises(StoreUnavailableError, match=r"deadline 1\.5s") as info:
            retriever.invoke("alembic migrations")
        elapsed = time.monotonic() - start
        assert elapsed < POLICY.deadline + MARGIN, elapsed
        assert isinstance(info.value.__cause__, httpx.TimeoutException)
        assert threading.active_count() == threads  # no thread is left blocked on the server
    finally:
        server.thaw()
    assert retriever.invoke("alembic migrations")[0].metadata["source"] == "decision/alembic.md"


def test_killed_server_fails_after_bounded_retries_then_recovers(
    server: ChromaServer, server_store: Store
) -> None:
    retriever = retriever_on(server.url)
    before = retriever.invoke("redis cache stampede after deploy")
    count = server_store.count()
    errors: list[BaseException] = []
    durations: list[float] = []
    stop = threading.Event()

    def query_until_failure() -> None:  # queries in flight when the server dies
        while not stop.is_set():
            start = time.monotonic()
            try:
                retriever.invoke("nightly backup s3 credentials")
            except StoreUnavailableError as exc:
                durations.append(time.monotonic() - start)
                errors.append(exc)
                return

    worker = threading.Thread(target=query_until_failure)
    worker.start()
    time.sleep(0.3)
    server.kill()
    worker.join(timeout=POLICY.deadline + 5)
    stop.set()
    assert not worker.is_alive()
    assert errors, "a query during the outage should have failed"
    assert durations[0] < POLICY.deadline + MARGIN
    assert isinstance(errors[0].__cause__, httpx.TransportError)

    server.start()  # same port, same data folder
    after = retriever.invoke("redis cache stampede after deploy")  # the same object works again
    assert [d.id for d in after] == [d.id for d in before]
    assert server_store.count() == count  # nothing lost


def test_query_rides_out_a_restart_with_enough_deadline(
    server: ChromaServer, server_store: Store
) -> None:
    patient = StorePolicy(deadline=90.0, attempt_timeout=2.0, retries=1000, max_backoff=0.3)
    retriever = CorrectiveRetriever.from_server(
        server.url, embeddings=BagOfWordsEmbeddings(), critic=None, policy=patient
    )
    expected = [d.id for d in retriever.invoke("adopt alembic for schema migrations")]
    server.kill()
    restarter = threading.Thread(target=server.start)
    restarter.start()
    try:
        got = retriever.invoke("adopt alembic for schema migrations")  # retried until it is back
    finally:
        restarter.join()
    assert [d.id for d in got] == expected


def test_ingest_then_doctor_on_the_server(server: ChromaServer, server_store: Store) -> None:
    from ragbrain.doctor import diagnose

    findings = diagnose(server=server.url, embeddings=BagOfWordsEmbeddings(), policy=POLICY)
    assert all(f.ok for f in findings), findings
    assert {f.check for f in findings} >= {"reach", "space", "count", "self-retrieval"}
