"""Ingestion: read Markdown and text files, split them, and keep the store in step with them."""

from ragbrain.ingest.files import NoteFile, Skipped, find_notes
from ragbrain.ingest.run import IngestReport, ingest

__all__ = ["IngestReport", "NoteFile", "Skipped", "find_notes", "ingest"]
