"""`ragbrain mcp`: the retriever as a Model Context Protocol server for AI coding agents."""

from typing import Any

from ragbrain._util import installed

# Checked first, so a missing SDK says which extra installs it instead of a bare ImportError;
# checked without importing it: `ragbrain mcp` imports the SDK (about a second) while the
# models already load (``RagbrainService.start_loading``).
installed("mcp", extra="mcp", feature="The MCP server (`ragbrain mcp`)")

from ragbrain.mcp_server.service import RagbrainService  # noqa: E402

__all__ = ["RagbrainService", "build_server", "serve"]


def __getattr__(name: str) -> Any:
    """``build_server`` and ``serve``, importing the SDK on first use."""
    if name in ("build_server", "serve"):
        from ragbrain.mcp_server import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
