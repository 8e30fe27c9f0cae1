"""Obsidian Markdown: wikilinks read as their text, embeds dropped, inline #tags collected.

Applied to every Markdown note (the syntax means nothing else in plain Markdown); code
blocks and inline code are left as they are.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_EMBED = re.compile(r"!\[\[[^\]\n]*\]\]")
_LINK = re.compile(r"\[\[([^\]|\n]*)(?:\|([^\]\n]*))?\]\]")
# A tag starts after a space or a line start, holds letters, digits, _ - and /, and is not
# only digits (Obsidian's rule: #2024 is not a tag); a heading's "# " has a space and is not.
_TAG = re.compile(r"(?:^|(?<=\s))#([\w/-]*[^\W\d][\w/-]*)")


def _link_text(match: re.Match[str]) -> str:
    target, alias = match.group(1), match.group(2)
    if alias is not None and alias.strip():
        return alias.strip()
    page, _, heading = target.partition("#")
    heading = heading.lstrip("^")  # [[note#^block-id]] names a block, not a heading
    page = page.strip().rsplit("/", 1)[-1]
    return f"{page} > {heading.strip()}" if page and heading.strip() else page or heading.strip()


def _code_spans(text: str) -> list[tuple[int, int]]:
    spans = [m.span() for m in _FENCE.finditer(text)]
    spans += [
        m.span()
        for m in _INLINE_CODE.finditer(text)
        if not any(a <= m.start() < b for a, b in spans)
    ]
    return sorted(spans)


def resolve_links(body: str) -> str:
    """Drop ``![[embeds]]``; ``[[note]]`` -> ``note``, ``[[note|alias]]`` -> ``alias``,
    ``[[note#heading]]`` -> ``note > heading``; code is left alone."""
    spans = _code_spans(body)
    out: list[str] = []
    last = 0
    for start, end in [*spans, (len(body), len(body))]:
        piece = _EMBED.sub("", body[last:start])
        out.append(_LINK.sub(_link_text, piece))
        out.append(body[start:end])
        last = end
    return "".join(out)


def inline_tags(body: str) -> tuple[str, ...]:
    """The ``#tags`` written in the text (outside code), in order of first use, without ``#``."""
    spans = _code_spans(body)
    found: dict[str, None] = {}
    for match in _TAG.finditer(body):
        if not any(a <= match.start() < b for a, b in spans):
            found.setdefault(match.group(1).rstrip("/"), None)
    return tuple(found)


def aliases(meta: dict[str, object]) -> tuple[str, ...]:
    """The front matter's ``aliases`` (or ``alias``): a list or one string."""
    value = meta.get("aliases", meta.get("alias"))
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    return tuple(str(v).strip() for v in value if v is not None and str(v).strip())
