"""Spotting link-list files (an index of links to other notes, little prose of their own).

Such a file (a README listing every note) matches almost any question a little, so its many
chunks crowd real notes out of the results. ``ingest`` warns about them when it writes them,
and ``doctor`` names them, each with the ignore line to add.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Markdown links and images, wiki links, bare URLs.
_LINK = re.compile(r"!?\[[^\]\n]*\]\([^)\n]*\)|\[\[[^\]\n]+\]\]|<?https?://[^\s>)]+>?")
_WORD = re.compile(r"\w+")
#: A line whose text outside its links has at most this many words is a link line.
PROSE_WORDS = 8
#: A file is a link list with at least this many links ...
MIN_LINKS = 20
#: ... on at least this share of its non-empty lines.
MIN_LINK_LINE_SHARE = 0.6


@dataclass(frozen=True)
class LinkStats:
    """Counts of one text: links, lines that are mostly a link, and non-empty lines."""

    links: int = 0
    link_lines: int = 0
    lines: int = 0

    def __add__(self, other: LinkStats) -> LinkStats:
        return LinkStats(
            self.links + other.links,
            self.link_lines + other.link_lines,
            self.lines + other.lines,
        )

    @property
    def is_link_list(self) -> bool:
        """Mostly links and little prose (see ``MIN_LINKS`` and ``MIN_LINK_LINE_SHARE``)."""
        return (
            self.links >= MIN_LINKS
            and self.lines > 0
            and self.link_lines / self.lines >= MIN_LINK_LINE_SHARE
        )


def link_stats(text: str) -> LinkStats:
    """Count the links of ``text`` and the lines that hold a link and little else.

    Args:
        text: Markdown or plain text.

    Returns:
        The counts; headings and blank lines count as lines only when they hold words.
    """
    links = link_lines = lines = 0
    for line in text.splitlines():
        if not _WORD.search(line):
            continue
        lines += 1
        found = len(_LINK.findall(line))
        if not found:
            continue
        links += found
        if len(_WORD.findall(_LINK.sub(" ", line))) <= PROSE_WORDS:
            link_lines += 1
    return LinkStats(links, link_lines, lines)
