"""`ragbrain mcp --watch`: the allowed folders followed in a background thread, searches free."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ragbrain.errors import InvalidInputError
from ragbrain.mcp_server import RagbrainService
from tests.support.fakes import BagOfWordsEmbeddings

TIMEOUT = 20.0


def eventually(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Gated(BagOfWordsEmbeddings):
    """Chunk embedding waits while ``gate`` is closed (an update in progress); query
    embedding never waits."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not self.gate.is_set():
            self.waiting.set()
            self.gate.wait(TIMEOUT)
        return super().embed_documents(texts)


@pytest.fixture
def watching(tmp_path: Path, notes_dir: Path) -> Iterator[tuple[RagbrainService, Gated]]:
    embeddings = Gated()
    service = RagbrainService(
        tmp_path / "store",
        allowed=[notes_dir],
        critic=None,
        embeddings=embeddings,
        watch=True,
        debounce=0.1,
    )
    service.start_loading()
    yield service, embeddings
    embeddings.gate.set()
    service.stop_watching()


def sources(service: RagbrainService, query: str) -> list[str]:
    return [chunk.source for chunk in service.search(query, None, 3).chunks]


def test_edits_become_searchable_and_searches_never_wait_for_an_update(
    watching: tuple[RagbrainService, Gated], notes_dir: Path
) -> None:
    service, embeddings = watching
    eventually(lambda: service.stats().chunks == 6, "the initial ingest")
    (notes_dir / "bug/kafka.md").write_text("# Kafka consumer lag\n\nPartition rebalance storm.")
    eventually(lambda: "bug/kafka.md" in sources(service, "kafka partition rebalance"), "edit")

    embeddings.gate.clear()  # the next update blocks while embedding
    (notes_dir / "bug/zookeeper.md").write_text("# Zookeeper quorum\n\nLost the quorum.")
    assert embeddings.waiting.wait(TIMEOUT)
    started = time.monotonic()
    assert "bug/kafka.md" in sources(service, "kafka partition rebalance")
    assert time.monotonic() - started < 5.0  # answered while the update is held
    embeddings.gate.set()
    eventually(lambda: "bug/zookeeper.md" in sources(service, "zookeeper quorum"), "second")

    (notes_dir / "bug/kafka.md").unlink()
    eventually(lambda: "bug/kafka.md" not in sources(service, "kafka partition"), "deletion")


def test_watch_needs_an_allowed_folder(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="--watch needs at least one --allow DIR"):
        RagbrainService(tmp_path / "store", watch=True)
