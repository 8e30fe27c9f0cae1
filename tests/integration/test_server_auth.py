"""A Chroma server behind a token: a real `chroma run` on loopback with a token-checking proxy
in front (chromadb 1.x's server has no auth of its own), its tenant and database chosen."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import chromadb
import pytest

from ragbrain import StorePolicy
from ragbrain.errors import ServerAccessError, StoreNotFoundError
from ragbrain.ingest import ingest
from ragbrain.store import Store
from ragbrain.store.connect import ServerAccess
from tests.support.chroma_server import ChromaServer
from tests.support.fakes import BagOfWordsEmbeddings
from tests.support.token_proxy import TokenProxy

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
RAGBRAIN = Path(sys.executable).parent / "ragbrain"
POLICY = StorePolicy(deadline=5.0, attempt_timeout=2.0, retries=1, backoff=0.05, max_backoff=0.2)
TOKEN = "s3cret-team-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    running = ChromaServer(tmp_path_factory.mktemp("chroma-auth")).start()
    admin = chromadb.AdminClient(
        chromadb.config.Settings(
            chroma_api_impl="chromadb.api.fastapi.FastAPI",
            chroma_server_host="127.0.0.1",
            chroma_server_http_port=running.port,
        )
    )
    admin.create_tenant("team")
    admin.create_database("notes", tenant="team")
    yield running
    running.kill()


def open_store(url: str, access: ServerAccess, create: bool = False) -> Store:
    return Store.open(
        None, BagOfWordsEmbeddings(), create=create, server=url, policy=POLICY, access=access
    )


@pytest.mark.parametrize("header", ["X-Chroma-Token", "Authorization"])
def test_the_token_reaches_the_server_in_either_header(
    server: ChromaServer, notes_dir: Path, header: str
) -> None:
    auth = "token" if header == "X-Chroma-Token" else "bearer"
    with TokenProxy(server.url, TOKEN, header) as proxy:
        access = ServerAccess(token=TOKEN, auth=auth, tenant="team", database="notes")
        store = open_store(proxy.url, access, create=True)
        ingest(notes_dir, store)
        assert (
            store.search("nightly backup s3 credentials expired", 1)[0]["metadata"]["source"]
            == "bug/backup.md"
        )
        assert proxy.seen["passed"] > 0 and proxy.seen["refused"] == 0
        # The notes went to the team's database, not the default one.
        with pytest.raises(StoreNotFoundError):
            open_store(proxy.url, ServerAccess(token=TOKEN, auth=auth))


def test_a_missing_or_wrong_token_is_named(server: ChromaServer) -> None:
    with TokenProxy(server.url, TOKEN) as proxy:
        with pytest.raises(
            ServerAccessError, match=r"refused access \(HTTP 401\): it needs a token"
        ):
            open_store(proxy.url, ServerAccess())
        wrong = ServerAccess(token="nope", source="the token file /x/token")
        with pytest.raises(
            ServerAccessError, match="refused the token from the token file /x/token"
        ):
            open_store(proxy.url, wrong)
        assert "nope" not in str(wrong.refused(proxy.url, 401))  # the token is never printed
        bearer = ServerAccess(token=TOKEN, auth="bearer")
        with pytest.raises(ServerAccessError, match="--server-auth token"):
            open_store(proxy.url, bearer)  # right token, wrong header


def test_the_cli_takes_a_token_file_and_exits_2_on_a_wrong_one(
    server: ChromaServer, notes_dir: Path, tmp_path: Path
) -> None:
    good, bad = tmp_path / "token", tmp_path / "wrong"
    good.write_text(TOKEN + "\n")
    bad.write_text("not-the-token\n")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("RAGBRAIN_SERVER", "RAGBRAIN_T"))
    }
    with TokenProxy(server.url, TOKEN) as proxy:

        def run(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [str(RAGBRAIN), *args],
                check=False,
                capture_output=True,
                text=True,
                timeout=300,
                cwd=REPO,
                env={**env, **extra},
            )

        done = run(
            "--server-token-file", str(good), "ingest", str(notes_dir), "--server", proxy.url
        )
        assert done.returncode == 0, done.stderr
        found = run(
            "query",
            "nightly backup s3 credentials expired",
            "--server",
            proxy.url,
            "--json",
            RAGBRAIN_SERVER_TOKEN_FILE=str(good),
        )
        assert found.returncode == 0 and "bug/backup.md" in found.stdout, found.stderr
        refused = run("--server-token-file", str(bad), "query", "redis", "--server", proxy.url)
        assert refused.returncode == 2
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and f"refused the token from the token file {bad}" in lines[0]
        missing = run("types", "--server", proxy.url)
        assert missing.returncode == 2 and "it needs a token" in missing.stderr
        unreadable = run(
            "--server-token-file", str(tmp_path / "none"), "types", "--server", proxy.url
        )
        assert unreadable.returncode == 2 and "cannot be read" in unreadable.stderr


def test_the_mcp_tools_use_a_token_server_from_the_environment(
    server: ChromaServer, notes_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragbrain.mcp_server import RagbrainService

    monkeypatch.setenv("RAGBRAIN_SERVER_TOKEN", TOKEN)
    monkeypatch.setenv("RAGBRAIN_DATABASE", "notes")
    monkeypatch.setenv("RAGBRAIN_TENANT", "team")
    (notes_dir / "inbox").mkdir()
    with TokenProxy(server.url, TOKEN) as proxy:
        service = RagbrainService(
            server=proxy.url,
            allowed=[notes_dir],
            inbox=notes_dir / "inbox",
            critic=None,
            embeddings=BagOfWordsEmbeddings(),
        )
        assert service.ingest(str(notes_dir), None).added > 0
        written = service.remember("Team lesson", "The zorblax cache needs a ttl.", "lesson")
        found = service.search("zorblax cache ttl", None, 3)
        assert found.chunks[0].source == written.source == "inbox/team-lesson.md"
        assert service.stats().store.startswith(proxy.url)
        assert proxy.seen["passed"] > 0 and proxy.seen["refused"] == 0


def test_mcp_takes_a_server_or_a_store_not_both(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragbrain.cli import app

    both = CliRunner().invoke(
        app, ["mcp", "--store", str(tmp_path / "s"), "--server", "http://127.0.0.1:9"]
    )
    assert both.exit_code == 2 and "Only one of a store folder or a server" in both.stderr
