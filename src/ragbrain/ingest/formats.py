"""Reading PDF, HTML and Word files into text: one loader per format, libraries from an extra.

The libraries were chosen by measurement (docs/decisions/format-libraries.md, see
docs/formats-and-watch.md): pypdfium2 for PDF, selectolax for HTML, python-docx for .docx.
A missing library is a reason to skip the file that names the install command.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragbrain.errors import InvalidInputError

INSTALL = "pip install 'ragbrain[formats]'"
#: A PDF or Word file may be much larger than the text it holds; the text is checked too.
MAX_DOCUMENT_BYTES = 200_000_000
#: A page with fewer letters than this is taken for a scan (no text layer).
MIN_PAGE_LETTERS = 1
_SPACE = re.compile(r"[ \t\f\v\u00a0]+")
_BLANKS = re.compile(r"\n\s*\n\s*")
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)
_BOILERPLATE = (
    "script, style, noscript, template, svg, iframe, nav, aside, footer, header, form, "
    "[role=navigation], [role=banner], [role=contentinfo], [role=complementary], [hidden], "
    "[aria-hidden=true]"
)


class MissingFormatLibraryError(InvalidInputError):
    """The optional library that reads a format is not installed."""


@dataclass(frozen=True)
class Document:
    """A file's text: a title if the file names one, and its pages (one for HTML and Word)."""

    title: str | None
    pages: tuple[str, ...]
    paged: bool = False  # the pages are real pages (PDF): chunks carry their number


def _missing(what: str, package: str) -> MissingFormatLibraryError:
    return MissingFormatLibraryError(f"{what} support needs {package}: {INSTALL}")


def clean(text: str) -> str:
    """Runs of spaces to one, blank-line runs to one blank line, Windows line ends to ``\\n``."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    lines = [_SPACE.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def load_pdf(path: Path) -> Document:
    """The text of each page, with pypdfium2 (PDFium).

    Raises:
        MissingFormatLibraryError: pypdfium2 is not installed.
        ValueError: The PDF is encrypted, corrupt, or has no text layer (a scan).
    """
    try:
        import pypdfium2
    except ImportError:
        raise _missing("PDF", "pypdfium2") from None
    try:
        document = pypdfium2.PdfDocument(path)
    except pypdfium2.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise ValueError("encrypted PDF (needs a password)") from None
        raise ValueError(f"not a readable PDF ({exc})") from None
    try:
        pages = []
        for page in document:
            textpage = page.get_textpage()
            pages.append(clean(textpage.get_text_bounded()))
            textpage.close()
            page.close()
        title = document.get_metadata_dict().get("Title") or None
    finally:
        document.close()
    if not pages:
        raise ValueError("PDF without pages")
    if not any(sum(c.isalnum() for c in p) >= MIN_PAGE_LETTERS for p in pages):
        raise ValueError(f"no text layer in its {len(pages)} page(s) (a scan? OCR is not done)")
    return Document(title=title.strip() if title else None, pages=tuple(pages), paged=True)


def decode_html(data: bytes) -> str:
    """HTML bytes to text: a byte-order mark, else the declared ``<meta charset>``, else
    UTF-8, else the encoding charset-normalizer detects.

    Raises:
        ValueError: No encoding fits the bytes.
    """
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(name)
    declared = _CHARSET.search(data[:4096])
    if declared:
        try:
            return data.decode(declared.group(1).decode("ascii"))
        except (LookupError, UnicodeDecodeError):
            pass  # a wrong or unknown declaration: sniff below
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(data).best()
    if best is None:
        raise ValueError("HTML in an encoding that could not be detected")
    return str(best)


def load_html(path: Path) -> Document:
    """The main text of a web page, with selectolax: scripts, styles, navigation, sidebars,
    headers and footers dropped; ``<main>`` or ``<article>`` when the page marks one.
    The title is the ``<title>``, else the first ``<h1>``.

    Raises:
        MissingFormatLibraryError: selectolax is not installed.
        ValueError: The file cannot be decoded or holds no text.
    """
    return parse_html(path.read_bytes())


def parse_html(data: bytes) -> Document:
    """``load_html`` on bytes.

    Raises:
        MissingFormatLibraryError: selectolax is not installed.
        ValueError: The bytes cannot be decoded.
    """
    try:
        from selectolax.lexbor import LexborHTMLParser
    except ImportError:
        raise _missing("HTML", "selectolax") from None
    tree = LexborHTMLParser(decode_html(data))
    title_node = tree.css_first("title")
    title = clean(title_node.text()) if title_node else ""
    if not title:
        heading = tree.css_first("h1")
        title = clean(heading.text()) if heading else ""
    for node in tree.css(_BOILERPLATE):
        node.decompose()
    root = tree.css_first("main, [role=main]") or tree.css_first("article") or tree.body
    text = clean(root.text(separator="\n")) if root else ""
    return Document(title=title or None, pages=(text,))


def load_docx(path: Path) -> Document:
    """The paragraphs and table cells of a Word document, with python-docx; the title is
    the document's Title property, else its first heading.

    Raises:
        MissingFormatLibraryError: python-docx is not installed.
        ValueError: The file is not a readable .docx.
    """
    try:
        import docx
        from docx.opc.exceptions import PackageNotFoundError
    except ImportError:
        raise _missing("Word (.docx)", "python-docx") from None
    try:
        document = docx.Document(str(path))
    except (PackageNotFoundError, KeyError, ValueError) as exc:
        raise ValueError(f"not a readable .docx file ({exc})") from None
    except Exception as exc:  # zipfile.BadZipFile and lxml errors of a damaged file
        raise ValueError(f"not a readable .docx file ({type(exc).__name__}: {exc})") from None
    lines = []
    heading = None
    for paragraph in document.paragraphs:
        style = paragraph.style.name if paragraph.style is not None else ""
        if heading is None and style.startswith("Heading") and paragraph.text.strip():
            heading = paragraph.text.strip()
        lines.append(paragraph.text)
    for table in document.tables:
        for row in table.rows:
            lines.append(" | ".join(cell.text for cell in row.cells))
    title = (document.core_properties.title or "").strip() or heading
    return Document(title=title, pages=(clean("\n\n".join(lines)),))


LOADERS: dict[str, Callable[[Path], Document]] = {
    ".pdf": load_pdf,
    ".html": load_html,
    ".htm": load_html,
    ".docx": load_docx,
}
SUFFIXES = frozenset(LOADERS)


def load_document(path: Path, max_text_bytes: int) -> Document:
    """Read a PDF, HTML or Word file with the loader for its suffix.

    Raises:
        MissingFormatLibraryError: The format's library is not installed.
        ValueError: The file is too large, unreadable, or holds no text; the message says why.
    """
    size = path.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        raise ValueError(f"too large ({size:,} bytes > {MAX_DOCUMENT_BYTES:,})")
    document = LOADERS[path.suffix.lower()](path)
    text_bytes = sum(len(p.encode("utf-8")) for p in document.pages)
    if text_bytes > max_text_bytes:
        raise ValueError(f"too much text ({text_bytes:,} bytes > {max_text_bytes:,})")
    if not any(p.strip() for p in document.pages):
        raise ValueError("empty (no text in the file)")
    return document
