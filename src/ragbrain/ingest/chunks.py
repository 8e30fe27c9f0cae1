"""Splitting notes into chunks with deterministic, content- and source-based ids."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from ragbrain.ingest.spans import line_spans
from ragbrain.models.embeddings import default_model_path, set_offline
from ragbrain.query.filters import MODIFIED_KEY

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_text_splitters import TextSplitter

    from ragbrain.ingest.files import NoteFile

CHUNK_TOKENS = 200
OVERLAP_TOKENS = 30


@dataclass(frozen=True)
class Chunk:
    """A piece of a note as it is stored: id, text and metadata."""

    id: str
    text: str
    metadata: dict[str, Any]


def chunk_id(text: str, metadata: dict[str, Any]) -> str:
    """Same text and metadata (file, place, type, title, tags) -> same id; any change, also
    to the front matter alone, gives a new one, so a re-ingest rewrites the chunk.

    The note's time (``modified``) is left out: an edit moves the whole file's time, and a
    chunk whose text did not change keeps its id and vector (ingest rewrites its time in
    place), as does every chunk of a store ingested before times were recorded.
    """
    kept = {key: value for key, value in metadata.items() if key != MODIFIED_KEY}
    key = json.dumps(kept, sort_keys=True, ensure_ascii=False) + "\x00" + text
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


@cache
def token_counter() -> Callable[[str], int]:
    """The number of the default model's tokens in a text (no special tokens), as the
    transformers tokenizer's ``tokenize`` counts them, read by the ``tokenizers`` engine it
    wraps: no "sequence length is longer than the specified maximum" warning (a note is
    counted whole on purpose, to be split), and no transformers import on the way."""
    from tokenizers import Tokenizer

    engine = Tokenizer.from_file(str(default_model_path() / "tokenizer.json"))
    engine.no_truncation()
    engine.no_padding()

    def count(text: str) -> int:
        return len(engine.encode(text, add_special_tokens=False).ids)

    return count


@cache
def splitter(chunk_tokens: int = CHUNK_TOKENS, overlap: int = OVERLAP_TOKENS) -> TextSplitter:
    """A Markdown-aware splitter that measures length in the default model's tokens, not
    characters, so a Japanese or Thai chunk fits the embedding model's window as well as an
    English one."""
    set_offline()
    return _markdown_splitter(token_counter(), chunk_tokens, overlap)


def _markdown_splitter(
    count: Callable[[str], int], chunk_tokens: int, overlap: int
) -> TextSplitter:
    from langchain_text_splitters import Language, RecursiveCharacterTextSplitter

    return RecursiveCharacterTextSplitter(
        length_function=count,
        chunk_size=chunk_tokens,
        chunk_overlap=overlap,
        separators=RecursiveCharacterTextSplitter.get_separators_for_language(Language.MARKDOWN),
    )


#: One splitter per tokenizer engine of a loaded model (kept alive with it: ids stay unique).
_OWN_SPLITTERS: dict[int, tuple[object, TextSplitter]] = {}


def splitter_for(embeddings: Embeddings | None) -> TextSplitter:
    """The splitter of a store's chunks: ``CHUNK_TOKENS`` counted in its model's own tokens.

    The default model's WordPiece is far from a multilingual SentencePiece outside English
    (docs/decisions/chunk-tokens-per-model.md), so a store whose model's profile says
    ``own_tokenizer_chunks`` counts with that model's tokenizer, taken from the loaded model
    (no second copy). Every other model, and a stand-in without a tokenizer (tests' fakes),
    counts the default model's tokens.
    """
    from ragbrain.settings import resolve_model

    if embeddings is None:
        return splitter()
    found = resolve_model(embeddings).profile
    if found is None or not found.own_tokenizer_chunks:
        return splitter()
    engine = tokenizer_engine(embeddings)
    if engine is None:
        return splitter()
    kept = _OWN_SPLITTERS.get(id(engine))
    if kept is None:
        kept = (engine, _markdown_splitter(engine_counter(engine), CHUNK_TOKENS, OVERLAP_TOKENS))
        _OWN_SPLITTERS[id(engine)] = kept
    return kept[1]


def tokenizer_engine(embeddings: Embeddings) -> Any:
    """The ``tokenizers.Tokenizer`` a loaded model encodes with (the ``tokenizer`` of
    ``SentenceEmbeddings`` and of the ONNX backend, or sentence-transformers'), or None."""
    from tokenizers import Tokenizer

    client = getattr(embeddings, "_client", None)
    candidates = [
        getattr(getattr(client, "tokenizer", None), "backend_tokenizer", None),
        getattr(embeddings, "tokenizer", None),
    ]
    return next((c for c in candidates if isinstance(c, Tokenizer)), None)


def engine_counter(engine: Any) -> Callable[[str], int]:
    """Token counts (no special tokens, no truncation) from a tokenizer that shares
    ``engine``'s vocabulary and normalization but not its truncation and padding settings,
    which the model's own calls change."""
    from tokenizers import Tokenizer

    counter = Tokenizer(engine.model)  # the same model object: no copy of the vocabulary
    counter.normalizer = engine.normalizer
    counter.pre_tokenizer = engine.pre_tokenizer

    def count(text: str) -> int:
        return len(counter.encode(text, add_special_tokens=False).ids)

    return count


def chunk_note(note: NoteFile, text_splitter: TextSplitter | None = None) -> list[Chunk]:
    """Split a note; each chunk carries source, root, type, chunk index, title, tags, its
    note's time (``modified``: seconds since the epoch, see ``read_note``), and
    where it lies in the file: ``start_line``/``end_line`` (1-based, inclusive) and
    ``start_index`` (its offset in the body, after the front matter); a PDF's chunks carry
    their ``page`` instead (``chunk_pages``)."""
    if note.pages:
        return chunk_pages(note, text_splitter or splitter())
    pieces = [p for p in (text_splitter or splitter()).split_text(note.body) if p.strip()]
    spans = line_spans(note.body, pieces, note.first_line)
    root = str(note.root)
    chunks = []
    for index, (text, span) in enumerate(zip(pieces, spans, strict=True)):
        metadata: dict[str, Any] = {
            "source": note.source,
            "root": root,
            "type": note.type,
            "chunk": index,
            "title": note.title,
            "tags": ", ".join(note.tags),
            "start_line": span.start_line,
            "end_line": span.end_line,
            "start_index": span.start_index,
            **_time(note),
        }
        chunks.append(Chunk(id=chunk_id(text, metadata), text=text, metadata=metadata))
    return with_aliases(note, chunks)


def chunk_pages(note: NoteFile, text_splitter: TextSplitter) -> list[Chunk]:
    """Split a PDF page by page: each chunk carries its 1-based ``page``, so a citation
    reads ``paper.pdf#p12``; chunk numbers run on across pages."""
    root = str(note.root)
    chunks: list[Chunk] = []
    for page, page_text in enumerate(note.pages, start=1):
        for text in (p for p in text_splitter.split_text(page_text) if p.strip()):
            metadata: dict[str, Any] = {
                "source": note.source,
                "root": root,
                "type": note.type,
                "chunk": len(chunks),
                "title": note.title,
                "tags": ", ".join(note.tags),
                "page": page,
                **_time(note),
            }
            chunks.append(Chunk(id=chunk_id(text, metadata), text=text, metadata=metadata))
    return chunks


def _time(note: NoteFile) -> dict[str, Any]:
    """The note's time as chunk metadata (none when unknown: Chroma refuses None)."""
    return {} if note.modified is None else {MODIFIED_KEY: note.modified}


def with_aliases(note: NoteFile, chunks: list[Chunk]) -> list[Chunk]:
    """Add the note's front-matter ``aliases`` to each chunk's metadata (and id); a note
    without aliases keeps its chunks, and their ids, as they are."""
    if not note.aliases:
        return chunks
    out = []
    for chunk in chunks:
        metadata = {**chunk.metadata, "aliases": ", ".join(note.aliases)}
        out.append(Chunk(id=chunk_id(chunk.text, metadata), text=chunk.text, metadata=metadata))
    return out
