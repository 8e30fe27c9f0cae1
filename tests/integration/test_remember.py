"""remember: a new note in the inbox, never overwriting, found by the next search; bad input."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragbrain import InvalidInputError
from ragbrain.ingest.files import split_front_matter
from ragbrain.ingest.inbox import MAX_NOTE_CHARS, Inbox, slug
from ragbrain.mcp_server import RagbrainService
from tests.support.fakes import BagOfWordsEmbeddings


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    """An allowed root with an inbox and one note, and a folder outside it."""
    root, outside = tmp_path / "notes", tmp_path / "outside"
    (root / "inbox").mkdir(parents=True)
    (root / "bug").mkdir()
    (root / "bug" / "cache.md").write_text("# Redis cache stampede\n\nJitter on the TTL.")
    outside.mkdir()
    return {"root": root, "inbox": root / "inbox", "outside": outside, "tmp": tmp_path}


@pytest.fixture
def service(folders: dict[str, Path], fake_embeddings: BagOfWordsEmbeddings) -> RagbrainService:
    service = RagbrainService(
        folders["tmp"] / "store",
        allowed=[folders["root"]],
        inbox=folders["inbox"],
        critic=None,
        embeddings=fake_embeddings,
    )
    service.ingest(str(folders["root"]), None)
    return service


def test_a_remembered_note_is_found_by_the_next_search(
    service: RagbrainService, folders: dict[str, Path]
) -> None:
    title = "Pin the ruff version in pre-commit"
    text = "An unpinned ruff reformatted every file on a minor release.\n\nPin it."

    written = service.remember(title, text, "lesson", ["tooling", "ci"])
    found = service.search(title, None, 3)

    assert written.source == "inbox/pin-the-ruff-version-in-pre-commit.md"
    assert found.chunks[0].source == written.source
    assert found.chunks[0].type == "lesson"
    assert (
        written.cite == f"{written.source}:{found.chunks[0].start_line}-{found.chunks[0].end_line}"
    )
    meta, body = split_front_matter((folders["root"] / written.source).read_text())
    assert meta == {
        "title": title,
        "type": "lesson",
        "tags": ["tooling", "ci"],
        "date": dt.date.today().isoformat(),
    }
    assert body == f"\n# {title}\n\n{text}\n"
    # Sources stay relative to the allowed root: ingesting the root again changes nothing.
    again = service.ingest(str(folders["root"]), None)
    assert (again.added, again.deleted) == (0, 0)
    assert service.get(written.source).text == f"# {title}\n\n{text}"


def test_a_taken_name_gets_a_suffix_and_nothing_is_overwritten(
    service: RagbrainService, folders: dict[str, Path]
) -> None:
    first = service.remember("Deploy freeze", "Friday: no deploys.", "decision")
    before = (folders["root"] / first.source).read_bytes()
    second = service.remember("Deploy freeze", "Unless it is a fix.", "decision")
    third = service.remember("deploy FREEZE!", "Third.", "decision")

    assert [first.source, second.source, third.source] == [
        "inbox/deploy-freeze.md",
        "inbox/deploy-freeze-2.md",
        "inbox/deploy-freeze-3.md",
    ]
    assert (folders["root"] / first.source).read_bytes() == before
    assert sorted(p.name for p in folders["inbox"].iterdir()) == [
        "deploy-freeze-2.md",
        "deploy-freeze-3.md",
        "deploy-freeze.md",
    ]  # no temporary file left behind


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("../../etc/passwd", "etc-passwd.md"),
        ("a/b\\c", "a-b-c.md"),
        ("..", "note.md"),
        ("/absolute/title", "absolute-title.md"),
        ("Ünïcode Tïtle – 日本語", "ünïcode-tïtle-日本語.md"),
        ("x" * 150, "x" * 80 + ".md"),
    ],
    ids=["dot-dot", "separators", "only-dots", "absolute", "unicode", "long"],
)
def test_titles_never_name_another_folder(
    service: RagbrainService, folders: dict[str, Path], title: str, name: str
) -> None:
    written = service.remember(title, "Some text.", "lesson")
    assert written.source == f"inbox/{name}"
    assert (folders["inbox"] / name).is_file()
    assert not any(folders["outside"].iterdir())
    assert slug(title) + ".md" == name


BAD: list[tuple[dict[str, Any], str]] = [
    ({"title": "bell\x07"}, "title holds control characters"),
    ({"title": "two\nlines"}, "title holds control characters or line breaks"),
    ({"title": "bidi \u202eevil"}, "title holds control characters"),
    ({"title": "   "}, "title is empty"),
    ({"title": "t" * 201}, "title is longer than 200"),
    ({"text": "x" * 10_000_000}, "text is 10,000,000 characters; a note written back holds"),
    ({"text": "escape \x1b[2J"}, "text holds control characters"),
    ({"text": " \n "}, "text is empty"),
    ({"type_": "../bug"}, "type must be"),
    ({"type_": ""}, "type must be"),
    ({"tags": ["ok", "a/b"]}, "each tag must be"),
    ({"tags": [str(n) for n in range(21)]}, "at most 20 tags"),
]


@pytest.mark.parametrize(
    ("change", "message"),
    BAD,
    ids=[
        "title-bell",
        "title-newline",
        "title-bidi",
        "title-blank",
        "title-long",
        "text-10MB",
        "text-escape",
        "text-blank",
        "type-path",
        "type-empty",
        "tag-separator",
        "tags-too-many",
    ],
)
def test_bad_notes_are_refused_and_nothing_is_written(
    service: RagbrainService, folders: dict[str, Path], change: dict[str, Any], message: str
) -> None:
    count = service.stats().chunks
    args: dict[str, Any] = {"title": "A title", "text": "Text.", "type_": "lesson", "tags": None}
    args.update(change)

    with pytest.raises(InvalidInputError, match=message):
        service.remember(**args)

    assert not any(folders["inbox"].iterdir())
    assert service.stats().chunks == count


def test_the_10mb_cap_is_the_schema_s_too() -> None:
    from pydantic import ValidationError

    from ragbrain.mcp_server.schemas import RememberArgs

    with pytest.raises(ValidationError, match="text"):
        RememberArgs(title="t", text="x" * (MAX_NOTE_CHARS + 1), type="lesson")


@pytest.mark.parametrize(
    ("inbox", "message"),
    [
        ("{outside}", "is outside every --allow folder"),
        ("{root}/../outside", "is outside every --allow folder"),
        ("{root}/link-out", "is outside every --allow folder"),
        ("{outside}/missing", "is outside every --allow folder"),
        ("{root}/bug/cache.md", "not a folder inside an --allow one"),
    ],
    ids=["outside", "dot-dot", "symlink-out", "missing-outside", "a-file"],
)
def test_the_inbox_must_be_a_folder_inside_an_allowed_one(
    folders: dict[str, Path], inbox: str, message: str
) -> None:
    (folders["root"] / "link-out").symlink_to(folders["outside"], target_is_directory=True)
    with pytest.raises(InvalidInputError, match=message):
        RagbrainService(
            folders["tmp"] / "store",
            allowed=[folders["root"]],
            inbox=inbox.format(**folders),
            critic=None,
        )


def test_a_missing_inbox_inside_an_allowed_folder_is_created(folders: dict[str, Path]) -> None:
    inbox = folders["root"] / "new" / "inbox"
    service = RagbrainService(
        folders["tmp"] / "store", allowed=[folders["root"]], inbox=inbox, critic=None
    )
    assert inbox.is_dir() and service.inbox is not None and service.inbox.folder == inbox
    assert not (folders["outside"] / "missing").exists()


def test_an_inbox_needs_an_allowed_folder(folders: dict[str, Path]) -> None:
    with pytest.raises(InvalidInputError, match="outside every --allow folder"):
        RagbrainService(folders["tmp"] / "store", inbox=folders["inbox"], critic=None)


def test_remember_is_off_without_an_inbox(
    folders: dict[str, Path], fake_embeddings: BagOfWordsEmbeddings
) -> None:
    service = RagbrainService(
        folders["tmp"] / "store", allowed=[folders["root"]], critic=None, embeddings=fake_embeddings
    )
    with pytest.raises(InvalidInputError, match="remember is off: start the server with --inbox"):
        service.remember("t", "x", "lesson")


def test_an_inbox_swapped_for_a_link_after_start_is_refused(folders: dict[str, Path]) -> None:
    inbox = Inbox.inside(folders["inbox"], [folders["root"].resolve()])
    folders["inbox"].rmdir()
    folders["inbox"].symlink_to(folders["outside"], target_is_directory=True)

    with pytest.raises(InvalidInputError, match="inbox folder was replaced"):
        inbox.write("t", "x", "lesson")
    assert not any(folders["outside"].iterdir())


def test_front_matter_is_yaml_even_for_odd_titles(folders: dict[str, Path]) -> None:
    inbox = Inbox.inside(folders["inbox"], [folders["root"].resolve()])
    title = "---\nkey: value: 'quotes' # not a comment"
    with pytest.raises(InvalidInputError, match="line breaks"):
        inbox.write(title, "x", "lesson")
    path = inbox.write("key: 'v' # not: a comment ---", "x", "lesson")
    meta = yaml.safe_load(path.read_text().split("---\n")[1])
    assert meta["title"] == "key: 'v' # not: a comment ---"


def test_a_retried_note_is_found_not_written_twice(
    service: RagbrainService, folders: dict[str, Path]
) -> None:
    first = service.remember("Deploy freeze", "Friday: no deploys.", "decision")
    count = service.stats().chunks
    again = service.remember("Deploy freeze", "Friday: no deploys.\n", "decision")

    assert (again.source, again.already, first.already) == (first.source, True, False)
    assert [p.name for p in folders["inbox"].iterdir()] == ["deploy-freeze.md"]
    assert service.stats().chunks == count


def test_remember_under_a_held_lock_is_queued_then_indexed_once(
    service: RagbrainService, folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer holds the store: the note is saved and queued at once (no lock error,
    no orphan), a retry finds it, and it is indexed once the lock frees."""
    import time

    from ragbrain.store.processes import writer_lock

    monkeypatch.setenv("RAGBRAIN_LOCK_WAIT", "1")
    title, text = "Rotate the signing key", "Every 90 days, from the vault runbook."
    with writer_lock(folders["tmp"] / "store"):
        queued = service.remember(title, text, "howto")
        retried = service.remember(title, text, "howto")
        assert queued.queued and retried.queued and retried.already
        assert queued.chunks == 0 and "queued" in queued.status
        assert retried.source == queued.source == "inbox/rotate-the-signing-key.md"
        assert service.queued() == [folders["root"] / queued.source]
    deadline = time.monotonic() + 60
    while service.queued() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert service.queued() == []
    assert service.search(title, None, 3).chunks[0].source == queued.source
    assert [p.name for p in folders["inbox"].iterdir()] == ["rotate-the-signing-key.md"]
    assert len(service.load().store.chunks_of(queued.source)) == 1


def test_a_store_that_is_gone_is_said_and_nothing_is_written(
    service: RagbrainService, folders: dict[str, Path]
) -> None:
    import shutil

    from ragbrain.errors import StoreNotFoundError

    shutil.rmtree(folders["tmp"] / "store")
    with pytest.raises(StoreNotFoundError, match="is gone"):
        service.remember("Lost note", "Written while the store was away.", "lesson")
    assert list(folders["inbox"].iterdir()) == []


def test_a_failed_ingest_takes_the_note_back(
    service: RagbrainService, folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ragbrain.ingest

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("the disk is full")

    service.load()
    monkeypatch.setattr(ragbrain.ingest, "ingest", broken)
    with pytest.raises(RuntimeError, match="disk is full"):
        service.remember("Half note", "Never indexed.", "lesson")
    assert list(folders["inbox"].iterdir()) == []
