"""docs/server.md's nginx recipe, run as written (a loopback `listen` instead of its TLS lines)
in front of a real `chroma run`: an ingest through it, `ragbrain mcp --server` searching and
remembering through it with the token from the environment, and a missing or wrong token
refused. Skipped where nginx is not installed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from langchain_core.embeddings import Embeddings
from mcp import StdioServerParameters

from ragbrain.errors import ServerAccessError
from ragbrain.ingest import ingest
from ragbrain.store import Store
from ragbrain.store.connect import ServerAccess
from tests.support.chroma_server import ChromaServer, free_port
from tests.support.mcp_client import connect

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
RAGBRAIN = Path(sys.executable).parent / "ragbrain"
NGINX = shutil.which("nginx") or next(
    (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(p).is_file()), None
)
TOKEN = "team-token-for-the-proxy"


def recipe() -> str:
    """The ```nginx block of docs/server.md."""
    text = (REPO / "docs" / "server.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"```nginx\n(.*?)```", text, flags=re.S)
    return block


class Nginx:
    """The recipe under a throwaway nginx (its own prefix, pid and logs) on a loopback port."""

    def __init__(self, folder: Path, upstream: str) -> None:
        self.folder, self.port = folder, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (folder / "token.map").write_text(f'"Bearer {TOKEN}" 1;\n')
        site = recipe().replace("/etc/nginx/chroma-token.map", str(folder / "token.map"))
        site = site.replace("listen 443 ssl;", f"listen 127.0.0.1:{self.port};")
        site = re.sub(r"\n\s*ssl_certificate\S*\s+[^;]+;", "", site)
        site = site.replace("http://127.0.0.1:8000", upstream)
        (folder / "site.conf").write_text(site)
        temps = "".join(
            f"    {kind}_temp_path {folder / kind};\n"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        (folder / "nginx.conf").write_text(
            ("user root;\n" if os.geteuid() == 0 else "")
            + f"worker_processes 1;\npid {folder / 'nginx.pid'};\n"
            + f"error_log {folder / 'error.log'};\nevents {{}}\n"
            + f"http {{\n    access_log {folder / 'access.log'};\n{temps}"
            + f"    include {folder / 'site.conf'};\n}}\n"
        )
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Nginx:
        assert NGINX is not None
        config = ["-p", str(self.folder), "-c", str(self.folder / "nginx.conf")]
        checked = subprocess.run(
            [NGINX, "-t", *config], check=False, capture_output=True, text=True
        )
        assert checked.returncode == 0, checked.stderr
        self.process = subprocess.Popen(
            [NGINX, *config, "-g", "daemon off;"], start_new_session=True
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(self.url, timeout=1.0)
                return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"nginx did not answer on {self.url}")

    def __exit__(self, *_: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def chroma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    running = ChromaServer(tmp_path_factory.mktemp("chroma-nginx")).start()
    yield running
    running.kill()


@pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx)")
def test_the_documented_nginx_proxy_serves_ingest_and_agents(
    chroma: ChromaServer, notes_dir: Path, tmp_path: Path, minilm: Embeddings
) -> None:
    (tmp_path / "nginx").mkdir()
    with Nginx(tmp_path / "nginx", chroma.url) as proxy:
        bearer = ServerAccess(token=TOKEN, auth="bearer")
        ingest(notes_dir, Store.open(None, minilm, create=True, server=proxy.url, access=bearer))
        for refused in (ServerAccess(), ServerAccess(token="nope", auth="bearer")):
            with pytest.raises(ServerAccessError, match="HTTP 401"):
                Store.open(None, minilm, server=proxy.url, access=refused)

        token = tmp_path / "token"
        token.write_text(TOKEN + "\n")
        (notes_dir / "inbox").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGBRAIN_S")}
        env |= {
            "RAGBRAIN_SERVER": proxy.url,
            "RAGBRAIN_SERVER_TOKEN_FILE": str(token),
            "RAGBRAIN_SERVER_AUTH": "bearer",
        }
        params = StdioServerParameters(
            command=str(RAGBRAIN),
            args=["mcp", "--allow", str(notes_dir), "--inbox", str(notes_dir / "inbox")],
            cwd=str(REPO),
            env=env,
        )
        with ExitStack() as stack:
            log = stack.enter_context((tmp_path / "mcp.log").open("w"))
            client = stack.enter_context(connect(params, log))
            stats = client.call("stats", {})
            assert not stats.is_error, (tmp_path / "mcp.log").read_text()[-3000:]
            assert stats.structured_content is not None
            assert stats.structured_content["store"].startswith(proxy.url)
            found = client.call("search", {"query": "nightly backup s3 credentials expired"})
            assert found.structured_content is not None
            assert found.structured_content["chunks"][0]["source"] == "bug/backup.md"
            written = client.call(
                "remember",
                {"title": "Proxy lesson", "text": "Tokens stop at nginx.", "type": "lesson"},
            )
            assert written.structured_content is not None, written.content
            source = written.structured_content["source"]
            again = client.call("search", {"query": "Proxy lesson tokens stop at nginx"})
            assert again.structured_content is not None
            assert source in [c["source"] for c in again.structured_content["chunks"]]
    assert TOKEN not in (tmp_path / "mcp.log").read_text()
