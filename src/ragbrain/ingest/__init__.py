"""Ingestion: read notes (Markdown, text, PDF, HTML, Word), split them, keep the store in step."""

from ragbrain.ingest.files import NoteFile, Skipped, find_notes
from ragbrain.ingest.reembed import re_embed
from ragbrain.ingest.run import IngestInterrupted, IngestReport, ingest

__all__ = [
    "IngestInterrupted",
    "IngestReport",
    "NoteFile",
    "Skipped",
    "find_notes",
    "ingest",
    "re_embed",
]
