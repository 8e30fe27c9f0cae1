"""`ragbrain mcp --http HOST:PORT`: the SDK's streamable HTTP transport behind a bearer token."""

from __future__ import annotations

import ctypes
import hmac
import ipaddress
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from ragbrain.errors import InvalidInputError

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from ragbrain.mcp_server.service import RagbrainService

log = logging.getLogger(__name__)

TOKEN_ENV = "RAGBRAIN_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
MAX_BODY_BYTES = 1024 * 1024  # the largest tool call, a remember of 100,000 characters, fits
MAX_SESSIONS = 256
SESSION_IDLE_S = 30 * 60
PATH = "/mcp"
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8  # glibc's mallopt parameter number
_QUERY_SECRETS = frozenset({"token", "access_token", "api_key", "apikey", "key", "auth"})


@dataclass(frozen=True)
class Bind:
    """Where the HTTP server listens, and the token it asks for (None: no auth, loopback)."""

    host: str
    port: int
    token: str | None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{PATH}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_bind(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) -> host and port.

    Raises:
        InvalidInputError: Not of that form, or the port is not 1-65535.
    """
    host, sep, port = value.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise InvalidInputError(
            f"--http {value!r}: expected HOST:PORT, for example 127.0.0.1:8765."
        )
    return host, int(port)


def read_token(token_file: Path | None) -> str | None:
    """The bearer token: from ``token_file`` (first line), else ``$RAGBRAIN_MCP_TOKEN``.

    Raises:
        InvalidInputError: The file cannot be read, or the token is shorter than 16 characters
            or holds whitespace.
    """
    if token_file is not None:
        try:
            token = token_file.expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise InvalidInputError(f"--token-file {token_file}: {exc.strerror}.") from None
        where = f"--token-file {token_file}"
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
        where = f"${TOKEN_ENV}"
        if not token:
            return None
    if len(token) < MIN_TOKEN_CHARS or any(ch.isspace() for ch in token):
        raise InvalidInputError(
            f"{where}: the token must be at least {MIN_TOKEN_CHARS} characters without "
            "spaces; make one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`."
        )
    return token


def check_bind(value: str, token_file: Path | None, no_auth: bool) -> Bind:
    """Where to listen and with which token; refuses to serve without one, except on
    loopback with an explicit ``--no-auth``.

    Raises:
        InvalidInputError: A bad address or token, no token without ``--no-auth``,
            ``--no-auth`` off loopback, or ``--no-auth`` with a token.
    """
    host, port = parse_bind(value)
    token = read_token(token_file)
    if no_auth and token is not None:
        raise InvalidInputError(
            f"--no-auth and a token (--token-file or ${TOKEN_ENV}) contradict; pass one."
        )
    if no_auth and not is_loopback(host):
        raise InvalidInputError(
            f"--no-auth is only allowed on a loopback address (127.0.0.1, ::1), not {host}."
        )
    if token is None and not no_auth:
        raise InvalidInputError(
            f"--http needs a bearer token: --token-file FILE or ${TOKEN_ENV} (or, on "
            "127.0.0.1 only, an explicit --no-auth)."
        )
    return Bind(host, port, token)


async def _plain(send: Send, status: int, body: bytes = b"", *, bearer: bool = False) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if body:
        headers.append((b"content-type", b"text/plain; charset=utf-8"))
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware before the SDK's app: browsers (any ``Origin``) are refused, so no
    cross-origin call ever works (CORS is off); a token in the query string is refused;
    and without the right ``Authorization: Bearer`` header the answer is a bare 401."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = None if token is None else token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        query = scope.get("query_string", b"").decode("latin-1")
        names = {name.lower() for name, _ in parse_qsl(query, keep_blank_values=True)}
        if names & _QUERY_SECRETS or (self.token and self.token.decode() in query):
            await _plain(send, 400, b"tokens go in the Authorization header, never in the URL")
            return
        if b"origin" in headers:
            await _plain(send, 403, b"cross-origin requests are refused")
            return
        if self.token is not None:
            given = headers.get(b"authorization", b"")
            scheme, _, value = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
                await _plain(send, 401, bearer=True)
                return
        await self.app(scope, receive, send)


def http_app(service: RagbrainService, bind: Bind) -> ASGIApp:
    """The guarded ASGI app: the SDK's streamable HTTP app for the ragbrain server."""
    from ragbrain.mcp_server.server import build_server

    server = build_server(service, load_at_start=False)
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        json_response=True,
        max_request_body_size=MAX_BODY_BYTES,
        session_idle_timeout=SESSION_IDLE_S,
        max_sessions=MAX_SESSIONS,
        host=bind.host,  # loopback: the SDK also checks the Host header (DNS rebinding)
    )
    return Guard(app, bind.token)


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas (unless ``$MALLOC_ARENA_MAX`` is set); True if capped.

    Each thread that allocates gets its own arena by default (up to 8 per core), and the
    SDK runs every tool call in a worker thread, so many clients at once grow the server's
    memory in arenas (docs/decisions/measured-costs.md). Not glibc (musl, macOS): nothing to do.
    """
    if os.environ.get("MALLOC_ARENA_MAX") or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, arenas))


def serve_http(service: RagbrainService, bind: Bind) -> None:
    """Serve ``service`` over streamable HTTP at ``bind`` until interrupted; the models
    load once, at start, for every client."""
    import uvicorn

    os.environ.setdefault("PYDANTIC_ERRORS_INCLUDE_URL", "0")
    limit_malloc_arenas()  # before the loader and worker threads start
    service.start_loading()
    log.info(
        "Serving MCP at %s (%s).", bind.url, "bearer token" if bind.token else "no auth, loopback"
    )
    uvicorn.run(
        http_app(service, bind),
        host=bind.host,
        port=bind.port,
        log_level="warning",
        server_header=False,
        date_header=False,
        proxy_headers=False,
        h11_max_incomplete_event_size=16 * 1024,
        lifespan="on",
    )
