"""Ingestion: deterministic ids, idempotence, replacement, pruning, types, and bad files."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ragbrain.ingest import find_notes, ingest
from ragbrain.ingest.files import split_front_matter
from ragbrain.store import Store
from tests.support.fakes import NOTES, CutOff


def snapshot(store: Store) -> dict[str, tuple[str, str]]:
    got = store.collection.get(include=["documents", "metadatas"])
    return {
        id_: (doc, str(meta["source"]))
        for id_, doc, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
    }


def test_second_run_changes_nothing(fake_store: Store, notes_dir: Path) -> None:
    before = snapshot(fake_store)
    report = ingest(notes_dir, fake_store)
    assert (report.added, report.deleted, report.unchanged) == (0, 0, len(before))
    assert snapshot(fake_store) == before


def test_check_index_writes_back_a_chunk_no_search_reaches(
    fake_store: Store, notes_dir: Path
) -> None:
    lost = sorted(fake_store.all_ids())[2]
    fake_store.collection = CutOff(fake_store.collection, lost)  # type: ignore[assignment]
    assert ingest(notes_dir, fake_store).restored == 0  # the listing alone still sees it
    report = ingest(notes_dir, fake_store, check_index=True)
    assert report.restored == 1 and "1 restored to the vector index" in report.summary()
    assert (report.added, report.deleted) == (0, 0)


def test_changed_file_replaces_its_chunks(fake_store: Store, notes_dir: Path) -> None:
    before = snapshot(fake_store)
    (notes_dir / "bug/cache.md").write_text("# Redis cache stampede\n\nFixed with locks.")
    report = ingest(notes_dir, fake_store)
    after = snapshot(fake_store)
    assert report.added == 1 and report.deleted == 1
    assert [t for t, s in after.values() if s == "bug/cache.md"] == [
        "# Redis cache stampede\n\nFixed with locks."
    ]
    assert {k: v for k, v in after.items() if v[1] != "bug/cache.md"} == {
        k: v for k, v in before.items() if v[1] != "bug/cache.md"
    }


def test_front_matter_change_alone_rewrites_the_chunks(fake_store: Store, notes_dir: Path) -> None:
    """A note re-typed in its front matter keeps its text; its chunks must follow the type."""
    path = notes_dir / "bug/cache.md"
    body = path.read_text(encoding="utf-8")
    path.write_text("---\ntype: lesson\ntags: [redis]\n---\n" + body, encoding="utf-8")
    count = fake_store.count()
    report = ingest(notes_dir, fake_store)
    assert report.added == report.deleted >= 1
    assert fake_store.count() == count
    got = fake_store.collection.get(where={"source": "bug/cache.md"}, include=["metadatas"])
    assert {(m["type"], m["tags"]) for m in got["metadatas"] or []} == {("lesson", "redis")}
    assert set(got["ids"]) <= {h["id"] for h in fake_store.search("redis cache", 10, ["lesson"])}


def test_removed_file_is_pruned_unless_asked_not_to(fake_store: Store, notes_dir: Path) -> None:
    (notes_dir / "bug/backup.md").unlink()
    ingest(notes_dir, fake_store, prune=False)
    assert "bug/backup.md" in {s for _, s in snapshot(fake_store).values()}
    report = ingest(notes_dir, fake_store)
    assert report.deleted == 1
    assert "bug/backup.md" not in {s for _, s in snapshot(fake_store).values()}


def test_single_file_ingest_prunes_nothing(fake_store: Store, notes_dir: Path) -> None:
    count = fake_store.count()
    report = ingest(notes_dir / "bug/backup.md", fake_store)
    assert (report.files, report.deleted) == (1, 0)
    assert fake_store.count() >= count


def test_type_from_option_front_matter_or_folder(notes_dir: Path) -> None:
    _, notes, _ = find_notes(notes_dir)
    types = {n.source: n.type for n in notes}
    assert types["bug/backup.md"] == "bug"  # folder
    assert types["howto/rollback.md"] == "lesson"  # front matter wins over the folder
    _, forced, _ = find_notes(notes_dir, type_="archive")
    assert {n.type for n in forced} == {"archive"}  # --type wins over both
    titles = {n.source: n.title for n in notes}
    assert titles["lesson/timeout.md"] == "Statement timeout"
    assert titles["bug/backup.md"] == "Nightly backup failed"


def test_ids_are_deterministic_and_metadata_complete(
    fake_store: Store, notes_dir: Path, tmp_path: Path
) -> None:
    other = Store.open(tmp_path / "again", fake_store.embeddings, create=True)
    ingest(notes_dir, other)
    assert snapshot(other) == snapshot(fake_store)
    meta = fake_store.collection.get(include=["metadatas"])["metadatas"][0]
    assert {"source", "root", "type", "chunk", "title"} <= set(meta)


def test_long_note_is_split(
    write_notes: Callable[[dict[str, str]], Path], tmp_path: Path, fake_embeddings
) -> None:  # type: ignore[no-untyped-def]
    body = "\n\n".join(f"## Part {i}\n\n" + "word " * 120 for i in range(6))
    root = write_notes({"lesson/long.md": "# Long\n\n" + body})
    store = Store.open(tmp_path / "s", fake_embeddings, create=True)
    report = ingest(root, store)
    chunks = store.collection.get(include=["metadatas"])["metadatas"]
    assert report.added == len(chunks) > 3
    assert sorted(int(m["chunk"]) for m in chunks) == list(range(len(chunks)))


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("binary.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00", "binary"),
        ("empty.md", b"---\ntitle: x\n---\n\n", "empty"),
        ("bad-yaml.md", b"---\ntitle: [unclosed\n---\nbody", "front matter"),
        ("huge.txt", b"x" * 3000, "too large"),
    ],
    ids=["binary", "empty", "bad-front-matter", "too-large"],
)
def test_bad_files_are_skipped_with_a_reason(
    tmp_path: Path,
    fake_embeddings,
    name: str,
    content: bytes,
    reason: str,  # type: ignore[no-untyped-def]
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / name).write_bytes(content)
    (root / "good.md").write_text("# Good\n\nA fine note.")
    store = Store.open(tmp_path / "s", fake_embeddings, create=True)
    report = ingest(root, store, max_bytes=2000)
    assert [s.path.name for s in report.skipped] == [name]
    assert reason in report.skipped[0].reason
    assert {m["source"] for m in store.collection.get(include=["metadatas"])["metadatas"]} == {
        "good.md"
    }


def test_links_outside_and_loops_are_skipped(tmp_path: Path, notes_dir: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\n\nnot for the store")
    os.symlink(outside, notes_dir / "bug" / "leak.md")
    os.symlink(notes_dir / "bug" / "loop.md", notes_dir / "bug" / "loop.md")
    os.symlink(notes_dir / "bug" / "backup.md", notes_dir / "bug" / "alias.md")
    _, notes, skipped = find_notes(notes_dir)
    reasons = {s.path.name: s.reason for s in skipped}
    assert "outside the ingested folder" in reasons["leak.md"]
    assert "looping" in reasons["loop.md"]
    assert "bug/alias.md" in {n.source for n in notes}  # a link inside the folder is fine
    assert len(notes) == len(NOTES) + 1


def test_hidden_and_other_files_are_ignored(write_notes: Callable[[dict[str, str]], Path]) -> None:
    root = write_notes({"a.md": "# A\n\ntext", ".obsidian/x.md": "# X\n\nhidden", "b.py": "x = 1"})
    _, notes, skipped = find_notes(root)
    assert [n.source for n in notes] == ["a.md"] and not skipped


def test_missing_path_is_an_error(tmp_path: Path, fake_embeddings) -> None:  # type: ignore[no-untyped-def]
    store = Store.open(tmp_path / "s", fake_embeddings, create=True)
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        ingest(tmp_path / "missing", store)


def test_front_matter_split() -> None:
    assert split_front_matter("---\ntitle: T\ntype: bug\n---\nbody") == (
        {"title": "T", "type": "bug"},
        "body",
    )
    assert split_front_matter("no front matter") == ({}, "no front matter")
    assert split_front_matter("---\nunclosed") == ({}, "---\nunclosed")


def ten_thousand_chunks() -> str:
    """A note that splits into over 10,000 chunks (each paragraph fills one)."""
    return "# Huge\n\n" + "\n\n".join(f"p{i} " + "word " * 150 for i in range(10_050))


def test_a_10000_chunk_file_is_skipped_by_size_by_default(tmp_path: Path, fake_embeddings) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "notes"
    root.mkdir()
    (root / "huge.md").write_text(ten_thousand_chunks())
    store = Store.open(tmp_path / "s", fake_embeddings, create=True)
    report = ingest(root, store)
    assert [s.reason for s in report.skipped] == [
        f"too large ({(root / 'huge.md').stat().st_size:,} bytes > 2,000,000)"
    ]
    assert store.count() == 0


FRENCH = "# Réunion du café\n\nLe comité a décidé: déploiement vendredi. Coût: 5 €.\n"
RUSSIAN = "# Привет\n\nЭто заметка о базе данных и резервном копировании.\n"


@pytest.mark.parametrize("detector", [True, False], ids=["charset-normalizer", "core"])
def test_legacy_encodings_are_decoded_not_skipped(
    tmp_path: Path, fake_embeddings, monkeypatch: pytest.MonkeyPatch, detector: bool
) -> None:  # type: ignore[no-untyped-def]
    import sys

    from ragbrain.ingest.files import decode_text

    if not detector:  # as without ragbrain[formats]
        monkeypatch.setitem(sys.modules, "charset_normalizer", None)
    root = tmp_path / "notes"
    root.mkdir()
    (root / "cp1252.md").write_bytes(FRENCH.encode("cp1252"))
    (root / "latin1.md").write_bytes("# Übergabe\n\nJörg prüft die Größe.\n".encode("latin-1"))
    (root / "utf16.md").write_bytes(FRENCH.replace("café", "thé").encode("utf-16"))
    store = Store.open(tmp_path / "s", fake_embeddings, create=True)
    report = ingest(root, store)
    assert report.skipped == [] and report.files == 3
    texts = store.collection.get(include=["documents"])["documents"]
    assert any("Le comité a décidé" in t and "5 €" in t for t in texts)
    assert any("Jörg prüft die Größe" in t for t in texts)
    assert any("Réunion du thé" in t for t in texts)
    if detector:
        assert decode_text(RUSSIAN.encode("cp1251"))[0] == RUSSIAN
    else:  # a cp1252 reading of Cyrillic would be nonsense: said, not guessed
        with pytest.raises(ValueError, match="nor a Western single-byte encoding"):
            decode_text(RUSSIAN.encode("cp1251"))
