"""Ingestion throughput vs the raw encoder, side by side on the very same chunks.

The raw side is sentence-transformers ``encode`` over the chunk texts ragbrain produces, with
the batch size ragbrain's embeddings use; the ingest side is ``ragbrain.ingest`` into a fresh
store (reading, splitting, embedding, writing to Chroma). Rounds alternate the two; the best
round of each counts (the least disturbed by other jobs). One subcommand per kind of file:

- ``notes``: copies of the bundled sample notes (each copy in its own folder, so every chunk
  is new). Results: ``results/ingest.*``.
- ``pdf``: PDFs written with fpdf2 from the bundled sample notes (each note one page, text
  layer in DejaVu Sans, ``--pages`` pages per file, each file under its own name so every
  chunk is new); ingest extracts their text with pypdfium2, and the extraction alone is timed
  too. Results: ``results/pdf_speed.*``.

    python -m benchmarks.speed ingest notes [--copies 8] [--rounds 2]
    python -m benchmarks.speed ingest pdf [--files 12] [--pages 10] [--rounds 2]
"""

from __future__ import annotations

import argparse
import functools
import re
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common import save, say, timed
from ragbrain import Store
from ragbrain.ingest import ingest
from ragbrain.ingest.chunks import chunk_note
from ragbrain.ingest.files import find_notes
from ragbrain.models.embeddings import default_embeddings, minilm_path
from ragbrain.paths import sample_notes

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings


def make_notes(folder: Path, copies: int) -> Path:
    """``copies`` copies of the sample notes under ``folder``."""
    for index in range(copies):
        shutil.copytree(sample_notes(), folder / f"copy-{index}")
    return folder


def note_texts(limit: int) -> list[str]:
    """Plain paragraphs of the first ``limit`` sample notes (Markdown marks removed)."""
    texts = []
    for path in sorted(sample_notes().rglob("*.md"))[:limit]:
        body = path.read_text(encoding="utf-8").split("\n---\n", 1)[-1]
        body = re.sub(r"[#*`>|\[\]]", "", body)
        texts.append("\n\n".join(p.strip() for p in body.split("\n\n") if p.strip()))
    return texts


def make_pdfs(folder: Path, files: int, pages: int) -> Path:
    """``files`` PDFs of ``pages`` pages each, cycling through the sample notes."""
    from tests.support.format_files import write_pdf

    texts = note_texts(55)
    for index in range(files):
        chosen = [texts[(index * pages + p) % len(texts)] for p in range(pages)]
        write_pdf(folder / f"paper-{index}.pdf", chosen, title=f"Paper {index}")
    return folder


def chunk_texts(folder: Path) -> list[str]:
    """The chunk texts ragbrain makes of ``folder`` (what both sides encode)."""
    _, notes, _ = find_notes(folder, None, 1 << 20)
    return [chunk.text for note in notes for chunk in chunk_note(note)]


def sides() -> tuple[Embeddings, Any, int]:
    """ragbrain's embeddings, the raw sentence-transformers encoder, and the batch size
    ragbrain's embeddings use."""
    from sentence_transformers import SentenceTransformer

    embeddings = default_embeddings()
    batch = int(getattr(embeddings, "encode_kwargs", {}).get("batch_size", 32))
    return embeddings, SentenceTransformer(str(minilm_path()), device="cpu"), batch


def rounds_of(
    embeddings: Embeddings,
    encoder: Any,
    batch: int,
    source: Path,
    texts: list[str],
    rounds: int,
    work: Path,
) -> tuple[list[float], list[float]]:
    """Seconds of the raw encoder and of ``ragbrain.ingest`` of ``source``, round by round."""
    raw: list[float] = []
    ragbrain: list[float] = []
    for round_ in range(rounds):
        raw.append(
            timed(lambda: encoder.encode(texts, batch_size=batch, normalize_embeddings=True))
        )
        store = Store.open(work / f"store-{round_}", embeddings, create=True)
        ragbrain.append(timed(functools.partial(ingest, source, store)))
        assert store.count() == len(texts)
        say(f"round {round_}: raw {raw[-1]:.1f} s, ingest {ragbrain[-1]:.1f} s")
    return raw, ragbrain


def notes(args: argparse.Namespace) -> None:
    """Ingest copies of the sample notes; write results/ingest.json and .md."""
    embeddings, encoder, batch = sides()
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_notes(Path(tmp) / "notes", args.copies)
        texts = chunk_texts(folder)
        say(f"{len(texts)} chunks, batch size {batch}")
        encoder.encode(texts[:64], batch_size=batch)  # warm-up
        raw, ragbrain = rounds_of(embeddings, encoder, batch, folder, texts, args.rounds, Path(tmp))
    raw_rate = len(texts) / min(raw)
    ingest_rate = len(texts) / min(ragbrain)
    payload = {
        "chunks": len(texts),
        "batch_size": batch,
        "raw_seconds": raw,
        "ingest_seconds": ragbrain,
        "raw_chunks_per_s": raw_rate,
        "ingest_chunks_per_s": ingest_rate,
        "ratio": ingest_rate / raw_rate,
    }
    table = (
        "| chunks | raw encoder (chunks/s) | ragbrain ingest (chunks/s) | ingest / raw |\n"
        "|---|---|---|---|\n"
        f"| {len(texts)} | {raw_rate:.1f} | {ingest_rate:.1f} | {ingest_rate / raw_rate:.0%} |\n"
        "\nBest of the rounds on each side (the least disturbed by other jobs).\n"
    )
    print(table)
    save("ingest", payload, table)


def pdf(args: argparse.Namespace) -> None:
    """Ingest generated PDFs; write results/pdf_speed.json and .md."""
    from ragbrain.ingest.formats import load_pdf

    embeddings, encoder, batch = sides()
    with tempfile.TemporaryDirectory() as tmp:
        pdfs = make_pdfs(Path(tmp) / "pdfs", args.files, args.pages)
        texts = chunk_texts(pdfs)
        say(f"{args.files} PDFs x {args.pages} pages: {len(texts)} chunks, batch size {batch}")
        encoder.encode(texts[:64], batch_size=batch)  # warm-up
        files = sorted(pdfs.glob("*.pdf"))
        # Text extraction alone, the part PDFs add to ingestion (robust to a busy machine:
        # compare it with the encoder's time rather than the two noisy totals only).
        extract = min(timed(lambda: [load_pdf(f) for f in files]) for _ in range(3))
        raw, ragbrain = rounds_of(embeddings, encoder, batch, pdfs, texts, args.rounds, Path(tmp))
    raw_rate = len(texts) / min(raw)
    ingest_rate = len(texts) / min(ragbrain)
    payload = {
        "files": args.files,
        "pages": args.files * args.pages,
        "chunks": len(texts),
        "batch_size": batch,
        "raw_seconds": raw,
        "ingest_seconds": ragbrain,
        "raw_chunks_per_s": raw_rate,
        "ingest_chunks_per_s": ingest_rate,
        "ratio": ingest_rate / raw_rate,
        "extract_seconds": extract,
        "extract_share_of_encoder": extract / min(raw),
        "target_ratio": 0.85,
    }
    table = (
        "| PDFs | pages | chunks | raw encoder (chunks/s) | ragbrain ingest (chunks/s) "
        "| ingest / raw (target >= 85%) | text extraction alone |\n|---|---|---|---|---|---|---|\n"
        f"| {args.files} | {args.files * args.pages} | {len(texts)} | {raw_rate:.1f} "
        f"| {ingest_rate:.1f} | {ingest_rate / raw_rate:.0%} "
        f"| {extract:.2f} s ({extract / min(raw):.1%} of the encoder's time) |\n"
        "\nBest of the rounds on each side (the least disturbed by other jobs); the real "
        "all-MiniLM-L6-v2 on CPU.\n"
    )
    print(table)
    save("pdf_speed", payload, table)


def main() -> None:
    """Parse the subcommand and run its measurement."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("notes", help="Markdown notes: copies of the sample notes")
    one.add_argument("--copies", type=int, default=8)
    one.add_argument("--rounds", type=int, default=2)
    one.set_defaults(run=notes)
    two = commands.add_parser("pdf", help="text-layer PDFs written from the sample notes")
    two.add_argument("--files", type=int, default=12)
    two.add_argument("--pages", type=int, default=10)
    two.add_argument("--rounds", type=int, default=2)
    two.set_defaults(run=pdf)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
