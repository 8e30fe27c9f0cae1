"""LangGraph Studio's server (`langgraph dev`) serving langgraph.json, driven over its HTTP API."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_sync_client
from langgraph_sdk.client import SyncLangGraphClient

REPO = Path(__file__).resolve().parents[2]
LANGGRAPH = Path(sys.executable).parent / "langgraph"
# The server imports the graph module, which loads the embedding model: slow on a busy CI box.
START_TIMEOUT_S = 300.0

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_ready(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"langgraph dev exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(1)
    pytest.fail(f"langgraph dev was not ready in {START_TIMEOUT_S} s:\n{log.read_text()}")


class Studio:
    """The running dev server: its client, the graph's assistant id and the server log."""

    def __init__(self, client: SyncLangGraphClient, assistant: str, log: Path) -> None:
        self.client = client
        self.assistant = assistant
        self.log = log

    def run(self, query: str, **context: Any) -> dict[str, Any]:
        output = self.client.runs.wait(
            None,
            self.assistant,
            input={"query": query, "type_filter": None},
            context=context or None,
            raise_error=True,
        )
        assert isinstance(output, dict), output
        return output


@pytest.fixture(scope="module")
def studio(sample_store_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """One `langgraph dev` for the module, serving the graph over the session's sample store."""
    assert LANGGRAPH.is_file(), f"{LANGGRAPH} is missing: install the test extras"
    log = tmp_path_factory.mktemp("studio") / "server.log"
    port = free_port()
    env = {
        **os.environ,
        "RAGBRAIN_STORE": str(sample_store_path),
        "LANGSMITH_TRACING": "false",
        "LANGCHAIN_TRACING_V2": "false",
    }
    command = [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "--port", str(port)],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so the reloader's children go too
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(url, process, log)
        client = get_sync_client(url=url, timeout=120)
        assistants = client.assistants.search(graph_id="ragbrain")
        assert assistants, "langgraph.json serves no graph named 'ragbrain'"
        yield Studio(client, assistants[0]["assistant_id"], log)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_studio_shows_the_context_knobs(studio: Studio) -> None:
    schemas = studio.client.assistants.get_schemas(studio.assistant)

    context, inputs, outputs = (
        schemas["context_schema"],
        schemas["input_schema"],
        schemas["output_schema"],
    )
    assert context is not None and inputs is not None and outputs is not None
    knobs = context["properties"]
    for name in ("gate_threshold", "depth_tiers", "critic_threshold", "k", "markers"):
        assert knobs[name]["description"], name
    assert knobs["gate_threshold"].get("default") is None  # resolved per store and model
    assert set(inputs["properties"]) == {"query", "type_filter", "filters"}
    assert "documents" in outputs["properties"]


def test_a_run_through_the_http_api_uses_the_context(studio: Studio) -> None:
    output = studio.run("Why did the nightly database backup fail?", k=3, gate_threshold=1.0)
    strict = studio.run("Why did the nightly database backup fail?", gate_threshold=0.0)

    assert output["depth"] == 3
    assert output["notes"][0].startswith("depth 3: k set by the caller")
    assert 0 < len(output["documents"]) <= 3
    for doc in output["documents"]:
        assert doc["metadata"]["retrieval"]["depth"] == 3
        assert (Path(doc["metadata"]["root"]) / doc["metadata"]["source"]).is_file()
    # A gate of 1 accepts every hit, a gate of 0 none: the knob reached the graph.
    assert output["verdict"] == "good"
    assert strict["verdict"] == "poor"
    log = studio.log.read_text(errors="replace")
    assert "BlockingError" not in log and "Blocking call" not in log


@pytest.mark.slow
def test_every_graph_in_langgraph_json_imports(
    sample_store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGBRAIN_STORE", str(sample_store_path))
    config = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))
    assert config["graphs"]
    for name, target in config["graphs"].items():
        file, attribute = target.rsplit(":", 1)
        spec = importlib.util.spec_from_file_location(f"studio_{name}", REPO / file)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        graph = getattr(module, attribute)
        out = graph.invoke({"query": "redis cache stampede", "type_filter": None})
        assert out["documents"] and out["verdict"] == "good"
