"""What every command shares: the Typer app, the consoles, the store options, one error exit."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from ragbrain.errors import InvalidInputError
from ragbrain.models.profiles import chosen_for, default_profile, profiles

#: The ``--embedding`` choices as help text names them (``ragbrain.models.profiles``).
MODEL_CHOICES = " or ".join(p.choice for p in profiles())
#: The model of a new store, and the ones chosen for English and for other notes.
DEFAULT_MODEL = default_profile()
ENGLISH_MODEL = chosen_for("english")
MULTILINGUAL_MODEL = chosen_for("multilingual")


# A command runs small forward passes (one query, ten critic pairs): torch's OpenMP threads
# busy-waiting between them cost more than they gain, and on a busy machine each pass waits
# for a spinning thread (docs/decisions/measured-costs.md). Set before torch loads libgomp; a
# value already set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

app = typer.Typer(
    help="ragbrain: a corrective retriever for your notes.",
    no_args_is_help=True,
    rich_markup_mode=None,  # help texts say [default: ...] literally; it is not markup
)
# Nothing printed is Rich markup: paths, notes and messages are printed as they are (a
# `[mcp]` or a `/tmp/x[y]/store` stays whole); styles are passed as `style=` or `Text`.
out = Console(soft_wrap=True, markup=False)
err = Console(stderr=True, soft_wrap=True, markup=False)

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        help="Store folder [default: $RAGBRAIN_STORE or ~/.local/share/ragbrain/store].",
        show_default=False,
    ),
]
ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        envvar="RAGBRAIN_SERVER",
        help="A Chroma server, http://HOST:PORT, instead of --store [env: RAGBRAIN_SERVER].",
        show_default=False,
    ),
]

TypeOption = Annotated[
    str | None, typer.Option("--type", help="Note type [default: front matter, else folder].")
]
PruneOption = Annotated[bool, typer.Option(help="Delete chunks of files no longer in the folder.")]
ConvertSpaceOption = Annotated[
    bool, typer.Option(help="Copy a non-cosine collection into a cosine one.")
]


def fail(exc: Exception) -> typer.Exit:
    """Print ``exc`` as one line on stderr; exit 2 for bad input, 1 otherwise."""
    err.print(Text("error:", style="red"), str(exc), highlight=False)
    return typer.Exit(2 if isinstance(exc, InvalidInputError | FileNotFoundError) else 1)


@app.callback()
def server_access(
    server_token_file: Annotated[
        Path | None,
        typer.Option(
            "--server-token-file",
            envvar="RAGBRAIN_SERVER_TOKEN_FILE",
            help="With --server: a file holding the token a secured Chroma server (or a proxy "
            "in front of it) wants (or the token itself in "
            "RAGBRAIN_SERVER_TOKEN).",
            show_default=False,
        ),
    ] = None,
    server_auth: Annotated[
        str,
        typer.Option(
            "--server-auth",
            envvar="RAGBRAIN_SERVER_AUTH",
            help="How the token is sent: 'token' (X-Chroma-Token, Chroma's own) or 'bearer' "
            "(Authorization: Bearer, for a proxy).",
        ),
    ] = "token",
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            envvar="RAGBRAIN_TENANT",
            help="With --server: the Chroma tenant [default: Chroma's].",
            show_default=False,
        ),
    ] = None,
    database: Annotated[
        str | None,
        typer.Option(
            "--database",
            envvar="RAGBRAIN_DATABASE",
            help="With --server: the Chroma database [default: Chroma's].",
            show_default=False,
        ),
    ] = None,
) -> None:
    """ragbrain: a corrective retriever for your notes.

    Options before the command reach a Chroma server with auth: ragbrain --server-token-file
    FILE query TEXT --server http://HOST:PORT.
    """
    from ragbrain.paths import (
        DATABASE_ENV,
        SERVER_AUTH_ENV,
        SERVER_TOKEN_FILE_ENV,
        TENANT_ENV,
    )

    for name, value in (
        (SERVER_TOKEN_FILE_ENV, None if server_token_file is None else str(server_token_file)),
        (SERVER_AUTH_ENV, server_auth),
        (TENANT_ENV, tenant),
        (DATABASE_ENV, database),
    ):
        if value is not None:
            os.environ[name] = value  # read where the client is made (ServerAccess.from_env)
