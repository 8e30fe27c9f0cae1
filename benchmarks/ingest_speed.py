"""Ingestion throughput vs the raw encoder, side by side on the very same chunks.

The notes are copies of the bundled sample notes (each copy in its own folder, so every chunk is
new). The raw side is sentence-transformers ``encode`` over the chunk texts ragbrain produces,
with the batch size ragbrain's embeddings use; the ingest side is ``ragbrain.ingest`` into a
fresh store (reading, splitting, embedding, writing to Chroma). Rounds alternate the two.

    python -m benchmarks.ingest_speed [--copies 8] [--rounds 2]
"""

from __future__ import annotations

import argparse
import functools
import shutil
import tempfile
from pathlib import Path

from benchmarks.common import save, say, timed
from ragbrain.ingest import ingest
from ragbrain.ingest.chunks import chunk_note
from ragbrain.ingest.files import find_notes
from ragbrain.models.embeddings import default_embeddings, minilm_path
from ragbrain.paths import sample_notes
from ragbrain.store import Store


def make_notes(folder: Path, copies: int) -> Path:
    """``copies`` copies of the sample notes under ``folder``."""
    for index in range(copies):
        shutil.copytree(sample_notes(), folder / f"copy-{index}")
    return folder


def chunk_texts(folder: Path) -> list[str]:
    """The chunk texts ragbrain makes of ``folder`` (what both sides encode)."""
    _, notes, _ = find_notes(folder, None, 1 << 20)
    return [chunk.text for note in notes for chunk in chunk_note(note)]


def main() -> None:
    """Run the benchmark and write results/ingest.json and .md."""
    from sentence_transformers import SentenceTransformer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    embeddings = default_embeddings()
    batch = int(getattr(embeddings, "encode_kwargs", {}).get("batch_size", 32))
    encoder = SentenceTransformer(str(minilm_path()), device="cpu")
    with tempfile.TemporaryDirectory() as tmp:
        notes = make_notes(Path(tmp) / "notes", args.copies)
        texts = chunk_texts(notes)
        say(f"{len(texts)} chunks, batch size {batch}")
        encoder.encode(texts[:64], batch_size=batch)  # warm-up
        raw: list[float] = []
        ragbrain: list[float] = []
        for round_ in range(args.rounds):
            raw.append(
                timed(lambda: encoder.encode(texts, batch_size=batch, normalize_embeddings=True))
            )
            store = Store.open(Path(tmp) / f"store-{round_}", embeddings, create=True)
            ragbrain.append(timed(functools.partial(ingest, notes, store)))
            assert store.count() == len(texts)
            say(f"round {round_}: raw {raw[-1]:.1f} s, ingest {ragbrain[-1]:.1f} s")
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


if __name__ == "__main__":
    main()
