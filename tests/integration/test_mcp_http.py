"""`ragbrain mcp --http`: the bind and token rules, the guard in process, and every tool
driven over stdio and over HTTP with the SDK's own clients (the real model)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters

from ragbrain import InvalidInputError
from ragbrain.mcp_server import RagbrainService
from ragbrain.mcp_server.http import (
    MAX_BODY_BYTES,
    TOKEN_ENV,
    Bind,
    check_bind,
    http_app,
    parse_bind,
)
from tests.support.fakes import NOTES, BagOfWordsEmbeddings
from tests.support.mcp_client import McpClient, connect, connect_http

REPO = Path(__file__).resolve().parents[2]
RAGBRAIN = Path(sys.executable).parent / "ragbrain"
TOKEN = "test-token-0123456789abcdef"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


# --- the rules: where to listen, which token --------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("127.0.0.1:8765", ("127.0.0.1", 8765)),
        ("[::1]:80", ("::1", 80)),
        ("0.0.0.0:1", ("0.0.0.0", 1)),
    ],
    ids=["ipv4", "ipv6", "any"],
)
def test_parse_bind(value: str, expected: tuple[str, int]) -> None:
    assert parse_bind(value) == expected


@pytest.mark.parametrize(
    ("value", "token", "no_auth", "message"),
    [
        ("8765", None, True, "expected HOST:PORT"),
        ("127.0.0.1:0", None, True, "expected HOST:PORT"),
        ("127.0.0.1:70000", None, True, "expected HOST:PORT"),
        ("127.0.0.1:8765", None, False, "--http needs a bearer token"),
        ("0.0.0.0:8765", None, True, "--no-auth is only allowed on a loopback address"),
        ("192.168.1.5:8765", None, True, "--no-auth is only allowed on a loopback address"),
        ("127.0.0.1:8765", "file", True, "contradict"),
        ("127.0.0.1:8765", "short", False, "at least 16 characters"),
        ("127.0.0.1:8765", "with space in it, long enough", False, "without spaces"),
        ("127.0.0.1:8765", "missing", False, "--token-file .*missing"),
        ("127.0.0.1:8765", "env-short", False, f"\\${TOKEN_ENV}: the token must be"),
    ],
    ids=[
        "no-host",
        "port-0",
        "port-too-big",
        "no-token",
        "no-auth-off-loopback",
        "no-auth-lan",
        "no-auth-and-token",
        "short-token",
        "token-with-space",
        "token-file-missing",
        "env-token-short",
    ],
)
def test_bad_binds_are_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    value: str,
    token: str | None,
    no_auth: bool,
    message: str,
) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    token_file = None
    if token == "env-short":
        monkeypatch.setenv(TOKEN_ENV, "short")
    elif token == "missing":
        token_file = tmp_path / "missing"
    elif token is not None:
        token_file = tmp_path / "token"
        token_file.write_text(TOKEN if token == "file" else token)
    with pytest.raises(InvalidInputError, match=message):
        check_bind(value, token_file, no_auth)


def test_token_from_file_or_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text(TOKEN + "\n")
    monkeypatch.setenv(TOKEN_ENV, "another-token-from-the-env")
    assert check_bind("127.0.0.1:1", tmp_path / "token", False).token == TOKEN
    assert check_bind("0.0.0.0:1", None, False).token == "another-token-from-the-env"
    monkeypatch.delenv(TOKEN_ENV)
    assert check_bind("127.0.0.1:1", None, True) == Bind("127.0.0.1", 1, None)


# --- the guard and the SDK's HTTP checks, in process ------------------------------------------


@pytest.fixture
def http(tmp_path: Path, fake_embeddings: BagOfWordsEmbeddings) -> Iterator[Any]:
    from starlette.testclient import TestClient

    notes = tmp_path / "notes"
    for relative, text in NOTES.items():
        (notes / relative).parent.mkdir(parents=True, exist_ok=True)
        (notes / relative).write_text(text, encoding="utf-8")
    service = RagbrainService(
        tmp_path / "store", allowed=[notes], critic=None, embeddings=fake_embeddings
    )
    service.ingest(str(notes), None)
    app = http_app(service, Bind("127.0.0.1", 8765, TOKEN))
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        yield client


def _post(http: Any, body: Any, headers: dict[str, str] | None = None, **kwargs: Any) -> Any:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return http.post("/mcp", content=content, headers={**MCP_HEADERS, **(headers or {})}, **kwargs)


AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token-0123456789"},
        {"Authorization": TOKEN},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": f"Bearer {TOKEN}x"},
    ],
    ids=["none", "wrong", "no-scheme", "basic", "longer"],
)
def test_without_the_right_token_the_answer_is_a_bare_401(
    http: Any, headers: dict[str, str]
) -> None:
    answer = _post(http, INIT, headers)
    assert answer.status_code == 401
    assert answer.content == b""
    assert set(answer.headers) == {"content-length", "www-authenticate"}
    assert answer.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    "query",
    [f"?access_token={TOKEN}", f"?token={TOKEN}", f"?x={TOKEN}", "?api_key=anything"],
    ids=["access_token", "token", "value-anywhere", "api_key"],
)
def test_a_token_in_the_query_string_is_refused_even_when_right(http: Any, query: str) -> None:
    answer = http.post(f"/mcp{query}", content=json.dumps(INIT), headers={**MCP_HEADERS, **AUTH})
    assert answer.status_code == 400
    assert b"Authorization header" in answer.content
    assert "mcp-session-id" not in answer.headers


def test_cross_origin_requests_are_refused_and_no_cors_headers_are_sent(http: Any) -> None:
    browser = _post(http, INIT, {**AUTH, "Origin": "https://evil.example"})
    preflight = http.options(
        "/mcp", headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}
    )
    ok = _post(http, INIT, AUTH)
    assert (browser.status_code, preflight.status_code, ok.status_code) == (403, 403, 200)
    for answer in (browser, preflight, ok):
        assert not any(h.startswith("access-control-") for h in answer.headers)


def _session(http: Any) -> dict[str, str]:
    answer = _post(http, INIT, AUTH)
    assert answer.status_code == 200, answer.text
    headers = {**AUTH, "mcp-session-id": answer.headers["mcp-session-id"]}
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert _post(http, note, headers).status_code == 202
    return headers


def test_oversized_bodies_are_refused_before_parsing(http: Any) -> None:
    headers = _session(http)
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "x" * MAX_BODY_BYTES}},
    }
    assert _post(http, call, headers).status_code == 413


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, -32700),
        (b'{"jsonrpc": "2.0", "id": 3}', 400, None),
        (b'{"jsonrpc": "1.0", "id": 3, "method": "tools/list"}', 400, None),
        (b"[1, 2, 3]", 400, None),
        ({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}, 200, -32601),
    ],
    ids=["not-json", "no-method", "wrong-version", "not-an-object", "unknown-method"],
)
def test_malformed_json_rpc_and_unknown_methods_are_errors(
    http: Any, body: Any, status: int, code: int | None
) -> None:
    headers = _session(http)
    answer = _post(http, body, headers)
    assert answer.status_code == status, answer.text
    if code is not None:
        assert answer.json()["error"]["code"] == code
    # and the server goes on
    tools = {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}
    assert [t["name"] for t in _post(http, tools, headers).json()["result"]["tools"]] == [
        "search",
        "get",
        "ingest",
        "remember",
        "stats",
    ]


# --- every tool over stdio and HTTP, the real `ragbrain mcp` with the real model ---------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, minilm: Any) -> dict[str, Any]:
    """An allowed folder of the sample notes with an inbox, and a store of it per transport."""
    from ragbrain.ingest import ingest
    from ragbrain.paths import sample_notes
    from ragbrain.store import Store

    base = tmp_path_factory.mktemp("mcp-both")
    for name in ("stdio", "http"):
        notes = base / f"notes-{name}"
        shutil.copytree(sample_notes(), notes)
        (notes / "inbox").mkdir()
        ingest(notes, Store.open(base / f"store-{name}", minilm, create=True))
    (base / "token").write_text(TOKEN)
    return {"base": base}


def _args(served: dict[str, Any], name: str) -> list[str]:
    base = served["base"]
    notes = base / f"notes-{name}"
    return [
        "mcp",
        "--store",
        str(base / f"store-{name}"),
        "--allow",
        str(notes),
        "--inbox",
        str(notes / "inbox"),
    ]


@pytest.fixture(scope="module", params=["stdio", "http"])
def client(request: pytest.FixtureRequest, served: dict[str, Any]) -> Iterator[McpClient]:
    """A connected SDK client of `ragbrain mcp`, over stdio or over HTTP with the token."""
    base: Path = served["base"]
    env = dict(os.environ)
    errlog = (base / f"{request.param}.log").open("w")
    if request.param == "stdio":
        params = StdioServerParameters(
            command=str(RAGBRAIN), args=_args(served, "stdio"), cwd=str(REPO), env=env
        )
        with errlog, connect(params, errlog) as stdio:
            yield stdio
        return
    port = _free_port()
    args = [
        *_args(served, "http"),
        "--http",
        f"127.0.0.1:{port}",
        "--token-file",
        str(base / "token"),
    ]
    process = subprocess.Popen(
        [str(RAGBRAIN), *args], cwd=REPO, env=env, stdout=errlog, stderr=errlog
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, (base / "http.log").read_text()
                assert time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.3)
        with connect_http(f"http://127.0.0.1:{port}/mcp", TOKEN) as http:
            yield http
    finally:
        process.terminate()
        process.wait(timeout=30)
        errlog.close()


QUERIES = [
    "Why did the nightly database backup fail?",
    "redis cache eviction",
    "postgres migration",
]


def _call(client: McpClient, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = client.call(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


RESULTS: dict[str, dict[str, Any]] = {}


@pytest.mark.slow
def test_every_tool(client: McpClient, served: dict[str, Any]) -> None:
    """search, get, remember (then search), ingest and stats, on one transport; what each
    returned is kept, so the next test can compare the transports."""
    got: dict[str, Any] = {}
    assert {t.name for t in client.list_tools()} == {"search", "get", "remember", "ingest", "stats"}
    got["search"] = [_call(client, "search", {"query": q}) for q in QUERIES]
    scoped = _call(
        client, "search", {"query": "redis cache", "path": "bug", "tags": ["Redis", "#caching"]}
    )
    assert scoped["chunks"] and all(c["source"].startswith("bug/") for c in scoped["chunks"])
    assert any(
        "filters (path under 'bug'; tags any of 'redis', 'caching')" in n for n in scoped["notes"]
    )
    got["scoped"] = [(c["source"], c["chunk"]) for c in scoped["chunks"]]
    first = got["search"][0]["chunks"][0]
    got["get"] = _call(
        client, "get", {"source": first["source"], "chunk": first["chunk"], "neighbours": 2}
    )
    assert first["text"] in got["get"]["text"]
    title = "Rotate the backup credentials before they expire"
    written = _call(
        client,
        "remember",
        {
            "title": title,
            "text": "The S3 backup key expires every 90 days; a calendar reminder rotates it.",
            "type": "lesson",
            "tags": ["backup"],
        },
    )
    assert written["source"] == "inbox/rotate-the-backup-credentials-before-they-expire.md"
    found = _call(client, "search", {"query": title})
    assert found["chunks"][0]["source"] == written["source"]
    # remember dated the note today and tagged it: path, tag and date filters find it alone.
    only = _call(
        client,
        "search",
        {"query": title, "path": "inbox", "tags": "backup", "after": "2000-01-01", "k": 5},
    )
    assert {c["source"] for c in only["chunks"]} == {written["source"]}
    assert only["chunks"][0]["modified"].endswith("T00:00:00Z")  # the front matter's date
    bad = client.call("search", {"query": title, "path": "../../etc"})
    assert bad.is_error and "must not hold '..'" in bad.content[0].text  # type: ignore[union-attr]
    got["remember"], got["found"] = written, found["chunks"][0]["source"]
    got["get-new"] = _call(client, "get", {"source": written["source"]})["text"]
    stats = _call(client, "stats", {})
    notes = Path(stats["allowed_roots"][0])
    report = _call(client, "ingest", {"path": str(notes)})
    assert (report["added"], report["deleted"]) == (0, 0)  # remember's note is already in
    got["stats"] = {k: stats[k] for k in ("chunks", "types", "embedding_model", "gate_threshold")}
    bad = client.call("get", {"source": "../../etc/passwd"})
    assert bad.is_error and "must not hold '..'" in bad.content[0].text  # type: ignore[union-attr]
    too_big = client.call("remember", {"title": "t", "text": "x" * 200_000, "type": "lesson"})
    assert too_big.is_error and "text" in too_big.content[0].text  # type: ignore[union-attr]
    RESULTS[notes.name.removeprefix("notes-")] = got


@pytest.mark.slow
def test_http_answers_as_stdio_does() -> None:
    if set(RESULTS) != {"stdio", "http"}:
        pytest.skip("needs test_every_tool on both transports")
    stdio, http = RESULTS["stdio"], RESULTS["http"]
    assert http == stdio


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--http", "127.0.0.1:8765"], "--http needs a bearer token"),
        (["--http", "0.0.0.0:8765", "--no-auth"], "only allowed on a loopback address"),
        (["--no-auth"], "--token-file and --no-auth need --http"),
        (["--http", "localhost"], "expected HOST:PORT"),
    ],
    ids=["no-token", "no-auth-everywhere", "no-auth-without-http", "no-port"],
)
def test_the_command_refuses_unsafe_http_settings(
    monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    from typer.testing import CliRunner

    from ragbrain.cli import app

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    result = CliRunner().invoke(app, ["mcp", *args])
    assert result.exit_code == 2
    assert message in result.output
