"""PDF, HTML and Word files: text, titles, page numbers, and the reasons bad ones are skipped."""

from __future__ import annotations

import builtins
from pathlib import Path
from typing import Any

import pytest

from ragbrain.ingest import find_notes, ingest
from ragbrain.ingest.chunks import chunk_note
from ragbrain.ingest.files import read_note
from ragbrain.ingest.formats import decode_html, load_html, load_pdf
from ragbrain.store import Store
from tests.support.format_files import write_docx, write_html, write_pdf

PAGES = [
    "Redis cache stampede after the deploy.\n\nWe added jitter to the TTL.",
    "Nightly backup failed: the S3 credentials expired. Café naïve résumé.",
    "Alembic migrations, one head only, checked in CI.",
]


def test_pdf_text_per_page_and_page_numbers_on_chunks(tmp_path: Path) -> None:
    pdf = write_pdf(tmp_path / "notes" / "papers" / "paper.pdf", PAGES, title="Ops paper")
    note = read_note(tmp_path / "notes", pdf, None)
    assert (note.title, note.type, note.source) == ("Ops paper", "papers", "papers/paper.pdf")
    assert [p.split()[0] for p in note.pages] == ["Redis", "Nightly", "Alembic"]
    assert "Café naïve résumé." in note.pages[1]
    chunks = chunk_note(note)
    assert [c.metadata["page"] for c in chunks] == [1, 2, 3]
    assert [c.metadata["chunk"] for c in chunks] == [0, 1, 2]
    assert "credentials" in chunks[1].text and "credentials" not in chunks[0].text


def test_pdf_two_columns_keeps_every_word(tmp_path: Path) -> None:
    text = "\n\n".join(f"Paragraph {i} about replica failover number {i}." for i in range(8))
    document = load_pdf(write_pdf(tmp_path / "two.pdf", [text], columns=2))
    assert all(f"Paragraph {i} about replica failover" in document.pages[0] for i in range(8))


def test_pdf_chunks_are_cited_by_page(tmp_path: Path, fake_embeddings) -> None:  # type: ignore[no-untyped-def]
    from ragbrain.render import print_run

    root = tmp_path / "notes"
    write_pdf(root / "paper.pdf", PAGES)
    store = Store.open(tmp_path / "s", fake_embeddings, create=True)
    report = ingest(root, store)
    assert (report.files, report.added, report.skipped) == (1, 3, [])
    hit = store.search("backup credentials expired", 1)[0]
    assert hit["metadata"]["page"] == 2
    assert ingest(root, store).added == 0  # ids are stable: a rerun embeds nothing

    from langchain_core.documents import Document
    from rich.console import Console

    from ragbrain.state import RETRIEVAL_KEY

    doc = Document(
        page_content=hit["text"],
        metadata={
            **hit["metadata"],
            RETRIEVAL_KEY: {"distance": 0.1, "critic_score": None, "from_fallback": False},
        },
    )
    console = Console(record=True, width=200)
    output = {
        "depth": 1,
        "candidates": 1,
        "complexity": "simple",
        "verdict": "good",
        "best_distance": 0.1,
        "gate": 0.5,
        "critic": "off",
        "answerable": True,
        "abstain_reason": None,
        "notes": [],
        "documents": [doc],
    }
    print_run("q", output, console)  # type: ignore[arg-type]
    assert "paper.pdf#p2" in console.export_text()


@pytest.mark.parametrize(
    ("title", "heading", "expected"),
    [("Page title", "Article heading", "Page title"), ("", "Article heading", "Article heading")],
    ids=["title-tag", "h1-when-no-title"],
)
def test_html_main_text_and_title(tmp_path: Path, title: str, heading: str, expected: str) -> None:
    page = write_html(
        tmp_path / "page.html",
        title=title,
        heading=heading,
        body=["Redis is a cache, never a queue.", "Celery uses RabbitMQ."],
    )
    document = load_html(page)
    assert document.title == expected
    text = document.pages[0]
    assert "Redis is a cache, never a queue." in text and "Celery uses RabbitMQ." in text
    for junk in ("analytics beacon", "font-family", "loaded widget", "cookies", "Copyright"):
        assert junk not in text, junk


@pytest.mark.parametrize(
    ("encoding", "declare"),
    [
        ("utf-8", True),
        ("utf-8", False),
        ("cp1252", True),
        ("cp1252", False),
        ("shift_jis", True),
        ("utf-16", False),
    ],
    ids=["utf8", "utf8-undeclared", "cp1252", "cp1252-undeclared", "shift-jis", "utf16-bom"],
)
def test_html_in_odd_encodings(tmp_path: Path, encoding: str, declare: bool) -> None:
    text = "キャッシュの障害" if encoding == "shift_jis" else "Crème brûlée, café au lait à Noël"
    page = write_html(
        tmp_path / "p.html",
        title="T",
        heading=None,
        body=[text],
        encoding=encoding,
        declare=declare,
    )
    assert text in load_html(page).pages[0]


def test_html_declared_encoding_that_lies_falls_back_to_detection() -> None:
    data = '<meta charset="utf-8"><p>caf\xe9 cr\xe8me br\xfbl\xe9e au lait</p>'.encode("cp1252")
    assert "café crème" in decode_html(data)


def test_docx_paragraphs_and_heading(tmp_path: Path) -> None:
    path = write_docx(
        tmp_path / "n" / "meeting" / "minutes.docx",
        heading="Weekly sync",
        paragraphs=["We decided to adopt Alembic.", "Backups move to S3."],
    )
    note = read_note(tmp_path / "n", path, None)
    assert (note.title, note.type) == ("Weekly sync", "meeting")
    assert "We decided to adopt Alembic." in note.body and "Backups move to S3." in note.body
    assert "page" not in chunk_note(note)[0].metadata


def _encrypted(path: Path) -> None:
    write_pdf(path, PAGES, password="secret")


def _scanned(path: Path) -> None:
    write_pdf(path, ["", ""])


def _truncated(path: Path) -> None:
    data = write_pdf(path, PAGES).read_bytes()
    path.write_bytes(data[: len(data) // 3])


def _not_a_pdf(path: Path) -> None:
    path.write_bytes(b"%PDF-1.7\nthis is not really a PDF")


def _empty_html(path: Path) -> None:
    path.write_text("<html><head><script>var x = 1;</script></head><body></body></html>")


def _bad_docx(path: Path) -> None:
    path.write_bytes(b"PK\x03\x04 not a real zip")


@pytest.mark.parametrize(
    ("name", "make", "reason"),
    [
        ("locked.pdf", _encrypted, "encrypted PDF"),
        ("scan.pdf", _scanned, "no text layer in its 2 page(s)"),
        ("truncated.pdf", _truncated, "not a readable PDF"),
        ("fake.pdf", _not_a_pdf, "not a readable PDF"),
        ("empty.html", _empty_html, "empty"),
        ("bad.docx", _bad_docx, "not a readable .docx"),
    ],
    ids=["encrypted-pdf", "scanned-pdf", "truncated-pdf", "not-a-pdf", "empty-html", "bad-docx"],
)
def test_bad_documents_are_skipped_with_a_reason(
    tmp_path: Path, fake_embeddings: Any, name: str, make: Any, reason: str
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    make(root / name)
    (root / "good.md").write_text("# Good\n\nA fine note.")
    report = ingest(root, Store.open(tmp_path / "s", fake_embeddings, create=True))
    assert [s.path.name for s in report.skipped] == [name]
    assert reason in report.skipped[0].reason
    assert report.files == 1


@pytest.mark.parametrize(
    ("suffix", "library", "message"),
    [
        (".pdf", "pypdfium2", "PDF support needs pypdfium2: pip install 'ragbrain[formats]'"),
        (".html", "selectolax", "HTML support needs selectolax: pip install 'ragbrain[formats]'"),
        (".docx", "docx", "python-docx: pip install 'ragbrain[formats]'"),
    ],
    ids=["pdf", "html", "docx"],
)
def test_missing_library_skips_the_file_with_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str, library: str, message: str
) -> None:
    real_import = builtins.__import__

    def refuse(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == library or name.startswith(library + "."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    root = tmp_path / "notes"
    root.mkdir()
    (root / f"file{suffix}").write_bytes(b"anything")
    monkeypatch.setattr(builtins, "__import__", refuse)
    _, notes, skipped = find_notes(root)
    assert notes == [] and [s.path.name for s in skipped] == [f"file{suffix}"]
    assert message in skipped[0].reason
