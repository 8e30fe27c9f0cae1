"""Connecting to Chroma: an embedded client on a folder, or an HTTP client on a server."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ragbrain.errors import (
    InvalidInputError,
    ServerAccessError,
    StoreNotFoundError,
    StoreUnavailableError,
)
from ragbrain.paths import (
    DATABASE_ENV,
    SERVER_AUTH_ENV,
    SERVER_TOKEN_ENV,
    SERVER_TOKEN_FILE_ENV,
    TENANT_ENV,
    default_store_path,
    resolved,
)
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


#: How a token is sent: Chroma's own header, or a bearer token (for a proxy in front).
AUTH_HEADERS = {"token": "X-Chroma-Token", "bearer": "Authorization"}


@dataclass(frozen=True)
class ServerAccess:
    """What a secured Chroma server needs: a token, how it is sent, a tenant and a database.

    Attributes:
        token: The token; None sends none.
        auth: ``"token"`` sends it as ``X-Chroma-Token`` (Chroma's token auth), ``"bearer"``
            as ``Authorization: Bearer`` (a proxy in front of the server).
        tenant: The Chroma tenant; None is Chroma's default.
        database: The Chroma database; None is Chroma's default.
        source: Where the token came from, for messages (never the token itself).
    """

    token: str | None = None
    auth: str = "token"
    tenant: str | None = None
    database: str | None = None
    source: str = "no token"

    def __post_init__(self) -> None:
        if self.auth not in AUTH_HEADERS:
            raise InvalidInputError(
                f"The server auth must be one of {', '.join(AUTH_HEADERS)}, got {self.auth!r} "
                f"(--server-auth, ${SERVER_AUTH_ENV})."
            )

    @classmethod
    def from_env(cls) -> ServerAccess:
        """``$RAGBRAIN_SERVER_TOKEN_FILE`` (or ``$RAGBRAIN_SERVER_TOKEN``),
        ``$RAGBRAIN_SERVER_AUTH``, ``$RAGBRAIN_TENANT`` and ``$RAGBRAIN_DATABASE``.

        Raises:
            ServerAccessError: The token file cannot be read or is empty.
        """
        token, source = None, "no token"
        if path := os.environ.get(SERVER_TOKEN_FILE_ENV):
            token, source = read_token(Path(path)), f"the token file {path}"
        elif raw := os.environ.get(SERVER_TOKEN_ENV):
            token, source = raw.strip(), f"${SERVER_TOKEN_ENV}"
        return cls(
            token=token,
            auth=os.environ.get(SERVER_AUTH_ENV) or "token",
            tenant=os.environ.get(TENANT_ENV) or None,
            database=os.environ.get(DATABASE_ENV) or None,
            source=source,
        )

    def headers(self) -> dict[str, str]:
        """The header that carries the token (none without one)."""
        if self.token is None:
            return {}
        if self.auth == "bearer":
            return {"Authorization": f"Bearer {self.token}"}
        return {"X-Chroma-Token": self.token}

    def refused(self, base: str, status: int) -> ServerAccessError:
        """The error for a server that answered 401 or 403."""
        if self.token is None:
            return ServerAccessError(
                f"{base} refused access (HTTP {status}): it needs a token; give one with "
                f"--server-token-file FILE or ${SERVER_TOKEN_FILE_ENV}."
            )
        return ServerAccessError(
            f"{base} refused the token from {self.source} (HTTP {status}, sent as "
            f"{AUTH_HEADERS[self.auth]}): check the token, or --server-auth "
            f"{'bearer' if self.auth == 'token' else 'token'} if the server wants the other header."
        )


def read_token(path: Path) -> str:
    """The token in ``path`` (its first line, stripped).

    Raises:
        ServerAccessError: The file cannot be read or holds no token.
    """
    try:
        text = path.expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ServerAccessError(
            f"The server token file {path} cannot be read ({exc.__class__.__name__}: {exc})."
        ) from None
    token = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not token:
        raise ServerAccessError(f"The server token file {path} is empty.")
    return token


@lru_cache(maxsize=1)
def _probe_client() -> httpx.Client:
    """One client for heartbeats (each new httpx client spends ~0.1 s loading certificates)."""
    import httpx

    return httpx.Client()


def _server_client(url: str, policy: StorePolicy, access: ServerAccess) -> ClientAPI:
    """An HttpClient whose every request has a timeout (see ``resilience.bound_requests``)
    and carries ``access``'s token, on its tenant and database.

    chromadb's constructor already talks to the server without a timeout, so a bounded
    heartbeat goes first: a server that is down or frozen fails here, within the deadline,
    and one that refuses the token (a proxy in front of it) says so.
    """
    import chromadb
    from chromadb.config import Settings
    from chromadb.errors import AuthorizationError, ChromaAuthError

    host, port, ssl = parse_server_url(url)
    base = f"{'https' if ssl else 'http'}://{host}:{port}"

    def heartbeat() -> None:
        response = _probe_client().get(
            f"{base}/api/v2/heartbeat", headers=access.headers(), timeout=attempt_timeout()
        )
        if response.status_code in (401, 403):
            raise access.refused(base, response.status_code)
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
    scope = {
        key: value
        for key, value in (("tenant", access.tenant), ("database", access.database))
        if value is not None
    }

    def open_client() -> ClientAPI:
        try:
            return chromadb.HttpClient(
                host=host,
                port=port,
                ssl=ssl,
                headers=access.headers(),
                settings=settings,
                **scope,
            )
        except (ChromaAuthError, AuthorizationError) as exc:
            raise access.refused(base, exc.code()) from None

    client = call(policy, where, open_client)
    bound_requests(client)
    return client


def connect(
    path: str | Path | None,
    server: str | None,
    policy: StorePolicy,
    *,
    create: bool,
    access: ServerAccess | None = None,
) -> tuple[ClientAPI, str, Path | None]:
    """A client for the folder or the server, where it is (for messages), and the folder.

    Args:
        access: A server's token, tenant and database; None reads them from the environment
            (``ServerAccess.from_env``).

    Raises:
        InvalidInputError: Both ``path`` and ``server`` were given.
        ServerAccessError: The server refused the token (or wanted one).
    """
    folder = check_location(path, server, create=create)
    if server:
        host, port, ssl = parse_server_url(server)
        access = access or ServerAccess.from_env()
        where = f"{'https' if ssl else 'http'}://{host}:{port}"
        if access.tenant or access.database:
            where += (
                f" ({access.tenant or 'default tenant'}/{access.database or 'default database'})"
            )
        return _server_client(server, policy, access), where, None
    assert folder is not None
    return embedded_client(folder), str(folder), folder


def check_location(path: str | Path | None, server: str | None, *, create: bool) -> Path | None:
    """The checks ``connect`` makes before any client exists (no Chroma import, no I/O but a
    stat), so a caller can refuse a bad location before loading models.

    Returns:
        The store folder, resolved (``ragbrain.paths.resolved``: absolute, ``~`` expanded,
        links followed); None for a server.

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
    folder = resolved(path) if path is not None else default_store_path()
    if folder.exists() and not folder.is_dir():
        raise StoreNotFoundError(f"The store path {folder} is a file, not a folder.")
    if not create and not folder.is_dir():
        raise StoreNotFoundError(
            f"No ragbrain store at {folder}. Create one with "
            f"`ragbrain ingest NOTES_DIR --store {folder}`."
        )
    return folder


# --- end server mode ---
