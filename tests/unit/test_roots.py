"""One file, one source: ingesting a folder, a subfolder or a file of it stores each note once,
under the root that holds it; roots inside roots are merged; older duplicates are repaired."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from ragbrain.ingest import ingest
from ragbrain.ingest.chunks import chunk_note
from ragbrain.ingest.files import scan_notes
from ragbrain.ingest.roots import overlaps, place
from ragbrain.ingest.run import write_chunks
from ragbrain.store import Store
from ragbrain.store.ledger import ROOTS_KEY
from ragbrain.store.lexical import LexicalSearcher, sync_lexical
from tests.support.fakes import BagOfWordsEmbeddings

#: 8 one-chunk notes, 5 of them in tmux/ (the case that became 13 chunks).
EIGHT = {
    **{
        f"tmux/{name}.md": f"# {name}\n\nTmux {name.replace('-', ' ')}."
        for name in (
            "remove-the-delay-on-the-escape-key",
            "split-panes",
            "copy-mode",
            "rename-a-window",
            "reload-the-config",
        )
    },
    "git/rebase.md": "# Rebase\n\nRebase onto main before merging.",
    "git/bisect.md": "# Bisect\n\nBisect finds the commit that broke the build.",
    "shell.md": "# Shell\n\nSet -euo pipefail in every script.",
}


def sources(store: Store) -> Counter[tuple[str, str]]:
    """(root, source) of every chunk, counted."""
    metas = store.collection.get(include=["metadatas"])["metadatas"] or []
    return Counter((str(m["root"]), str(m["source"])) for m in metas)


def legacy_ingest(path: Path, store: Store, type_: str | None = None) -> None:
    """Ingest as an older ragbrain did: the given folder is the root, whatever the store
    holds, and no roots are recorded."""
    scan = scan_notes(path, type_)
    write_chunks(store, [c for note in scan.notes for c in chunk_note(note)])
    sync_lexical(store)


@pytest.fixture
def eight(write_notes: Callable[[dict[str, str]], Path]) -> Path:
    return write_notes(EIGHT)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(tmp_path / "store", BagOfWordsEmbeddings(), create=True)


def test_a_subfolder_or_a_file_of_an_ingested_folder_is_stored_once(
    eight: Path, store: Store
) -> None:
    ingest(eight, store)
    before = sources(store)
    assert sum(before.values()) == 8

    sub = ingest(eight / "tmux", store)
    one = ingest(eight / "tmux" / "copy-mode.md", store)

    assert sources(store) == before
    assert sub.root == one.root == eight
    assert (sub.added, sub.unchanged, one.added, one.unchanged) == (0, 5, 0, 1)
    assert ("tmux/copy-mode.md" in {s for _, s in before}) and all(
        root == str(eight) for root, _ in before
    )


def test_a_subfolder_ingest_updates_and_prunes_only_under_it(eight: Path, store: Store) -> None:
    ingest(eight, store)
    (eight / "tmux" / "split-panes.md").unlink()
    (eight / "shell.md").unlink()  # outside the subfolder: left alone
    (eight / "tmux" / "copy-mode.md").write_text("# copy-mode\n\nPrefix [ enters copy mode.")

    report = ingest(eight / "tmux", store)

    assert (report.added, report.deleted) == (1, 2)
    assert {s for _, s in sources(store)} == {
        f"tmux/{n}.md"
        for n in (
            "remove-the-delay-on-the-escape-key",
            "copy-mode",
            "rename-a-window",
            "reload-the-config",
        )
    } | {"git/rebase.md", "git/bisect.md", "shell.md"}


def test_a_folder_that_holds_an_ingested_root_takes_it_in(eight: Path, store: Store) -> None:
    first = ingest(eight / "tmux", store)
    assert first.root == eight / "tmux" and sum(sources(store).values()) == 5

    report = ingest(eight, store)

    assert sum(sources(store).values()) == 8
    assert {root for root, _ in sources(store)} == {str(eight)}
    assert [(m.inner, m.outer) for m in report.merges] == [(str(eight / "tmux"), str(eight))]
    assert f"{eight / 'tmux'} merged into {eight}" in report.summary()
    assert store.ledger().roots == (str(eight),)


def test_eight_notes_that_became_13_chunks_are_repaired_by_the_next_ingest(
    eight: Path, store: Store
) -> None:
    legacy_ingest(eight, store)
    legacy_ingest(eight / "tmux", store, type_="tmux")  # the old rule: the root's name
    assert sum(sources(store).values()) == 13
    assert ROOTS_KEY not in (store.collection.metadata or {})
    searcher = LexicalSearcher(store)  # a long-lived reader, as an MCP server holds one
    assert len(searcher.index) == 13

    report = ingest(eight, store)

    assert sum(sources(store).values()) == 8
    assert [(m.moved, m.dropped) for m in report.merges] == [(0, 5)]
    assert (report.added, report.deleted) == (0, 0)
    assert store.ledger().roots == (str(eight),)
    assert len(searcher.index) == 8
    assert sorted(searcher.index.ids) == sorted(store.all_ids())


def test_ingest_through_a_link_to_the_root_is_the_same_root(
    eight: Path, store: Store, tmp_path: Path
) -> None:
    link = tmp_path / "link"
    link.symlink_to(eight)
    ingest(eight, store)

    report = ingest(link / "git", store)

    assert report.root == eight and report.added == 0
    assert sum(sources(store).values()) == 8


def test_files_directly_in_the_root_get_the_default_type(eight: Path, store: Store) -> None:
    ingest(eight, store)
    metas = store.collection.get(include=["metadatas"])["metadatas"] or []
    types = {str(m["source"]): str(m["type"]) for m in metas}
    assert types["shell.md"] == "note"  # not the root folder's name ("notes")
    assert types["git/rebase.md"] == "git"


@pytest.mark.parametrize(
    ("given", "roots", "root", "new", "absorbed"),
    [
        ("n/a/x.md", ["n"], "n", False, ()),
        ("n/a", ["n"], "n", False, ()),
        ("n", ["n"], "n", False, ()),
        ("n", ["n/a", "n/b"], "n", True, ("n/a", "n/b")),
        ("m", ["n"], "m", True, ()),
        ("m/x.md", ["n"], "m", True, ()),
        ("n/x.md", ["n/a"], "n", True, ("n/a",)),
    ],
    ids=[
        "file-inside",
        "folder-inside",
        "the-root",
        "holds-two",
        "elsewhere",
        "file-elsewhere",
        "file-whose-folder-holds-a-root",
    ],
)
def test_placement(
    tmp_path: Path, given: str, roots: list[str], root: str, new: bool, absorbed: tuple[str, ...]
) -> None:
    for folder in ("n/a", "n/b", "m"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    for file in ("n/a/x.md", "n/x.md", "m/x.md"):
        (tmp_path / file).write_text("# x\n\nx")
    placed = place(tmp_path / given, [str(tmp_path / r) for r in roots])
    assert placed.root == tmp_path / root
    assert placed.new is new
    assert placed.absorbed == tuple(str(tmp_path / a) for a in absorbed)
    assert placed.path.is_relative_to(placed.root)


def test_overlapping_roots_are_named_with_their_outermost(tmp_path: Path) -> None:
    a, b, c = (str(tmp_path / p) for p in ("a", "a/b", "a/b/c"))
    for path in (a, b, c):
        Path(path).mkdir(parents=True, exist_ok=True)
    assert overlaps([a, b, c]) == [(b, a), (c, a)]
    assert overlaps([str(tmp_path / "x"), a]) == []
