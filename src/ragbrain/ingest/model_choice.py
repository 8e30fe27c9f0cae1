"""The embedding model of a new store when none is chosen: by the languages of its notes.

multilingual-e5-small reads Japanese, Thai, Chinese and Arabic where all-MiniLM-L6-v2 reads
noise (dense nDCG@10 0.93 against 0.03 on iApp Thai), and is within noise of it on English
(docs/decisions/e5-small-for-non-english-notes.md); MiniLM embeds several times faster. So a
new store of English notes gets MiniLM, and one where at least ``FOREIGN_SHARE`` of the notes
are mainly in another language gets e5-small. An existing store always keeps its model.
"""

from __future__ import annotations

from pathlib import Path

from ragbrain.ingest.files import find_notes
from ragbrain.lexical.tokens import detect_language
from ragbrain.models.embeddings import DEFAULT_EMBEDDING_MODEL, E5_SMALL

#: Share of notes not mainly in English (or without letters) from which e5-small is chosen.
FOREIGN_SHARE = 0.05
_SAMPLE = 2000  # notes read; characters per note
_CHARS = 2000


def model_for_notes(path: Path) -> tuple[str, str]:
    """The model name for a new store of the notes under ``path``, and why.

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    _, notes, _ = find_notes(path)
    languages = [detect_language(f"{n.title}\n{n.body[:_CHARS]}") for n in notes[:_SAMPLE]]
    foreign = [lang for lang in languages if lang not in ("en", "none")]
    if languages and len(foreign) / len(languages) >= FOREIGN_SHARE:
        shown = ", ".join(sorted({*foreign}))
        return E5_SMALL, (
            f"{len(foreign)} of {len(languages)} notes are mainly in {shown}: "
            "multilingual-e5-small (--embedding e5-small)"
        )
    return DEFAULT_EMBEDDING_MODEL, "the notes are English: all-MiniLM-L6-v2 (--embedding minilm)"
