"""Which files to leave out: ``.gitignore`` and ``.ragbrainignore`` files, --exclude, --include.

Ignore files use gitignore syntax (matched by ``pathspec``) and apply to the folder they sit
in and everything below it, as git reads them: a pattern without a slash matches at any depth,
one with a slash is anchored to the file's folder, ``!pattern`` takes a file back, and the
last matching line wins, the deepest file's lines coming last. In one folder ``.gitignore`` is
read before ``.ragbrainignore``, so the latter can take back what git ignores. A left-out
folder is not entered, so nothing below it can be taken back (git's rule too).

``--exclude GLOB`` patterns act as lines of a ``.ragbrainignore`` at the ingested root, read
after every ignore file, so they win over all of them. ``--include GLOB`` patterns narrow the
run to matching files; a file must also not be left out by the rules above.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from ragbrain.errors import InvalidInputError

log = logging.getLogger(__name__)

#: Ignore files read in every folder, in this order.
IGNORE_FILES = (".gitignore", ".ragbrainignore")


def _spec(lines: Sequence[str], where: str) -> pathspec.GitIgnoreSpec:
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, TypeError) as exc:  # pathspec raises GitWildMatchPatternError(ValueError)
        raise InvalidInputError(f"{where}: not a valid gitignore pattern ({exc}).") from None


def _file_spec(lines: list[str], path: Path) -> pathspec.GitIgnoreSpec:
    """An ignore file's rules; a line pathspec cannot read is left out with a warning (git
    too reads the rest of a file with a bad line)."""
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:
        good = []
        for number, line in enumerate(lines, start=1):
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except ValueError:
                log.warning(
                    "%s line %d: %r is not a gitignore pattern; ignored", path, number, line
                )
                continue
            good.append(line)
        return pathspec.GitIgnoreSpec.from_lines(good)


@dataclass
class IgnoreRules:
    """The ignore rules of one ingested root, reading each folder's ignore files once.

    Args:
        root: The ingested folder; paths are checked relative to it.
        exclude: Extra gitignore patterns (``--exclude``), as if in a root ignore file read last.
        include: Gitignore patterns; when any is given, only files matching one are taken.
        read_files: Read ``.gitignore`` and ``.ragbrainignore`` files (False: only the options).
        anchor: The folder ``exclude`` and ``include`` are relative to: the folder that was
            ingested, inside ``root`` (default: ``root``); they do not apply outside it.
    """

    root: Path
    exclude: Sequence[str] = ()
    include: Sequence[str] = ()
    read_files: bool = True
    anchor: Path | None = None
    _specs: dict[Path, list[pathspec.GitIgnoreSpec]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.root = self.root.absolute()
        self.anchor = (self.anchor or self.root).absolute()
        self._exclude = _spec(list(self.exclude), f"--exclude {list(self.exclude)}")
        self._include = _spec(list(self.include), f"--include {list(self.include)}")

    def _folder_specs(self, folder: Path) -> list[pathspec.GitIgnoreSpec]:
        """The parsed ignore files in ``folder`` (cached; unreadable files are skipped)."""
        if folder not in self._specs:
            specs = []
            for name in IGNORE_FILES if self.read_files else ():
                try:
                    lines = (folder / name).read_text(encoding="utf-8-sig").splitlines()
                except (OSError, UnicodeDecodeError):
                    continue
                specs.append(_file_spec(lines, folder / name))
            self._specs[folder] = specs
        return self._specs[folder]

    def _verdict(self, path: Path, is_dir: bool) -> bool | None:
        """True when the ignore files and --exclude leave ``path`` out, False when a ``!``
        line takes it back, None when no line matches."""
        relative = path.absolute().relative_to(self.root)
        verdict: bool | None = None
        folder = self.root
        # Each ignore file sees the path relative to its own folder, deepest file last.
        for part in (None, *relative.parts[:-1]):
            if part is not None:
                folder = folder / part
            below = path.absolute().relative_to(folder).as_posix() + ("/" if is_dir else "")
            for spec in self._folder_specs(folder):
                result = spec.check_file(below)
                if result.include is not None:
                    verdict = result.include
        anchored = self._anchored(path)
        if anchored is None:
            return verdict
        result = self._exclude.check_file(anchored + ("/" if is_dir else ""))
        return verdict if result.include is None else result.include

    def _anchored(self, path: Path) -> str | None:
        """``path`` relative to the anchor (None: the anchor itself, or outside it: the
        options do not apply there)."""
        assert self.anchor is not None
        try:
            relative = path.absolute().relative_to(self.anchor).as_posix()
        except ValueError:
            return None
        return None if relative == "." else relative

    def skips_folder(self, folder: Path) -> bool:
        """Whether ``folder`` (under the root) is left out, and so not entered at all."""
        return folder.absolute() != self.root and self._verdict(folder, is_dir=True) is True

    def skips_file(self, path: Path) -> bool:
        """Whether the file ``path`` (under the root) is left out by the rules."""
        if self._verdict(path, is_dir=False) is True:
            return True
        anchored = self._anchored(path)
        if self.include and anchored is not None:
            return self._include.check_file(anchored).include is not True
        return False

    def skips(self, path: Path) -> bool:
        """Whether ``path`` or any folder above it (up to the root) is left out: the check a
        watcher or a single-file ingest makes for one path at a time."""
        relative = path.absolute().relative_to(self.root)
        folder = self.root
        for part in relative.parts[:-1]:
            folder = folder / part
            if self.skips_folder(folder):
                return True
        return self.skips_file(path)


def ignore_line(source: str) -> str:
    """The gitignore line that leaves out exactly the file ``source`` (relative to the folder
    of the ignore file): anchored with ``/``, its glob characters escaped."""
    escaped = "".join(f"\\{c}" if c in "\\[]*?" else c for c in source)
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return f"/{escaped}"
