"""PDF ingestion throughput vs the raw encoder, side by side on the very same chunks.

The PDFs are written with fpdf2 from the bundled sample notes (each note one page, text
layer in DejaVu Sans, ``--pages`` pages per file, each file under its own name so every
chunk is new). The raw side is sentence-transformers ``encode`` over the chunk texts
ragbrain makes of those PDFs, with ragbrain's batch size; the ingest side is
``ragbrain.ingest`` into a fresh store (PDF text extraction with pypdfium2, splitting,
embedding, writing to Chroma). Rounds alternate the two; the best round of each counts.

    python -m benchmarks.pdf_speed [--files 12] [--pages 10] [--rounds 2]
"""

from __future__ import annotations

import argparse
import functools
import tempfile
from pathlib import Path

from benchmarks.common import save, say, timed
from benchmarks.format_choice import note_texts
from benchmarks.ingest_speed import chunk_texts
from ragbrain.ingest import ingest
from ragbrain.ingest.formats import load_pdf
from ragbrain.models.embeddings import default_embeddings, minilm_path
from ragbrain.store import Store
from tests.support.format_files import write_pdf


def make_pdfs(folder: Path, files: int, pages: int) -> Path:
    """``files`` PDFs of ``pages`` pages each, cycling through the sample notes."""
    texts = note_texts(55)
    for index in range(files):
        chosen = [texts[(index * pages + p) % len(texts)] for p in range(pages)]
        write_pdf(folder / f"paper-{index}.pdf", chosen, title=f"Paper {index}")
    return folder


def main() -> None:
    """Run the benchmark and write results/pdf_speed.json and .md."""
    from sentence_transformers import SentenceTransformer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--pages", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    embeddings = default_embeddings()
    batch = int(getattr(embeddings, "encode_kwargs", {}).get("batch_size", 32))
    encoder = SentenceTransformer(str(minilm_path()), device="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        pdfs = make_pdfs(Path(tmp) / "pdfs", args.files, args.pages)
        texts = chunk_texts(pdfs)
        say(f"{args.files} PDFs x {args.pages} pages: {len(texts)} chunks, batch size {batch}")
        encoder.encode(texts[:64], batch_size=batch)  # warm-up
        files = sorted(pdfs.glob("*.pdf"))
        # Text extraction alone, the part PDFs add to ingestion (robust to a busy machine:
        # compare it with the encoder's time rather than the two noisy totals only).
        extract = min(timed(lambda: [load_pdf(f) for f in files]) for _ in range(3))
        raw: list[float] = []
        ragbrain: list[float] = []
        for round_ in range(args.rounds):
            raw.append(
                timed(lambda: encoder.encode(texts, batch_size=batch, normalize_embeddings=True))
            )
            store = Store.open(Path(tmp) / f"store-{round_}", embeddings, create=True)
            ragbrain.append(timed(functools.partial(ingest, pdfs, store)))
            assert store.count() == len(texts)
            say(f"round {round_}: raw {raw[-1]:.1f} s, ingest {ragbrain[-1]:.1f} s")
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


if __name__ == "__main__":
    main()
