"""Which library reads PDF and HTML: speed and text quality, side by side on the same files.

PDFs are written with fpdf2 from the bundled sample notes (one note per page, one and two
text columns, DejaVu Sans so accents and ligature-prone words appear); HTML pages wrap the
same notes in the boilerplate a saved web page carries (navigation, cookie banner, scripts,
styles, sidebar, footer). Quality is word-level recall of the note's words and, for HTML,
the share of boilerplate words that leak into the text; for PDF, whether each page's text
comes back on its own page.

    python -m benchmarks.format_choice [--rounds 3]
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from benchmarks.common import save, say
from ragbrain.paths import sample_notes
from tests.support.format_files import write_html, write_pdf

WORD = re.compile(r"\w+")
BOILERPLATE = set(
    WORD.findall(
        "Home Blog archive About us We use cookies to improve your experience Accept all "
        "cookies Related posts Ten tips for productivity Subscribe to our newsletter Copyright "
        "2024 Example Corp All rights reserved Privacy policy Terms of service analytics beacon "
        "loaded widget tracker console log font family sans serif cookie color red".lower()
    )
)


def words(text: str) -> Counter[str]:
    return Counter(WORD.findall(text.lower()))


def recall(truth: str, got: str) -> float:
    want = words(truth)
    return sum((want & words(got)).values()) / max(sum(want.values()), 1)


def note_texts(limit: int) -> list[str]:
    """Plain paragraphs of the first ``limit`` sample notes (Markdown marks removed)."""
    texts = []
    for path in sorted(sample_notes().rglob("*.md"))[:limit]:
        body = path.read_text(encoding="utf-8").split("\n---\n", 1)[-1]
        body = re.sub(r"[#*`>|\[\]]", "", body)
        texts.append("\n\n".join(p.strip() for p in body.split("\n\n") if p.strip()))
    return texts


def pdf_readers() -> dict[str, Callable[[Path], list[str]]]:
    def with_pypdf(path: Path) -> list[str]:
        import pypdf

        return [page.extract_text() or "" for page in pypdf.PdfReader(path).pages]

    def with_pypdfium2(path: Path) -> list[str]:
        import pypdfium2

        document = pypdfium2.PdfDocument(path)
        try:
            return [page.get_textpage().get_text_bounded() for page in document]
        finally:
            document.close()

    def with_pdfminer(path: Path) -> list[str]:
        from pdfminer.high_level import extract_pages
        from pdfminer.layout import LTTextContainer

        return [
            "".join(el.get_text() for el in page if isinstance(el, LTTextContainer))
            for page in extract_pages(path)
        ]

    return {"pypdf": with_pypdf, "pypdfium2": with_pypdfium2, "pdfminer.six": with_pdfminer}


def html_readers() -> dict[str, Callable[[bytes], str]]:
    def with_selectolax(data: bytes) -> str:
        from selectolax.lexbor import LexborHTMLParser

        tree = LexborHTMLParser(data)
        for node in tree.css("script, style, noscript, template"):
            node.decompose()
        root = tree.css_first("main") or tree.css_first("article") or tree.body
        return root.text(separator="\n") if root else ""

    def with_bs4(data: bytes) -> str:
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(data, "lxml")
        for node in soup(["script", "style", "noscript", "template"]):
            node.decompose()
        root = soup.find("main") or soup.find("article") or soup.body
        return root.get_text("\n") if root else ""

    def with_trafilatura(data: bytes) -> str:
        import trafilatura

        return trafilatura.extract(data, include_comments=False, favor_recall=True) or ""

    def with_ragbrain(data: bytes) -> str:
        from ragbrain.ingest.formats import parse_html

        return parse_html(data).pages[0]

    return {
        "ragbrain (selectolax, boilerplate elements dropped)": with_ragbrain,
        "selectolax": with_selectolax,
        "beautifulsoup4+lxml": with_bs4,
        "trafilatura": with_trafilatura,
    }


def measure(function: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def html_rows(
    texts: list[str], pages: list[bytes], label: str, rounds: int
) -> list[dict[str, object]]:
    """One row per HTML library: speed, recall of the article, boilerplate share."""
    rows: list[dict[str, object]] = []
    for name, read in html_readers().items():
        got = [read(page) for page in pages]
        seconds = measure(lambda r=read: [r(p) for p in pages], rounds)
        leaks = [
            sum(c for w, c in words(g).items() if w in BOILERPLATE and w not in words(t))
            / max(sum(words(g).values()), 1)
            for t, g in zip(texts, got, strict=True)
        ]
        rows.append(
            {
                "format": label,
                "library": name,
                "ms_per_file": 1000 * seconds / len(texts),
                "recall": statistics.mean(recall(t, g) for t, g in zip(texts, got, strict=True)),
                "leak": statistics.mean(leaks),
            }
        )
        say(f"{label} {name}: {rows[-1]}")
    return rows


def main() -> None:
    """Run the comparison and write results/format_choice.json and .md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts = note_texts(40)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for columns in (1, 2):
            pdf = write_pdf(Path(tmp) / f"notes-{columns}.pdf", texts, columns=columns)
            for name, read in pdf_readers().items():
                pages = read(pdf)
                seconds = measure(lambda read=read, pdf=pdf: read(pdf), args.rounds)
                on_page = [recall(t, p) for t, p in zip(texts, pages, strict=True)]
                rows.append(
                    {
                        "format": f"PDF, {columns} column(s), {len(texts)} pages",
                        "library": name,
                        "ms_per_file": 1000 * seconds / len(texts),  # per page
                        "recall": statistics.mean(on_page),
                        "leak": 0.0,
                    }
                )
                say(f"pdf x{columns} {name}: {rows[-1]}")
        for semantic in (True, False):
            pages_html = [
                write_html(
                    Path(tmp) / f"page-{i}.html",
                    title=text.split("\n")[0][:60],
                    heading=text.split("\n")[0][:60],
                    body=text.split("\n\n"),
                    semantic=semantic,
                ).read_bytes()
                for i, text in enumerate(texts)
            ]
            kind = "semantic tags" if semantic else "div soup"
            rows += html_rows(texts, pages_html, f"HTML, {len(texts)} pages, {kind}", args.rounds)
    table = (
        "| files | library | ms per page (median of rounds) | word recall | boilerplate share |\n"
    )
    table += "|---|---|---|---|---|\n" + "".join(
        f"| {r['format']} | {r['library']} | {r['ms_per_file']:.2f} | {r['recall']:.3f} | "
        f"{r['leak']:.3f} |\n"
        for r in rows
    )
    save("format_choice", {"rounds": args.rounds, "rows": rows}, table)
    print(table)


if __name__ == "__main__":
    main()
