"""Connecting to Chroma: an embedded client on a folder, or an HTTP client on a server."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.errors import InvalidInputError, StoreNotFoundError, StoreUnavailableError
from ragbrain.paths import default_store_path
from ragbrain.store.resilience import StorePolicy, attempt_timeout, bound_requests, call

if TYPE_CHECKING:
    import httpx
    from chromadb.api import ClientAPI


def embedded_client(path: Path) -> ClientAPI:
    """A client that reads the folder as it is now: never the segments chromadb cached for
    the path when this process opened it before (``follow.fresh_client``)."""
    from ragbrain.store.follow import fresh_client

    return fresh_client(path)


def parse_server_url(url: str) -> tuple[str, int, bool]:
    """``http://HOST:PORT`` (or https) as (host, port, ssl); the port defaults to 8000.

    Raises:
        InvalidInputError: Not an http(s) URL with a host.
    """
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except (ValueError, AttributeError) as exc:
        raise InvalidInputError(f"The server URL {url!r} is not valid ({exc}).") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise InvalidInputError(
            f"The server URL must look like http://HOST:PORT (or https://), got {url!r}."
        )
    return parts.hostname, port or 8000, parts.scheme == "https"


@lru_cache(maxsize=1)
def _probe_client() -> httpx.Client:
    """One client for heartbeats (each new httpx client spends ~0.1 s loading certificates)."""
    import httpx

    return httpx.Client()


def _server_client(url: str, policy: StorePolicy) -> ClientAPI:
    """An HttpClient whose every request has a timeout (see ``resilience.bound_requests``).

    chromadb's constructor already talks to the server without a timeout, so a bounded
    heartbeat goes first: a server that is down or frozen fails here, within the deadline.
    """
    import chromadb
    from chromadb.config import Settings

    host, port, ssl = parse_server_url(url)
    base = f"{'https' if ssl else 'http'}://{host}:{port}"

    def heartbeat() -> None:
        response = _probe_client().get(f"{base}/api/v2/heartbeat", timeout=attempt_timeout())
        if response.status_code in (429, 502, 503, 504):
            raise ConnectionError(f"HTTP {response.status_code} from {base}")
        if response.status_code != 200:
            raise StoreUnavailableError(
                f"{base} answered HTTP {response.status_code} to a heartbeat: is it a Chroma "
                "server (`chroma run --host HOST --port PORT`)?"
            )

    where = f"Reaching the Chroma server at {base}"
    call(policy, where, heartbeat)
    settings = Settings(anonymized_telemetry=False)
    client = call(
        policy,
        where,
        lambda: chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings),
    )
    bound_requests(client)
    return client


def connect(
    path: str | Path | None, server: str | None, policy: StorePolicy, *, create: bool
) -> tuple[ClientAPI, str, Path | None]:
    """A client for the folder or the server, where it is (for messages), and the folder.

    Raises:
        InvalidInputError: Both ``path`` and ``server`` were given.
    """
    folder = check_location(path, server, create=create)
    if server:
        host, port, ssl = parse_server_url(server)
        return _server_client(server, policy), f"{'https' if ssl else 'http'}://{host}:{port}", None
    assert folder is not None
    return embedded_client(folder), str(folder), folder


def check_location(path: str | Path | None, server: str | None, *, create: bool) -> Path | None:
    """The checks ``connect`` makes before any client exists (no Chroma import, no I/O but a
    stat), so a caller can refuse a bad location before loading models.

    Returns:
        The store folder; None for a server.

    Raises:
        InvalidInputError: Both ``path`` and ``server`` were given, or the URL is malformed.
        StoreNotFoundError: The folder is a file, or (without ``create``) missing.
    """
    if server and path is not None:
        raise InvalidInputError(
            f"Only one of a store folder or a server is allowed, but got both: path {path!s} "
            f"and server {server!r} (check --store, --server and $RAGBRAIN_SERVER)."
        )
    if server:
        parse_server_url(server)
        return None
    folder = Path(path).expanduser() if path is not None else default_store_path()
    if folder.exists() and not folder.is_dir():
        raise StoreNotFoundError(f"The store path {folder} is a file, not a folder.")
    if not create and not folder.is_dir():
        raise StoreNotFoundError(
            f"No ragbrain store at {folder}. Create one with "
            f"`ragbrain ingest NOTES_DIR --store {folder}`."
        )
    return folder


# --- end server mode ---
