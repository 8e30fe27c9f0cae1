"""The graph's shape: a Mermaid snapshot, the README's copy of it, and its described knobs."""

from __future__ import annotations

import re
from pathlib import Path

from ragbrain.cli.diagram import mermaid

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).parent / "snapshots" / "graph.mmd"


def test_topology_matches_the_snapshot() -> None:
    assert mermaid() == SNAPSHOT.read_text(encoding="utf-8").strip(), (
        "The graph changed. If on purpose: `ragbrain graph > tests/unit/snapshots/graph.mmd` "
        "and paste it into README.md."
    )


def test_readme_shows_the_current_graph() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```mermaid\n(.*?)```", readme, flags=re.S)
    assert mermaid() in [b.strip() for b in blocks]


def test_context_knobs_are_described() -> None:
    from ragbrain.cli.diagram import drawing_graph

    schema = drawing_graph().get_context_jsonschema()
    knobs = schema["properties"]
    assert {"gate_threshold", "depth_tiers", "critic_threshold", "k"} <= set(knobs)
    assert all(knob.get("description") for knob in knobs.values())
