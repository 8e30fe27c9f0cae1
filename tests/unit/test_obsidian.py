"""Obsidian vaults: wikilinks read as text, embeds dropped, inline tags and aliases kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragbrain.ingest import find_notes, ingest
from ragbrain.ingest.obsidian import aliases, inline_tags, resolve_links
from ragbrain.store import Store


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("See [[Redis cache]] first.", "See Redis cache first."),
        ("See [[redis-cache|the cache note]].", "See the cache note."),
        ("See [[Deploys#Rollback]].", "See Deploys > Rollback."),
        ("See [[Deploys#^block1|that step]].", "See that step."),
        ("See [[folder/Deploys]].", "See Deploys."),
        ("A diagram ![[arch.png]] and ![[Other note]] here.", "A diagram  and  here."),
        ("Code `[[not a link]]` stays.", "Code `[[not a link]]` stays."),
        ("```\n[[kept]] ![[kept]]\n```\n[[gone|x]]", "```\n[[kept]] ![[kept]]\n```\nx"),
        ("A [normal](link) and [[]] stay.", "A [normal](link) and  stay."),
    ],
    ids=["link", "alias", "heading", "block-alias", "path", "embeds", "inline-code", "fence", "md"],
)
def test_links(text: str, expected: str) -> None:
    assert resolve_links(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Fixed #bug in #project/api today #bug", ("bug", "project/api")),
        ("# Heading\n## Sub\n#todo", ("todo",)),
        ("Issue #123 and #2024 are not tags, #y2024 is", ("y2024",)),
        ("C# and https://x.org/#anchor and a#b are not", ()),
        ("`#code` and\n```\n#fenced\n```\n#real", ("real",)),
        ("#日本語 and #naïve", ("日本語", "naïve")),
    ],
    ids=["tags", "headings", "numbers", "not-after-a-word", "code", "unicode"],
)
def test_inline_tags(text: str, expected: tuple[str, ...]) -> None:
    assert inline_tags(text) == expected


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"aliases": ["Cache", "Redis TTL"]}, ("Cache", "Redis TTL")),
        ({"aliases": "Cache"}, ("Cache",)),
        ({"alias": "Old name"}, ("Old name",)),
        ({"aliases": None}, ()),
        ({}, ()),
    ],
    ids=["list", "string", "alias-key", "null", "none"],
)
def test_aliases(meta: dict[str, object], expected: tuple[str, ...]) -> None:
    assert aliases(meta) == expected


VAULT = {
    "Redis cache.md": "---\naliases: [Cache stampede]\ntags: [redis]\n---\n# Redis cache\n\n"
    "The TTL needs jitter, see [[Deploys|deploy notes]] and #incident #redis.\n![[graph.png]]",
    "Deploys.md": "# Deploys\n\nRoll back with helm. Related: [[Redis cache]].",
    ".obsidian/workspace.md": "# Workspace\n\nsettings",
    ".trash/Old.md": "# Old\n\ndeleted note",
}


def test_a_vault_is_ingested_as_obsidian_reads_it(
    write_notes: Callable[[dict[str, str]], Path], tmp_path: Path, fake_embeddings
) -> None:  # type: ignore[no-untyped-def]
    root = write_notes(VAULT)
    _, notes, skipped = find_notes(root)
    assert sorted(n.source for n in notes) == ["Deploys.md", "Redis cache.md"] and not skipped
    note = next(n for n in notes if n.source == "Redis cache.md")
    assert "see deploy notes and #incident" in note.body and "![[" not in note.body
    assert (note.tags, note.aliases) == (("redis", "incident"), ("Cache stampede",))
    store = Store.open(tmp_path / "s", fake_embeddings, create=True)
    ingest(root, store)
    got = store.collection.get(where={"source": "Redis cache.md"}, include=["metadatas"])
    assert {(m["tags"], m["aliases"]) for m in got["metadatas"] or []} == {
        ("redis, incident", "Cache stampede")
    }
    plain = store.collection.get(where={"source": "Deploys.md"}, include=["metadatas"])
    assert "aliases" not in (plain["metadatas"] or [{}])[0]


def test_text_files_keep_their_brackets(write_notes: Callable[[dict[str, str]], Path]) -> None:
    root = write_notes({"log.txt": "raw [[brackets]] and #hash stay"})
    _, notes, _ = find_notes(root)
    assert (notes[0].body, notes[0].tags) == ("raw [[brackets]] and #hash stay", ())
