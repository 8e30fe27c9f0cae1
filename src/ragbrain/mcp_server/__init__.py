"""`ragbrain mcp`: the retriever as a Model Context Protocol server for AI coding agents."""

from ragbrain.mcp_server.server import build_server, serve
from ragbrain.mcp_server.service import RagbrainService

__all__ = ["RagbrainService", "build_server", "serve"]
