"""A hypothesis state machine: add, modify, delete, re-ingest and reopen, and the store always
matches a model of the files on disk."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ragbrain.ingest import ingest
from ragbrain.ingest.chunks import chunk_note
from ragbrain.ingest.files import read_note
from ragbrain.store import Store
from tests.support.fakes import BagOfWordsEmbeddings

WORDS = st.sampled_from(["redis", "cache", "backup", "alembic", "queue", "helm", "s3", "db"])
TEXTS = st.lists(WORDS, min_size=0, max_size=400).map(" ".join)  # empty, one or several chunks
NAMES = st.sampled_from(["a.md", "b.md", "bug/c.md", "bug/d.txt", "lesson/e.md"])


class IngestMachine(RuleBasedStateMachine):
    """The files are the model; after every ingest the store must hold exactly their chunks."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="ragbrain-model-"))
        self.root = self.tmp / "notes"
        self.root.mkdir()
        self.files: dict[str, str] = {}
        self.store = Store.open(self.tmp / "store", BagOfWordsEmbeddings(), create=True)
        self.in_step = True  # the store matches the files (nothing changed since the last run)

    def expected(self) -> dict[str, tuple[str, str]]:
        chunks: dict[str, tuple[str, str]] = {}
        for name, text in self.files.items():
            if not text.strip():
                continue  # an empty note is skipped with a reason, and holds no chunks
            note = read_note(self.root.absolute(), self.root.absolute() / name, None)
            chunks |= {c.id: (c.text, name) for c in chunk_note(note)}
        return chunks

    def held(self) -> dict[str, tuple[str, str]]:
        got = self.store.collection.get(include=["documents", "metadatas"])
        return {
            id_: (text, str(meta["source"]))
            for id_, text, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        }

    @rule(name=NAMES, text=TEXTS)
    def write(self, name: str, text: str) -> None:
        """Add a file, or modify it when it exists."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        self.files[name] = text
        self.in_step = False

    @precondition(lambda self: bool(self.files))
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        """Remove a file."""
        name = data.draw(st.sampled_from(sorted(self.files)))
        (self.root / name).unlink()
        del self.files[name]
        self.in_step = False

    @rule()
    def reingest(self) -> None:
        """Bring the store in step with the folder."""
        report = ingest(self.root, self.store)
        assert report.files == sum(bool(t.strip()) for t in self.files.values())
        self.in_step = True

    @rule()
    def reopen(self) -> None:
        """Open the same store folder again, as a new process would."""
        self.store = Store.open(self.tmp / "store", BagOfWordsEmbeddings())

    @invariant()
    def store_matches_the_files(self) -> None:
        if self.in_step:
            held = self.held()
            assert held == self.expected()
            assert self.store.count() == len(held)  # no duplicates

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


IngestMachine.TestCase.settings = settings(
    max_examples=15,
    stateful_step_count=8,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestIngestMachine = IngestMachine.TestCase
