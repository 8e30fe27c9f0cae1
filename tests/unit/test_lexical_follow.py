"""A long-lived BM25 index follows every change another writer makes, by the store's own record
(its generation), not the chunk count: an edit that keeps a note's chunk count included."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from ragbrain.ingest import ingest
from ragbrain.ingest.chunks import chunk_note
from ragbrain.ingest.files import scan_notes
from ragbrain.ingest.run import write_chunks
from ragbrain.store import Store
from ragbrain.store.lexical import LexicalSearcher, index_path, stored_generation, sync_lexical
from tests.support.fakes import NOTES, BagOfWordsEmbeddings

REPO = Path(__file__).resolve().parents[2]
EDITED = NOTES["bug/cache.md"] + " The zeppelin hangar cache was the culprit."


def hits(searcher: LexicalSearcher, query: str) -> list[str]:
    return [h.id for h in searcher.index.search(query, 3)]


def test_an_edit_keeping_the_count_is_seen_even_when_read_mid_write(
    fake_store: Store, notes_dir: Path
) -> None:
    """The reader looks while the other writer has written and deleted but not yet saved
    its lexical index: the chunk count is the same as before, and the index file unchanged
    (a reader that went by the count and the file's stamp stayed stale for good)."""
    searcher = LexicalSearcher(fake_store)
    before = set(fake_store.all_ids())
    (notes_dir / "bug/cache.md").write_text(EDITED)
    other = Store.open(fake_store.location, BagOfWordsEmbeddings())  # a second handle
    old = other.metadata_by_source(str(notes_dir), ["bug/cache.md"])["bug/cache.md"]
    scan = scan_notes(notes_dir / "bug/cache.md", root=notes_dir)
    write_chunks(other, [c for note in scan.notes for c in chunk_note(note)])
    other.delete(list(old))
    (new_id,) = set(other.all_ids()) - before
    assert other.count() == len(before)

    assert hits(searcher, "zeppelin") == [new_id]
    sync_lexical(other, record={})  # the writer finishes: saves and records its index
    assert hits(searcher, "zeppelin") == [new_id]
    assert sorted(searcher.index.ids) == sorted(other.all_ids())


def test_the_writers_index_file_is_taken_as_it_is(fake_store: Store, notes_dir: Path) -> None:
    searcher = LexicalSearcher(fake_store)
    (notes_dir / "bug/cache.md").write_text(EDITED)
    other = Store.open(fake_store.location, BagOfWordsEmbeddings())

    ingest(notes_dir, other)

    generation = other.ledger().generation
    assert generation is not None and stored_generation(index_path(other)) == generation
    assert len(hits(searcher, "zeppelin")) == 1
    assert searcher.index.generation == generation  # loaded from the writer's file


def test_an_edit_by_another_process_keeping_the_count_is_seen(
    tmp_path: Path, write_notes: Callable[[dict[str, str]], Path]
) -> None:
    notes = write_notes(NOTES)
    store = Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)
    ingest(notes, store)
    searcher = LexicalSearcher(store)  # as an MCP server or a LangChain app holds it
    count = store.count()
    assert hits(searcher, "zeppelin") == []

    (notes / "bug/cache.md").write_text(EDITED)
    code = (
        "import sys; from ragbrain.ingest import ingest; from ragbrain.store import Store; "
        "from tests.support.fakes import BagOfWordsEmbeddings; "
        "ingest(sys.argv[1], Store.open(sys.argv[2], BagOfWordsEmbeddings()))"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(notes), str(tmp_path / "store")], check=True, cwd=REPO
    )

    assert store.count() == count
    assert len(hits(searcher, "zeppelin")) == 1
