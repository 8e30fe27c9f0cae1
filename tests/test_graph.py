"""The graph's shape: a Mermaid snapshot, the README's copy of it, and what Studio loads."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from ragbrain.diagram import mermaid

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = Path(__file__).parent / "snapshots" / "graph.mmd"


def test_topology_matches_the_snapshot() -> None:
    assert mermaid() == SNAPSHOT.read_text(encoding="utf-8").strip(), (
        "The graph changed. If on purpose: `ragbrain graph > tests/snapshots/graph.mmd` "
        "and paste it into README.md."
    )


def test_readme_shows_the_current_graph() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```mermaid\n(.*?)```", readme, flags=re.S)
    assert mermaid() in [b.strip() for b in blocks]


def test_context_knobs_are_described() -> None:
    from ragbrain.diagram import drawing_graph

    schema = drawing_graph().get_context_jsonschema()
    knobs = schema["properties"]
    assert {"gate_threshold", "depth_tiers", "critic_threshold", "k"} <= set(knobs)
    assert all(knob.get("description") for knob in knobs.values())


@pytest.mark.slow
def test_every_graph_in_langgraph_json_imports(
    sample_store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGBRAIN_STORE", str(sample_store_path))
    config = json.loads((ROOT / "langgraph.json").read_text(encoding="utf-8"))
    assert config["graphs"]
    for name, target in config["graphs"].items():
        file, attribute = target.rsplit(":", 1)
        spec = importlib.util.spec_from_file_location(f"studio_{name}", ROOT / file)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        graph = getattr(module, attribute)
        out = graph.invoke({"query": "redis cache stampede", "type_filter": None})
        assert out["documents"] and out["verdict"] == "good"
