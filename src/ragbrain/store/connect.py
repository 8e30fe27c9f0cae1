"""Reaching a store: the deadlines and retries of every call, a client on a folder or a
server, and the collection with its checks.

Deadlines and retries for store calls: which failures are transient, and how long to try.

Connecting to Chroma: an embedded client on a folder, or an HTTP client on a server.

The ragbrain collection in Chroma: opening or creating it, and checking its distance space,
dimension and embedding model (converting another space to cosine on request).
"""

from __future__ import annotations

import contextvars
import logging
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ragbrain.errors import (
    InvalidInputError,
    RagbrainError,
    ServerAccessError,
    StoreMismatchError,
    StoreNotFoundError,
    StoreUnavailableError,
)
from ragbrain.models.embeddings import EMBEDDING_CHOICES, embeddings_for
from ragbrain.models.profiles import default_profile
from ragbrain.paths import (
    DATABASE_ENV,
    DEADLINE_ENV,
    RETRIES_ENV,
    SERVER_AUTH_ENV,
    SERVER_TOKEN_ENV,
    SERVER_TOKEN_FILE_ENV,
    TENANT_ENV,
    default_store_path,
    resolved,
)
from ragbrain.store.ledger import BATCH, COLLECTION, DIMENSION_KEY, MODEL_KEY

if TYPE_CHECKING:
    import httpx
    from chromadb.api import ClientAPI
    from chromadb.api.models.Collection import Collection
    from langchain_core.embeddings import Embeddings


# --- deadlines and retries ---

log = logging.getLogger(__name__)

T = TypeVar("T")

_MIN_ATTEMPT = 0.05  # no attempt is started with less time than this left
# The HTTP timeout of the request being made in this thread (None: no ragbrain call is active).
_ATTEMPT_TIMEOUT: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "ragbrain_attempt_timeout", default=None
)
# Chroma's HTTP error codes that mean "try again later" (rate limited, gateway, overloaded).
_TRANSIENT_CODES = frozenset({429, 502, 503, 504})


@dataclass(frozen=True)
class StorePolicy:
    """How long one store call may take and how it retries transient failures."""

    deadline: float = field(
        default=10.0,
        metadata={"description": "Seconds one store call may take, all retries included."},
    )
    attempt_timeout: float = field(
        default=5.0,
        metadata={"description": "Seconds one HTTP request may wait (capped by the deadline)."},
    )
    retries: int = field(
        default=3, metadata={"description": "Retries after a transient failure (0: none)."}
    )
    backoff: float = field(
        default=0.2,
        metadata={"description": "Pause before the first retry; doubles each time, jittered."},
    )
    max_backoff: float = field(
        default=2.0, metadata={"description": "Longest pause between two attempts."}
    )

    def __post_init__(self) -> None:
        """Refuse settings that would make every call fail or never end."""
        for name in ("deadline", "attempt_timeout"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0:
                raise InvalidInputError(f"StorePolicy.{name} must be > 0 seconds, got {value!r}.")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise InvalidInputError(
                f"StorePolicy.retries must be an int >= 0, got {self.retries!r}."
            )
        if not 0 <= self.backoff <= self.max_backoff:
            raise InvalidInputError(
                "StorePolicy needs 0 <= backoff <= max_backoff, "
                f"got {self.backoff!r} and {self.max_backoff!r}."
            )

    @classmethod
    def from_env(cls) -> StorePolicy:
        """The defaults, with ``$RAGBRAIN_DEADLINE`` (seconds) and ``$RAGBRAIN_RETRIES`` applied."""
        values: dict[str, Any] = {}
        try:
            if raw := os.environ.get(DEADLINE_ENV):
                values["deadline"] = float(raw)
                values["attempt_timeout"] = min(cls.attempt_timeout, float(raw))
            if raw := os.environ.get(RETRIES_ENV):
                values["retries"] = int(raw)
        except ValueError as exc:
            raise InvalidInputError(
                f"${DEADLINE_ENV} must be seconds and ${RETRIES_ENV} an integer ({exc})."
            ) from None
        return cls(**values)

    def pause(self, retry: int) -> float:
        """The pause before retry number ``retry`` (1-based): exponential, jittered down to half."""
        return random.uniform(0.5, 1.0) * min(self.max_backoff, self.backoff * 2.0 ** (retry - 1))


def attempt_timeout() -> float | None:
    """The HTTP timeout for a request made now in this thread (None outside ``call``)."""
    return _ATTEMPT_TIMEOUT.get()


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` may go away on its own: connection refused or reset, a timeout, a
    rate limit or an overloaded gateway. Bad arguments, missing collections and dimension
    mismatches are permanent."""
    import httpx
    from chromadb.errors import ChromaError

    if isinstance(exc, httpx.TransportError):  # connect/read/write errors and timeouts
        return True
    if isinstance(exc, ChromaError):
        return exc.code() in _TRANSIENT_CODES
    return isinstance(exc, ConnectionError | TimeoutError)


def _permanent(exc: Exception, what: str) -> Exception:
    """A ragbrain error for a permanent Chroma failure, or ``exc`` itself when unknown."""
    from chromadb.errors import AuthorizationError, ChromaAuthError, ChromaError, NotFoundError

    if isinstance(exc, RagbrainError) or not isinstance(exc, ChromaError):
        return exc
    if isinstance(exc, NotFoundError):
        return StoreNotFoundError(f"{what}: {exc.message()}")
    if isinstance(exc, ChromaAuthError | AuthorizationError):
        return ServerAccessError(
            f"{what}: the server refused access ({exc.message()}); check the token "
            "(--server-token-file, $RAGBRAIN_SERVER_TOKEN_FILE)."
        )
    if "dimension" in exc.message().lower():
        return StoreMismatchError(f"{what}: {exc.message()}")
    if exc.code() == 400:
        return InvalidInputError(f"{what}: {exc.message()}")
    return exc


def call(policy: StorePolicy, what: str, fn: Callable[[], T]) -> T:
    """Run ``fn`` (one store operation, safe to repeat) under ``policy``.

    Transient failures are retried with back-off while retries and time are left; each
    HTTP request made inside ``fn`` waits at most the attempt timeout or the time left.

    Raises:
        StoreUnavailableError: The last transient failure, attached as ``__cause__``.
        StoreNotFoundError, StoreMismatchError, InvalidInputError: Permanent failures.
    """
    start = time.monotonic()
    end = start + policy.deadline
    retry = 0
    while True:
        left = end - time.monotonic()
        token = _ATTEMPT_TIMEOUT.set(max(_MIN_ATTEMPT, min(policy.attempt_timeout, left)))
        try:
            return fn()
        except Exception as exc:
            if not is_transient(exc):
                translated = _permanent(exc, what)
                if translated is exc:
                    raise
                raise translated from exc
            retry += 1
            pause = policy.pause(retry)
            left = end - time.monotonic()
            if retry > policy.retries or left < pause + _MIN_ATTEMPT:
                elapsed = time.monotonic() - start
                raise StoreUnavailableError(
                    f"{what} failed after {retry} attempt(s) in {elapsed:.1f}s "
                    f"(deadline {policy.deadline:g}s, {policy.retries} retries): "
                    f"{type(exc).__name__}: {exc or 'no detail'}. Check that the Chroma "
                    "server is running and reachable; ragbrain reconnects on the next call."
                ) from exc
            log.warning(
                "%s: %s (%s); retry %d in %.2fs", what, type(exc).__name__, exc, retry, pause
            )
            time.sleep(pause)
        finally:
            _ATTEMPT_TIMEOUT.reset(token)


def bound_requests(client: ClientAPI) -> None:
    """Make every HTTP request of ``client`` wait at most ``attempt_timeout()``.

    chromadb's HttpClient builds its httpx session with ``timeout=None`` and exposes no
    setting for it, so a frozen server would block a caller forever. This wraps the
    session's ``request`` to pass the current attempt's timeout.

    Raises:
        StoreUnavailableError: This chromadb version keeps its session elsewhere.
    """
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if not isinstance(session, httpx.Client):
        import chromadb

        raise StoreUnavailableError(
            f"chromadb {chromadb.__version__} keeps no httpx session where ragbrain expects "
            "one, so requests could not be given a timeout; install chromadb>=1.0,<2."
        )
    send = session.request

    def request(method: str, url: Any, **kwargs: Any) -> httpx.Response:
        kwargs.setdefault("timeout", attempt_timeout() or StorePolicy.attempt_timeout)
        return send(method, url, **kwargs)

    session.request = request  # type: ignore[method-assign]


# --- clients: a folder or a server ---


def embedded_client(path: Path) -> ClientAPI:
    """A client that reads the folder as it is now: never the segments chromadb cached for
    the path when this process opened it before (``processes.fresh_client``)."""
    from ragbrain.store.processes import fresh_client

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
    """An HttpClient whose every request has a timeout (see ``bound_requests``)
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


# --- the collection and its checks ---


def open_collection(
    client: ClientAPI,
    where: str,
    hint: str,
    *,
    embeddings: Embeddings | None,
    model: str | None = None,
    create: bool,
    convert_space: bool,
    policy: StorePolicy,
) -> tuple[Collection, Embeddings]:
    """The ragbrain collection behind ``client``, checked (and with ``create``, made), and
    the embeddings that read it.

    Args:
        client: The Chroma client (``connect``).
        where: The folder or server, for messages.
        hint: The CLI option that names it (``--store DIR``), for messages.
        embeddings: The model that embeds chunks and queries; None loads the model the
            collection records (``embeddings_for``), or for a new one the default.
        model: ``embeddings``' name, as the store records it (``Store.open`` gives it).
        create: Create the collection if it is missing.
        convert_space: Copy a collection of another distance space into a cosine one.
        policy: Deadline and retries of each Chroma call.

    Raises:
        StoreNotFoundError: No collection there and ``create`` is false.
        StoreMismatchError: Another distance space (without ``convert_space``) or dimension,
            another model ragbrain knows by name, or (``embeddings`` None) a model it cannot
            load.
    """
    existing: Collection | None
    try:
        existing = call(
            policy,
            f"Opening the collection at {where}",
            lambda: client.get_collection(COLLECTION, embedding_function=None),
        )
    except StoreNotFoundError:
        if not create:
            raise StoreNotFoundError(
                f"{where} holds no ragbrain collection. Create one with "
                f"`ragbrain ingest NOTES_DIR {hint}`."
            ) from None
        existing = None
    if embeddings is None:
        embeddings, model = _recorded_embeddings(existing, where)
    if model is None:
        raise InvalidInputError("open_collection needs the name of the embeddings it is given.")
    dimension = len(embeddings.embed_query("dimension probe"))
    if existing is not None:
        collection = existing
    else:
        collection = call(
            policy,
            f"Creating the collection at {where}",
            lambda: client.get_or_create_collection(
                COLLECTION,
                metadata={MODEL_KEY: model, DIMENSION_KEY: dimension},
                configuration={"hnsw": {"space": "cosine"}},
                embedding_function=None,
            ),
        )
    found = space(collection)
    if found != "cosine":
        if not convert_space:
            raise StoreMismatchError(
                f"The collection in {where} uses the {found!r} distance space; ragbrain "
                "needs 'cosine'. Pass convert_space=True (CLI: --convert-space) to copy it "
                "into a cosine collection."
            )
        old = collection
        collection = call(
            policy,
            f"Converting the collection at {where}",
            lambda: convert_to_cosine(client, old, model, dimension),
        )
    checked = collection
    call(
        policy,
        f"Checking the collection at {where}",
        lambda: check_dimension(checked, where, model, dimension),
    )
    return collection, embeddings


def _recorded_embeddings(collection: Collection | None, where: str) -> tuple[Embeddings, str]:
    """The embeddings of the model a collection records (the default for a new store), and
    its name (the registry loads a model by the name stores record)."""
    recorded = None if collection is None else (collection.metadata or {}).get(MODEL_KEY)
    if recorded is not None and recorded not in EMBEDDING_CHOICES.values():
        raise StoreMismatchError(
            f"The store in {where} was built with {recorded!r}, which ragbrain cannot load by "
            "name: pass the same embeddings object (Python: Store.open(path, embeddings))."
        )
    name = default_profile().name if recorded is None else str(recorded)
    return embeddings_for(name), name


def _known_model(name: object) -> bool:
    return name in EMBEDDING_CHOICES.values()


def _choice_of(name: str) -> str:
    return next((key for key, value in EMBEDDING_CHOICES.items() if value == name), name)


def space(collection: Collection) -> str:
    config: dict[str, Any] = dict(collection.configuration or {})
    for index in ("hnsw", "spann"):
        if config.get(index):
            return str(config[index].get("space", "l2"))
    return str((collection.metadata or {}).get("hnsw:space", "l2"))


def check_dimension(collection: Collection, folder: str, model: str, dimension: int) -> None:
    meta = collection.metadata or {}
    stored = meta.get(DIMENSION_KEY)
    if stored is None and collection.count():
        sample = collection.peek(1)["embeddings"]
        stored = len(sample[0]) if sample is not None and len(sample) else None
    if stored is not None and int(stored) != dimension:
        raise StoreMismatchError(
            f"The store in {folder} holds {stored}-dimensional vectors "
            f"(model {meta.get(MODEL_KEY, 'unknown')!r}) but {model!r} makes {dimension}-"
            "dimensional ones. Use the model the store was built with, or ingest into a new store"
            + (
                f", or re-embed this one: `ragbrain ingest NOTES_DIR --store {folder} "
                f"--embedding {_choice_of(model)} --re-embed`."
                if _known_model(model) and _known_model(meta.get(MODEL_KEY))
                else "."
            )
        )
    recorded = meta.get(MODEL_KEY)
    if recorded not in (None, model) and _known_model(recorded) and _known_model(model):
        choice = _choice_of(str(recorded))
        raise StoreMismatchError(
            f"The store in {folder} was built with {recorded!r}; its distances mean nothing "
            f"to {model!r} (the same dimension does not make them comparable). Open it "
            f"without choosing a model (readers use the store's), keep ingesting with "
            f"`--embedding {choice}`, or re-embed the store with the other model: "
            f"`ragbrain ingest NOTES_DIR --store {folder} --embedding {_choice_of(model)} "
            "--re-embed` (NOTES_DIR: the folder it was ingested from)."
        )
    if recorded not in (None, model):
        log.warning(
            "The store in %s was built with %r, queried with %r (same dimension).",
            folder,
            meta.get(MODEL_KEY),
            model,
        )


def convert_to_cosine(client: ClientAPI, old: Collection, model: str, dimension: int) -> Collection:
    """Copy every record into a new cosine collection, then swap it in under the old name."""
    log.warning("Converting the collection %r to the cosine space.", old.name)
    staging = f"{COLLECTION}-cosine-staging"
    existing = {c.name for c in client.list_collections()}
    if staging in existing:
        client.delete_collection(staging)
    new = client.create_collection(
        staging,
        metadata={
            **{k: v for k, v in (old.metadata or {}).items() if not k.startswith("hnsw:")},
            MODEL_KEY: model,
            DIMENSION_KEY: dimension,
        },
        configuration={"hnsw": {"space": "cosine"}},
        embedding_function=None,
    )
    total = old.count()
    for offset in range(0, total, BATCH):
        page = old.get(limit=BATCH, offset=offset, include=["documents", "metadatas", "embeddings"])
        new.add(
            ids=page["ids"],
            documents=page["documents"],
            metadatas=page["metadatas"],
            embeddings=page["embeddings"],
        )
    client.delete_collection(old.name)
    new.modify(name=COLLECTION)
    return new
