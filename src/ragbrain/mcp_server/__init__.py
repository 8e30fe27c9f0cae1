"""`ragbrain mcp`: the retriever as a Model Context Protocol server for AI coding agents."""

from ragbrain._util import require

# Checked first, so a missing SDK says which extra installs it instead of a bare ImportError.
require("mcp", extra="mcp", feature="The MCP server (`ragbrain mcp`)")

from ragbrain.mcp_server.server import build_server, serve  # noqa: E402
from ragbrain.mcp_server.service import RagbrainService  # noqa: E402

__all__ = ["RagbrainService", "build_server", "serve"]
