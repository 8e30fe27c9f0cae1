"""What an index file (a README linking every note) does to retrieval, measured.

The bundled sample notes (59 notes) are copied into a folder twice: as they are, and with a
README.md at the top that lists every note as a Markdown link under its folder's heading (the
index a notes folder typically has). Both are ingested with the real model into stores of
their own; the 20 benchmark questions (``benchmarks.common.QUERIES``) are asked of both with
the full pipeline (hybrid search, the shipped critic; refusal off, so that every question
hands chunks over). The note each question is about is the first note the store without the
README hands over. Reported per side: how many questions hand over a README chunk, the
README's share of all chunks handed over, and how often the question's note is handed over
and first.

    python -m benchmarks.link_lists
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from benchmarks.common import QUERIES
from ragbrain.context import RetrievalContext
from ragbrain.ingest import ingest
from ragbrain.ingest.linklists import link_stats
from ragbrain.models.embeddings import default_embeddings
from ragbrain.paths import sample_notes
from ragbrain.retriever import CorrectiveRetriever
from ragbrain.store import Store


def readme(folder: Path) -> str:
    """An index of every note: a heading per folder, one link per note, titled."""
    lines = ["# Notes", "", "Everything we wrote down, by kind.", ""]
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        lines += [f"## {sub.name}", ""]
        for note in sorted(sub.glob("*.md")):
            title = next(
                (t[2:].strip() for t in note.read_text().splitlines() if t.startswith("# ")),
                note.stem,
            )
            lines.append(f"- [{title}]({sub.name}/{note.name})")
        lines.append("")
    return "\n".join(lines)


def run_side(folder: Path, store_dir: Path) -> list[list[str]]:
    """The sources handed over for each question, in order."""
    store = Store.open(store_dir, default_embeddings(), create=True)
    ingest(folder, store)
    retriever = CorrectiveRetriever.from_store(
        store_dir, embeddings=default_embeddings(), context=RetrievalContext(abstain="off")
    )
    return [[d.metadata["source"] for d in retriever.run(q)["documents"]] for q in QUERIES]


def main() -> None:
    """Build both folders and stores, ask every question of both, print the table."""
    work = Path(tempfile.mkdtemp(prefix="ragbrain-linklists-"))
    try:
        plain, indexed = work / "plain", work / "indexed"
        shutil.copytree(sample_notes(), plain)
        shutil.copytree(sample_notes(), indexed)
        index = readme(indexed)
        (indexed / "README.md").write_text(index)
        stats = link_stats(index)
        print(f"README.md: {stats.links} links on {stats.link_lines} of {stats.lines} lines")
        without = run_side(plain, work / "store-plain")
        with_readme = run_side(indexed, work / "store-indexed")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        "| side | questions handing over a README chunk | README share of chunks | "
        "the question's note handed over | ... first |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, side in (("without README", without), ("with README", with_readme)):
        target = [w[0] if w else None for w in without]
        hit = sum(t in got for t, got in zip(target, side, strict=True) if t)
        first = sum(bool(got) and got[0] == t for t, got in zip(target, side, strict=True))
        readme_q = sum("README.md" in got for got in side)
        share = sum(got.count("README.md") for got in side) / max(sum(map(len, side)), 1)
        n = len(QUERIES)
        print(f"| {name} | {readme_q}/{n} | {share:.1%} | {hit}/{n} | {first}/{n} |")
    for question, got in zip(QUERIES, with_readme, strict=True):
        if "README.md" in got:
            print(f"  {question!r}: README at rank {got.index('README.md') + 1} of {len(got)}")


if __name__ == "__main__":
    main()
