"""Small PDF, HTML and .docx files made on the spot (fpdf2, python-docx), for the format tests
and the library measurement; the font is the DejaVu Sans that matplotlib ships."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path


def font_path() -> Path:
    """A Unicode TrueType font that is always installed (matplotlib depends on it)."""
    import matplotlib

    return Path(matplotlib.__file__).parent / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf"


def write_pdf(
    path: Path,
    pages: Sequence[str],
    *,
    password: str | None = None,
    columns: int = 1,
    title: str | None = None,
) -> Path:
    """A PDF with one page per text (empty text: a page with only a drawn box, no text layer).

    Args:
        path: Where to write it.
        pages: Each page's text; paragraphs are separated by blank lines.
        password: Encrypt with this user password.
        columns: Lay each page's paragraphs out in this many text columns.
        title: The document's Title metadata.
    """
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_font("DejaVu", "", str(font_path()))
    pdf.set_font("DejaVu", size=11)
    if title:
        pdf.set_title(title)
    if password is not None:
        pdf.set_encryption(owner_password=password + "-owner", user_password=password)
    for text in pages:
        pdf.add_page()
        if not text:
            pdf.rect(20, 20, 120, 160, style="F")  # what a scan looks like: ink, no text
            continue
        if columns == 1:
            pdf.multi_cell(0, 6, text)
            continue
        width = (pdf.w - pdf.l_margin - pdf.r_margin) / columns
        paragraphs = text.split("\n\n")
        share = -(-len(paragraphs) // columns)
        for column in range(columns):
            pdf.set_xy(pdf.l_margin + column * width, pdf.t_margin)
            block = "\n\n".join(paragraphs[column * share : (column + 1) * share])
            pdf.multi_cell(width - 4, 6, block)
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def write_html(
    path: Path,
    *,
    title: str,
    heading: str | None,
    body: Sequence[str],
    encoding: str = "utf-8",
    declare: bool = True,
    boilerplate: bool = True,
    semantic: bool = True,
) -> Path:
    """A web page as a browser saves it: head, scripts, styles, navigation, article, footer.

    Args:
        path: Where to write it.
        title: The ``<title>`` (empty: none).
        heading: The article's ``<h1>`` (None: none).
        body: The article's paragraphs.
        encoding: The bytes' encoding.
        declare: Declare the encoding in a ``<meta charset>``.
        boilerplate: Add navigation, a cookie banner, a sidebar and a footer around the article.
        semantic: Use ``<nav>``, ``<main>``, ``<article>``, ``<aside>`` and ``<footer>``;
            else only ``<div>`` elements, as many older sites do.
    """
    meta = f'<meta charset="{encoding}">' if declare else ""
    head = f"<title>{title}</title>" if title else ""
    nav = (
        '<nav><a href="/">Home</a> <a href="/blog">Blog archive</a> <a href="/about">About '
        "us</a></nav><div class='cookie'>We use cookies to improve your experience. Accept "
        "all cookies</div>"
        if boilerplate
        else ""
    )
    side = (
        "<aside><h3>Related posts</h3><ul><li>Ten tips for productivity</li><li>Subscribe to "
        "our newsletter</li></ul></aside><footer>Copyright 2024 Example Corp. All rights "
        "reserved. Privacy policy. Terms of service.</footer>"
        if boilerplate
        else ""
    )
    article = (f"<h1>{heading}</h1>" if heading is not None else "") + "".join(
        f"<p>{p}</p>" for p in body
    )
    html = (
        f"<!DOCTYPE html><html><head>{meta}{head}"
        "<style>body { font-family: sans-serif } .cookie { color: red }</style>"
        "<script>window.tracker = function () { return 'analytics beacon'; };</script>"
        f"</head><body>{nav}<main><article>{article}</article></main>"
        f"<script>console.log('loaded widget')</script>{side}</body></html>"
    )
    if not semantic:
        html = re.sub(r"<(/?)(nav|main|article|aside|footer)>", r"<\1div>", html)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(html.encode(encoding))
    return path


def write_docx(path: Path, *, heading: str, paragraphs: Sequence[str]) -> Path:
    """A Word document with a level-1 heading and paragraphs."""
    import docx

    document = docx.Document()
    document.add_heading(heading, level=1)
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    path.parent.mkdir(parents=True, exist_ok=True)
    document.save(str(path))
    return path
