"""`ragbrain mcp`: the retriever as a tool server for AI coding agents."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ragbrain.cli.common import (
    DEFAULT_MODEL,
    MODEL_CHOICES,
    ServerOption,
    StoreOption,
    app,
    fail,
)
from ragbrain.errors import InvalidInputError, RagbrainError

if TYPE_CHECKING:
    pass


@app.command()
def mcp(
    store: StoreOption = None,
    server: ServerOption = None,
    allow: Annotated[
        list[Path] | None,
        typer.Option("--allow", help="A folder the ingest tool may read (repeatable)."),
    ] = None,
    critic: Annotated[bool, typer.Option(help="Run the critic (when one is installed).")] = True,
    abstain: Annotated[
        str,
        typer.Option(
            "--abstain",
            help="Refusal in search: 'on' answers nothing (answerable: false, with the reason) "
            "to a question the notes are not about; 'strict' also when the answer seems "
            "missing; 'off' never refuses.",
        ),
    ] = "on",
    watch: Annotated[
        bool, typer.Option("--watch", help="Keep the --allow folders in step, as `watch` does.")
    ] = False,
    inbox: Annotated[
        Path | None,
        typer.Option("--inbox", help="A folder inside an --allow one that remember writes to."),
    ] = None,
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            help="Serve streamable HTTP at HOST:PORT (one process, many clients) instead of stdio.",
            metavar="HOST:PORT",
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file", help="With --http: the bearer token [default: $RAGBRAIN_MCP_TOKEN]."
        ),
    ] = None,
    no_auth: Annotated[
        bool, typer.Option("--no-auth", help="With --http on 127.0.0.1 only: no token.")
    ] = False,
    embedding: Annotated[
        str | None,
        typer.Option(
            "--embedding",
            help=f"Model of the store if the ingest tool creates it: {MODEL_CHOICES} "
            f"[default: the store's own; {DEFAULT_MODEL.choice} for a new store].",
        ),
    ] = None,
) -> None:
    """Serve search, get, remember, ingest and stats to AI coding agents over MCP (stdio).

    With --server (or $RAGBRAIN_SERVER), the tools use a team's Chroma server instead of a
    store folder; a token goes as for every command: ragbrain --server-token-file FILE mcp
    --server https://HOST (or $RAGBRAIN_SERVER_TOKEN_FILE).

    stdout carries only protocol messages; logs go to stderr. The models load once, in a
    background thread started before the MCP SDK is even imported, so they load while the
    client connects and initializes; a call that arrives earlier waits for them.
    """
    import logging

    try:
        from ragbrain.mcp_server import RagbrainService
        from ragbrain.mcp_server.http import check_bind
    except RagbrainError as exc:  # the [mcp] extra is not installed
        raise fail(exc) from exc

    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s: %(message)s"
    )
    try:
        if http is None and (token_file is not None or no_auth):
            raise InvalidInputError("--token-file and --no-auth need --http HOST:PORT.")
        bind = None if http is None else check_bind(http, token_file, no_auth)
        from ragbrain.models.embeddings import embeddings_for
        from ragbrain.query.inputs import check_abstain
        from ragbrain.store.connect import ServerAccess, check_location

        check_location(store, server, create=True)  # before any model loads
        if server:
            ServerAccess.from_env()  # an unreadable token file is said now, not per call
        service = RagbrainService(
            store,
            server=server,
            allowed=allow or [],
            critic="default" if critic else None,
            inbox=inbox,
            watch=watch,
            abstain=check_abstain(abstain),
            embeddings=embeddings_for(embedding) if embedding else None,
        )
    except RagbrainError as exc:
        raise fail(exc) from exc
    if bind is None:
        service.start_loading()  # while the SDK imports and the client initializes
        from ragbrain.mcp_server.server import serve

        serve(service)
    else:
        from ragbrain.mcp_server.http import serve_http

        serve_http(service, bind)
