"""ragbrain's MCP server over a store of the fake model, whose store crashes when searched.

Run as ``python -m tests.support.mcp_fake_server STORE [ALLOWED_DIR ...]``. Any search that reaches
the store raises an internal error carrying SECRET: a bad argument must be refused before
that, and the crash itself must reach the client without SECRET or a traceback.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import NoReturn

from ragbrain.mcp_server import RagbrainService, serve
from ragbrain.store import Store
from tests.support.fakes import BagOfWordsEmbeddings

SECRET = "internal detail: /srv/secret/path must stay on the server"


def crash(*args: object, **kwargs: object) -> NoReturn:
    raise RuntimeError(SECRET)


def main(argv: Sequence[str]) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    store, *allowed = argv
    Store.search = crash  # type: ignore[method-assign]
    service = RagbrainService(
        store, allowed=allowed, critic=None, embeddings=BagOfWordsEmbeddings()
    )
    serve(service)


if __name__ == "__main__":
    main(sys.argv[1:])
