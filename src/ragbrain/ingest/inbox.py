"""Write-back: a new note with front matter in a folder the user allowed, never overwriting."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
import tempfile
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from ragbrain._util import UNSAFE
from ragbrain.errors import InvalidInputError

log = logging.getLogger(__name__)

MAX_TITLE_CHARS = 200
MAX_NOTE_CHARS = 100_000
MAX_TAGS = 20
MAX_LABEL_CHARS = 50
MAX_SLUG_CHARS = 80
MAX_SUFFIX = 1000
_LABEL = re.compile(r"^[\w][\w .-]*$")
_NOT_SLUG = re.compile(r"[^\w]+")


def slug(title: str) -> str:
    """A file name stem from a title: letters, digits and single dashes, at most 80 chars;
    separators, dots and anything else become dashes, so it never names another folder."""
    text = unicodedata.normalize("NFKC", title).lower()
    stem = _NOT_SLUG.sub("-", text).strip("-_")[:MAX_SLUG_CHARS].strip("-_")
    return stem or "note"


def _check_label(what: str, value: str) -> str:
    value = value.strip()
    if not value or len(value) > MAX_LABEL_CHARS or not _LABEL.match(value):
        raise InvalidInputError(
            f"{what} must be 1-{MAX_LABEL_CHARS} letters, digits, spaces, '.', '-' or '_' "
            "(starting with a letter or digit)."
        )
    return value


def check_note(title: str, text: str, type_: str, tags: Sequence[str]) -> None:
    """Refuse what cannot become a note.

    Raises:
        InvalidInputError: An empty or too long title or text, control characters in the
            title or text (tab and newline are fine in the text), a bad type or tag.
    """
    if not title.strip():
        raise InvalidInputError("title is empty.")
    if len(title) > MAX_TITLE_CHARS:
        raise InvalidInputError(f"title is longer than {MAX_TITLE_CHARS} characters.")
    if UNSAFE.search(title) or "\n" in title or "\t" in title:
        raise InvalidInputError("title holds control characters or line breaks.")
    if not text.strip():
        raise InvalidInputError("text is empty.")
    if len(text) > MAX_NOTE_CHARS:
        raise InvalidInputError(
            f"text is {len(text):,} characters; a note written back holds at most "
            f"{MAX_NOTE_CHARS:,}."
        )
    if UNSAFE.search(text.replace("\r\n", "\n")):
        raise InvalidInputError("text holds control characters (only tab and newline are kept).")
    _check_label("type", type_)
    if len(tags) > MAX_TAGS:
        raise InvalidInputError(f"at most {MAX_TAGS} tags.")
    for tag in tags:
        _check_label("each tag", tag)


@dataclass(frozen=True)
class Inbox:
    """A folder notes may be written to, inside a root that is ingested as a whole."""

    folder: Path  # real path, no links
    root: Path  # the allowed root that holds it (real path)

    @classmethod
    def inside(cls, folder: str | Path, roots: Sequence[Path]) -> Inbox:
        """The inbox ``folder``, checked to lie (links followed) inside one of ``roots``; a
        folder that does not exist yet is created there (with its missing parents).

        Raises:
            InvalidInputError: Not a folder (a file is there), it cannot be created, or it
                lies outside every root.
        """
        real = Path(folder).expanduser().resolve()
        holding = [root for root in roots if real.is_relative_to(root)]
        if not holding:
            raise InvalidInputError(
                f"--inbox {folder} is outside every --allow folder (links are followed); "
                "give an inbox inside one, or --allow a folder that holds it."
            )
        if not real.exists():
            try:
                real.mkdir(parents=True)
            except OSError as exc:
                raise InvalidInputError(f"--inbox {folder}: cannot create it ({exc}).") from None
            log.info("Created the inbox folder %s.", real)
            real = real.resolve()  # a link made meanwhile is checked like any other
            holding = [root for root in roots if real.is_relative_to(root)]
        if not real.is_dir() or not holding:
            raise InvalidInputError(f"--inbox {folder}: not a folder inside an --allow one.")
        return cls(real, max(holding, key=lambda r: len(r.parts)))

    def write(
        self,
        title: str,
        text: str,
        type_: str,
        tags: Sequence[str] = (),
        *,
        today: dt.date | None = None,
    ) -> Path:
        """Write a new note ``<slug>.md`` (``<slug>-2.md`` ... if taken), atomically.

        The note holds front matter (title, type, tags, date), a ``# title`` heading (so a
        search for the title finds it) and ``text``.

        Raises:
            InvalidInputError: See ``check_note``; the inbox is no longer the folder checked
                at start-up (replaced by a link); no free name.
        """
        return self.put(title, text, type_, tags, today=today, again=False)[0]

    def put(
        self,
        title: str,
        text: str,
        type_: str,
        tags: Sequence[str] = (),
        *,
        today: dt.date | None = None,
        again: bool = True,
    ) -> tuple[Path, bool]:
        """The note ``title`` with ``text``: with ``again``, a note of the inbox with the same
        title and text if there is one (a retried call), else a new one (``write``).

        The look and the write are one step for every process (an exclusive lock on the
        inbox folder), so two calls with the same note never both write it.

        Returns:
            The note's path, and whether it was written now.

        Raises:
            InvalidInputError: As for ``write``.
        """
        check_note(title, text, type_, tags)
        if Path(self.folder).resolve() != self.folder:
            raise InvalidInputError("the inbox folder was replaced since start-up; refusing.")
        meta = {
            "title": title.strip(),
            "type": type_.strip(),
            "tags": [t.strip() for t in tags],
            "date": (today or dt.date.today()).isoformat(),
        }
        front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False)
        text = text.replace("\r\n", "\n").strip()
        body = f"# {meta['title']}\n\n{text}\n"
        with self._locked():
            if again and (same := self._same_note(slug(title), title.strip(), body)):
                return same, False
            return self._write_new(slug(title), f"---\n{front}---\n\n{body}"), True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold an exclusive lock on the inbox folder itself (no lock file among the notes)."""
        import fcntl

        fd = os.open(self.folder, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # lets go of the lock

    def _same_note(self, stem: str, title: str, body: str) -> Path | None:
        """The note named ``<stem>.md`` or ``<stem>-N.md`` whose title and text are these."""
        from ragbrain.ingest.files import split_front_matter

        name = re.compile(rf"^{re.escape(stem)}(?:-\d+)?\.md$")
        for path in sorted(self.folder.iterdir()):
            if not name.match(path.name) or not path.is_file():
                continue
            try:
                meta, rest = split_front_matter(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            if str(meta.get("title", "")).strip() == title and rest.strip() == body.strip():
                return path
        return None

    def _write_new(self, stem: str, content: str) -> Path:
        fd, tmp = tempfile.mkstemp(prefix=".remember-", suffix=".tmp", dir=self.folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
            for n in range(1, MAX_SUFFIX + 1):
                target = self.folder / (f"{stem}.md" if n == 1 else f"{stem}-{n}.md")
                try:
                    os.link(tmp, target)  # atomic, and fails if the name is taken
                except FileExistsError:
                    continue
                return target
            raise InvalidInputError(f"{MAX_SUFFIX} notes named {stem}.md already; pick a title.")
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
