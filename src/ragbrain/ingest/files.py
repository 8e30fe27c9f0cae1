"""Finding note files under a path and reading them: front matter, type, and reasons to skip."""

from __future__ import annotations

import codecs
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ragbrain.errors import InvalidInputError
from ragbrain.ingest.formats import SUFFIXES as DOCUMENT_SUFFIXES
from ragbrain.ingest.formats import load_document
from ragbrain.ingest.ignore import IgnoreRules
from ragbrain.ingest.obsidian import aliases as note_aliases
from ragbrain.ingest.obsidian import inline_tags, resolve_links
from ragbrain.query.filters import to_timestamp

log = logging.getLogger(__name__)

MARKDOWN = frozenset({".md", ".markdown"})
SUFFIXES = MARKDOWN | {".txt"} | DOCUMENT_SUFFIXES
MAX_BYTES = 2_000_000
#: The type of a note directly in the ingested root, without ``--type`` or a front-matter one.
DEFAULT_TYPE = "note"


@dataclass(frozen=True)
class NoteFile:
    """One readable note: where it is, its type, and its body without front matter."""

    root: Path
    path: Path
    type: str
    title: str
    body: str
    tags: tuple[str, ...] = field(default=())
    aliases: tuple[str, ...] = field(default=())
    pages: tuple[str, ...] = field(default=())  # a PDF's page texts: chunks carry page numbers
    first_line: int = 1  # the file's line (1-based) where ``body`` begins
    #: Seconds since the epoch: the front matter's ``date:``, else the file's modification
    #: time when it was read (None: unknown).
    modified: int | None = None

    @property
    def source(self) -> str:
        """The path relative to the ingested root, with forward slashes."""
        return self.path.relative_to(self.root).as_posix()


@dataclass(frozen=True)
class Skipped:
    """A file that was not ingested, and why."""

    path: Path
    reason: str


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """Split YAML front matter (between ``---`` lines at the very top) from the body.

    Raises:
        ValueError: The front matter is not a YAML mapping.
    """
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    for end, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            try:
                meta = yaml.safe_load("\n".join(lines[1:end])) or {}
            except yaml.YAMLError as exc:
                raise ValueError(f"front matter is not valid YAML ({exc})") from exc
            if not isinstance(meta, dict):
                raise ValueError("front matter is not a YAML mapping")
            return meta, "\n".join(lines[end + 1 :])
    return {}, text


def _decode(path: Path, max_bytes: int) -> str:
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(f"too large ({size:,} bytes > {max_bytes:,})")
    text, encoding = decode_text(path.read_bytes())
    if encoding not in ("utf-8", "utf-8-sig"):
        log.info("Read %s as %s (it is not UTF-8).", path, encoding)
    return text


#: The share of a text's letters that may lie outside ASCII for a single-byte Western reading
#: of it to be believed: French, German, Spanish or Portuguese prose stays under a tenth,
#: while Cyrillic or Greek text read through cp1252 is nearly all accented letters.
WESTERN_SHARE = 0.3


def decode_text(data: bytes) -> tuple[str, str]:
    """A note file's bytes as text, and the encoding they were read in: a byte-order mark's
    (UTF-8, UTF-16), else UTF-8, else the encoding charset-normalizer detects (installed
    with ``ragbrain[formats]``), else Windows-1252 (or ISO-8859-1 for the five bytes
    cp1252 leaves undefined) when that reading is Western text (``WESTERN_SHARE``): the
    legacy encoding of most non-UTF-8 notes written in Western European languages.

    Raises:
        ValueError: The bytes hold NULs (binary), or fit none of these.
    """
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            try:
                return data.decode(name), name
            except UnicodeDecodeError as exc:
                raise ValueError(f"not {name} despite its byte-order mark ({exc.reason})") from exc
    if b"\x00" in data[:8192]:
        raise ValueError("binary file (NUL bytes)")
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        where = f"byte {data[exc.start]:#04x} at offset {exc.start}"
    try:
        from charset_normalizer import from_bytes
    except ImportError:
        pass
    else:
        best = from_bytes(data).best()
        if best is not None:
            return str(best), best.encoding
    for name in ("cp1252", "latin-1"):
        try:
            text = data.decode(name)
        except UnicodeDecodeError:
            continue
        letters = [c for c in text if c.isalpha()]
        if sum(not c.isascii() for c in letters) <= WESTERN_SHARE * len(letters):
            return text, name
        break
    raise ValueError(
        f"not UTF-8 ({where}) nor a Western single-byte encoding; with ragbrain[formats] "
        "installed, other encodings are detected (or save the file as UTF-8)"
    )


def _title(meta: dict[str, Any], body: str, path: Path) -> str:
    if isinstance(meta.get("title"), str) and meta["title"].strip():
        return str(meta["title"]).strip()
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def note_time(meta: dict[str, Any], path: Path) -> int | None:
    """The note's time in seconds since the epoch: its front matter's ``date:`` (an ISO date
    or date-time; without a zone, UTC), else the file's modification time."""
    date = meta.get("date")
    if date is not None and not isinstance(date, bool):
        try:
            return int(to_timestamp(date, "date"))
        except (InvalidInputError, OverflowError, OSError, ValueError):
            pass  # not a date: the file's own time stands
    try:
        return int(path.stat().st_mtime)
    except OSError:
        return None


def folder_type(root: Path, path: Path) -> str:
    """The type a note takes from where it lies: its folder's name, or ``DEFAULT_TYPE``
    directly in the root (the root's own name says nothing about the note)."""
    return DEFAULT_TYPE if path.parent == root or not path.parent.name else path.parent.name


def read_note(root: Path, path: Path, type_: str | None, max_bytes: int = MAX_BYTES) -> NoteFile:
    """Read one file. The type is ``type_``, else the front matter's, else the folder's name
    (``DEFAULT_TYPE`` for a file directly in the root).

    Raises:
        ValueError: The file is binary, not UTF-8, too large, empty or has bad front matter
            (PDF, HTML, Word: see ``formats.load_document``).
    """
    if path.suffix.lower() in DOCUMENT_SUFFIXES:
        return read_document(root, path, type_, max_bytes)
    text = _decode(path, max_bytes).replace("\r\n", "\n")
    meta, raw_body = split_front_matter(text)
    body = raw_body.strip()
    # Lines before the body: the front matter's, then blank lines the strip removed.
    skipped_lines = text.count("\n") - raw_body.count("\n")
    skipped_lines += raw_body[: len(raw_body) - len(raw_body.lstrip())].count("\n")
    if not body:
        raise ValueError("empty (no text after the front matter)")
    chosen = type_ or meta.get("type") or folder_type(root, path)
    tags = meta.get("tags")
    # No tags is none (not the tag "()"), a list is its items, anything else one tag.
    listed = tuple(str(t) for t in tags) if isinstance(tags, list) else (str(tags),)
    listed = () if not tags else listed
    if path.suffix.lower() in MARKDOWN:
        body = resolve_links(body)
        listed += tuple(t for t in inline_tags(body) if t not in listed)
    return NoteFile(
        root=root,
        path=path,
        type=str(chosen).strip(),
        title=_title(meta, body, path),
        body=body,
        tags=listed,
        aliases=note_aliases(meta),
        first_line=1 + skipped_lines,
        modified=note_time(meta, path),
    )


def read_document(root: Path, path: Path, type_: str | None, max_bytes: int) -> NoteFile:
    """Read a PDF, HTML or Word file; its title is the file's own, else the file name.

    Raises:
        ValueError: The file cannot be read (the reason says why, and how to install a
            missing library).
    """
    document = load_document(path, max_bytes)
    return NoteFile(
        root=root,
        path=path,
        type=(type_ or folder_type(root, path)).strip(),
        title=document.title or path.stem,
        body="\n\n".join(p for p in document.pages if p),
        pages=document.pages if document.paged else (),
        modified=note_time({}, path),
    )


@dataclass
class NoteScan:
    """What a walk over a path found: the notes read, the files skipped, the paths left out."""

    root: Path
    notes: list[NoteFile] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    #: Note files and folders the ignore rules left out (a folder is not entered).
    excluded: list[Path] = field(default_factory=list)


def _candidates(
    root: Path, rules: IgnoreRules, excluded: list[Path], real_root: Path | None = None
) -> Iterator[Path | Skipped]:
    """Files under ``root`` with a note suffix; hidden entries and what ``rules`` leave out
    (appended to ``excluded``) are left out; links are checked (they must stay inside
    ``real_root``, default ``root``)."""
    real_root = real_root or root.resolve()
    for folder, dirs, files in os.walk(root, followlinks=False):
        kept = []
        for name in sorted(d for d in dirs if not d.startswith(".")):
            if rules.skips_folder(Path(folder) / name):
                excluded.append(Path(folder) / name)
            else:
                kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            path = Path(folder) / name
            if name.startswith(".") or path.suffix.lower() not in SUFFIXES:
                continue
            if rules.skips_file(path):
                excluded.append(path)
                continue
            if path.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    yield Skipped(path, "broken or looping symbolic link")
                    continue
                if not target.is_relative_to(real_root):
                    yield Skipped(path, f"link to {target}, outside the ingested folder")
                    continue
            yield path


def list_candidates(
    root: Path,
    exclude: Sequence[str] = (),
    include: Sequence[str] = (),
    folder: Path | None = None,
) -> list[Path | Skipped]:
    """The note files under ``folder`` (default: the root) as ``scan_notes`` walks it (the
    root's ignore rules and the ``exclude`` and ``include`` patterns, relative to ``folder``,
    applied, without reading them), and the links it refuses; for the watcher, which rereads
    only what changed."""
    folder = folder or root
    rules = IgnoreRules(root, exclude=exclude, include=include, anchor=folder)
    return list(_candidates(folder, rules, [], real_root=root.resolve()))


def scan_notes(
    path: Path,
    type_: str | None = None,
    max_bytes: int = MAX_BYTES,
    *,
    root: Path | None = None,
    exclude: Sequence[str] = (),
    include: Sequence[str] = (),
) -> NoteScan:
    """Read every note under ``path`` (a folder, recursively, or one file) that the ignore
    rules keep (``.gitignore`` and ``.ragbrainignore`` files, ``exclude`` and ``include``
    patterns; see ``ragbrain.ingest.ignore``). A single file is checked against the rules of
    its own folder.

    Args:
        root: The folder sources are relative to (and whose ignore rules apply); default
            ``path`` itself, or a file's folder. ``exclude`` and ``include`` are relative to
            ``path`` (a file's folder).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: ``path`` is not inside ``root``.
        InvalidInputError: A pattern of ``exclude``, ``include`` or an ignore file is invalid.
    """
    path = path.expanduser().absolute()
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if root is None:
        root = path if path.is_dir() else path.parent
    else:
        root = root.expanduser().absolute()
        if not path.is_relative_to(root):
            raise ValueError(f"{path} is not inside {root}")
    anchor = path if path.is_dir() else path.parent
    rules = IgnoreRules(root, exclude=exclude, include=include, anchor=anchor)
    scan = NoteScan(root)
    found: list[Path | Skipped]
    if path.is_dir():
        found = list(_candidates(path, rules, scan.excluded, real_root=root.resolve()))
    elif rules.skips_file(path):
        found, scan.excluded = [], [path]
    else:
        found = [path]
    for item in found:
        if isinstance(item, Skipped):
            scan.skipped.append(item)
            continue
        try:
            scan.notes.append(read_note(root, item, type_, max_bytes))
        except (ValueError, OSError) as exc:
            scan.skipped.append(Skipped(item, str(exc)))
    return scan


def find_notes(
    path: Path, type_: str | None = None, max_bytes: int = MAX_BYTES, root: Path | None = None
) -> tuple[Path, list[NoteFile], list[Skipped]]:
    """Read every note under ``path`` (a folder, recursively, or one file), as ``scan_notes``
    with no extra patterns.

    Returns:
        The root the sources are relative to, the notes read, and the files skipped with
        their reasons.
    """
    scan = scan_notes(path, type_, max_bytes, root=root)
    return scan.root, scan.notes, scan.skipped
