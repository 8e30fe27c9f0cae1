"""The retry and deadline policy on its own: what is retried, for how long, and what surfaces."""

from __future__ import annotations

import math
import os
import random
import re
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from chromadb.errors import (
    ChromaAuthError,
    InvalidArgumentError,
    NotFoundError,
    RateLimitError,
)

from ragbrain.errors import (
    InvalidInputError,
    ServerAccessError,
    StoreLockedError,
    StoreMismatchError,
    StoreNotFoundError,
    StoreUnavailableError,
)
from ragbrain.store import Store, parse_server_url
from ragbrain.store.connect import StorePolicy, attempt_timeout, call, is_transient
from ragbrain.store.ledger import LOCK_FILE
from ragbrain.store.processes import restore_missing_vectors, unreachable_vectors, writer_lock
from tests.support.fakes import BagOfWordsEmbeddings, CutOff

pytestmark = pytest.mark.faults

FAST = StorePolicy(deadline=2.0, attempt_timeout=1.0, retries=3, backoff=0.01, max_backoff=0.02)


def failing(errors: list[Exception], result: str = "ok") -> tuple[Callable[[], str], list[float]]:
    """A call that raises each of ``errors`` in turn, then returns ``result``."""
    seen: list[float] = []

    def fn() -> str:
        seen.append(attempt_timeout() or -1.0)
        if errors:
            raise errors.pop(0)
        return result

    return fn, seen


REQUEST = httpx.Request("POST", "http://127.0.0.1:1/api/v2/query")


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (httpx.ConnectError("connection refused", request=REQUEST), True),
        (httpx.RemoteProtocolError("server disconnected", request=REQUEST), True),
        (httpx.ReadError("connection reset by peer", request=REQUEST), True),
        (httpx.ReadTimeout("timed out", request=REQUEST), True),
        (httpx.ConnectTimeout("timed out", request=REQUEST), True),
        (RateLimitError("slow down"), True),
        (ConnectionResetError(104, "reset"), True),
        (
            InvalidArgumentError("Collection expecting embedding with dimension of 64, got 16"),
            False,
        ),
        (NotFoundError("Collection [ragbrain] does not exist"), False),
        (ChromaAuthError("no"), False),
        (ValueError("bad"), False),
    ],
    ids=[
        "refused",
        "disconnected",
        "reset",
        "read-timeout",
        "connect-timeout",
        "rate-limit",
        "os-reset",
        "dimension",
        "missing-collection",
        "auth",
        "value-error",
    ],
)
def test_transient_or_permanent(exc: Exception, transient: bool) -> None:
    assert is_transient(exc) is transient


def test_transient_failures_are_retried_then_succeed() -> None:
    fn, seen = failing([httpx.ConnectError("refused"), RateLimitError("slow down")])
    assert call(FAST, "Searching", fn) == "ok"
    assert len(seen) == 3
    assert all(0 < t <= FAST.attempt_timeout for t in seen)  # every attempt had a timeout
    assert attempt_timeout() is None  # and nothing leaks out of the call


def test_retries_are_bounded_and_the_cause_is_attached() -> None:
    fn, seen = failing([httpx.ConnectError("refused")] * 10)
    with pytest.raises(
        StoreUnavailableError, match=r"Searching failed after 4 attempt\(s\)"
    ) as info:
        call(FAST, "Searching", fn)
    assert len(seen) == FAST.retries + 1
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert isinstance(info.value, RuntimeError)


def test_the_deadline_caps_retries_and_attempt_timeouts() -> None:
    policy = StorePolicy(deadline=0.5, attempt_timeout=5.0, retries=100, backoff=0.05)
    fn, seen = failing([httpx.ReadTimeout("timed out")] * 1000)
    start = time.monotonic()
    with pytest.raises(StoreUnavailableError, match=r"deadline 0\.5s"):
        call(policy, "Searching", fn)
    assert time.monotonic() - start < 0.5 + 0.1
    assert max(seen) <= 0.5  # an attempt never gets more than the time left
    assert seen == sorted(seen, reverse=True)


@pytest.mark.parametrize(
    ("exc", "raised", "match"),
    [
        (NotFoundError("Collection [x] does not exist"), StoreNotFoundError, "does not exist"),
        (
            InvalidArgumentError("Collection expecting embedding with dimension of 64, got 16"),
            StoreMismatchError,
            "dimension of 64",
        ),
        (InvalidArgumentError("bad where clause"), InvalidInputError, "bad where clause"),
        (ChromaAuthError("denied"), ServerAccessError, "refused access"),
        (KeyError("x"), KeyError, "x"),
    ],
    ids=["missing", "dimension", "bad-argument", "auth", "unknown-passes-through"],
)
def test_permanent_failures_are_not_retried(
    exc: Exception, raised: type[Exception], match: str
) -> None:
    fn, seen = failing([exc])
    with pytest.raises(raised, match=match):
        call(FAST, "Searching", fn)
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"deadline": 0}, "deadline must be > 0"),
        ({"attempt_timeout": -1}, "attempt_timeout must be > 0"),
        ({"retries": -1}, "retries must be an int >= 0"),
        ({"retries": True}, "retries must be an int >= 0"),
        ({"backoff": 3.0, "max_backoff": 1.0}, "backoff <= max_backoff"),
    ],
    ids=["deadline-0", "timeout-negative", "retries-negative", "retries-bool", "backoff"],
)
def test_bad_policies_fail_at_construction(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        StorePolicy(**kwargs)


def test_policy_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGBRAIN_DEADLINE", "1.5")
    monkeypatch.setenv("RAGBRAIN_RETRIES", "1")
    policy = StorePolicy.from_env()
    assert (policy.deadline, policy.attempt_timeout, policy.retries) == (1.5, 1.5, 1)
    monkeypatch.setenv("RAGBRAIN_RETRIES", "many")
    with pytest.raises(InvalidInputError, match="RAGBRAIN_RETRIES"):
        StorePolicy.from_env()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8000", ("127.0.0.1", 8000, False)),
        ("https://chroma.example.org", ("chroma.example.org", 8000, True)),
        (" http://localhost:9/ ", ("localhost", 9, False)),
    ],
    ids=["plain", "https-default-port", "spaces-and-slash"],
)
def test_server_urls(url: str, expected: tuple[str, int, bool]) -> None:
    assert parse_server_url(url) == expected


@pytest.mark.parametrize(
    "url",
    ["127.0.0.1:8000", "ftp://host:1", "http://", "http://host:notaport", "http://h:1/api"],
    ids=["no-scheme", "ftp", "no-host", "bad-port", "path"],
)
def test_bad_server_urls(url: str) -> None:
    with pytest.raises(InvalidInputError, match="URL"):
        parse_server_url(url)


def test_a_second_writer_waits_a_bounded_time_then_names_the_holder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGBRAIN_LOCK_WAIT", "0.3")
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    other = Store.open(tmp_path / "s", BagOfWordsEmbeddings())
    with store.writing():
        holder = rf"pid {os.getpid()} on {re.escape(socket.gethostname())}: \S+"
        locked = pytest.raises(StoreLockedError, match=rf"locked by another writer \({holder}")
        with locked, other.writing():
            pass
    with other.writing():  # released
        pass


def test_a_writer_waiting_for_the_lock_gets_it_when_the_holder_lets_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGBRAIN_LOCK_WAIT", "30")
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    other = Store.open(tmp_path / "s", BagOfWordsEmbeddings())
    holding, written = threading.Event(), threading.Event()

    def hold() -> None:
        with store.writing():
            holding.set()
            written.wait(0.3)  # the other writer is waiting meanwhile

    thread = threading.Thread(target=hold)
    thread.start()
    holding.wait()
    other.upsert(
        ["a"], ["text"], [{"type": "note"}], BagOfWordsEmbeddings().embed_documents(["text"])
    )
    written.set()
    thread.join()
    assert store.all_ids() == ["a"]  # the first store follows the other's write


def test_a_waiting_writer_says_once_that_it_waits_and_for_whom(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "s").mkdir()
    with (
        writer_lock(tmp_path / "s"),
        caplog.at_level("WARNING", "ragbrain.store.processes"),
        pytest.raises(StoreLockedError) as locked,
        writer_lock(tmp_path / "s", 0.3),
    ):
        pass
    said = [r.getMessage() for r in caplog.records if "Waiting" in r.getMessage()]
    assert len(said) == 1 and f"pid {os.getpid()} on {socket.gethostname()}" in said[0]
    assert "up to 0.3 s" in said[0] and locked.value.holder.startswith(f"pid {os.getpid()}")
    caplog.clear()
    with (
        writer_lock(tmp_path / "s"),
        pytest.raises(StoreLockedError),
        writer_lock(tmp_path / "s", 0),
    ):
        pass
    assert not caplog.records  # trying once is not waiting


def test_a_writer_of_a_store_that_is_gone_says_so(tmp_path: Path) -> None:
    from ragbrain.errors import StoreNotFoundError

    with pytest.raises(StoreNotFoundError, match="is gone"), writer_lock(tmp_path / "nowhere"):
        pass


@pytest.mark.parametrize("raw", ["soon", "-1"])
def test_a_bad_lock_wait_is_named(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragbrain.store.processes import lock_wait

    monkeypatch.setenv("RAGBRAIN_LOCK_WAIT", raw)
    with pytest.raises(InvalidInputError, match="RAGBRAIN_LOCK_WAIT"):
        lock_wait()


def test_restoring_vectors_leaves_an_intact_index_alone(tmp_path: Path) -> None:
    """Every chunk the index holds is listed by the one query, so nothing is rewritten, even
    after deletions left their nodes in the graph."""
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    assert store.restore_missing_vectors() == []  # empty store
    # Distinct vectors: HNSW's graph can cut off a chunk whose vector has many exact copies
    # (3 of 600 stores of 300 hashed bag-of-words texts), and then writing it back is right.
    rng = random.Random(7)
    vectors = [[rng.gauss(0.0, 1.0) for _ in range(64)] for _ in range(300)]
    texts = [f"note {i}" for i in range(300)]
    store.upsert(
        [f"c{i}" for i in range(300)],
        texts,
        [{"type": "bug"} for _ in texts],
        [[x / math.hypot(*v) for x in v] for v in vectors],
    )
    store.delete([f"c{i}" for i in range(0, 300, 3)])
    before = store.version()
    assert store.restore_missing_vectors() == []
    assert store.version() == before  # nothing written


def test_the_lock_file_tells_a_killed_writer_from_one_that_let_go(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    lock = tmp_path / "s" / LOCK_FILE
    with writer_lock(tmp_path / "s") as interrupted:
        assert not interrupted  # a new store
        assert lock.read_text().startswith(f"pid {os.getpid()} on ")  # named while writing
    assert lock.read_text() == ""  # emptied on letting go
    with pytest.raises(RuntimeError), writer_lock(tmp_path / "s"):
        raise RuntimeError("an error is no kill")
    assert lock.read_text() == ""
    lock.write_text("4242")  # what a writer killed inside its lock leaves
    with writer_lock(tmp_path / "s") as interrupted:
        assert interrupted
    with store.writing():
        assert not store._writer_interrupted


def test_after_a_killed_writer_a_chunk_no_search_reaches_is_written_back(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s", BagOfWordsEmbeddings(), create=True)
    texts = [f"note {i} about redis cache and helm deploy {i % 7} {i}" for i in range(40)]
    ids = [f"c{i}" for i in range(40)]
    store.upsert(
        ids, texts, [{"type": "bug"} for _ in texts], store.embeddings.embed_documents(texts)
    )
    store.upsert(
        ["twin"], [texts[0]], [{"type": "bug"}], store.embeddings.embed_documents(texts[:1])
    )
    store.collection = CutOff(store.collection, "c7")  # type: ignore[assignment]
    assert restore_missing_vectors(store) == []  # the listing alone sees it indexed
    assert unreachable_vectors(store.collection, [*ids, "twin"], store.call) == [
        "c7"
    ]  # c0 and its twin tie
    (tmp_path / "s" / LOCK_FILE).write_text("4242")
    with store.writing():
        assert store.restore_missing_vectors() == ["c7"]
    assert store.collection.get(ids=["c7"])["documents"] == [texts[7]]  # written back whole
