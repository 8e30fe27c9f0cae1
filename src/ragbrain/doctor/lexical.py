"""Doctor check of the lexical index: it holds exactly the store's chunks."""

from __future__ import annotations

from pathlib import Path

from ragbrain.doctor.finding import Finding
from ragbrain.errors import RagbrainError


def check_lexical(folder: Path | None, ids: set[str]) -> Finding:
    """The store folder's lexical index, if any, holds exactly the chunks ``ids``."""
    files = sorted(folder.glob("lexical*.npz")) if folder is not None else []
    if not files:
        return Finding("lexical index", True, "none (nothing to check)")
    try:
        from ragbrain.lexical.index import LexicalIndex

        index = LexicalIndex.load(files[0])
    except (ImportError, RagbrainError, OSError, ValueError) as exc:
        return Finding(
            "lexical index",
            False,
            f"{files[0].name} cannot be read ({exc})",
            "run `ragbrain ingest NOTES_DIR` again to rebuild it",
        )
    missing = [i for i in ids if i not in index]
    if len(index) == len(ids) and not missing:
        return Finding("lexical index", True, f"{files[0].name} holds the same {len(ids)} chunks")
    return Finding(
        "lexical index",
        False,
        f"{files[0].name} holds {len(index)} chunks, the store {len(ids)} ({len(missing)} "
        "missing from it)",
        "run `ragbrain ingest NOTES_DIR` again to bring it in step",
    )
