"""A blocking wrapper around the MCP SDK's own stdio client, so tests can share one server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TextIO

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, InitializeResult, Tool

# The first call waits for the server to load the embedding model on a busy CI machine.
CALL_TIMEOUT_S = 300.0


class McpClient:
    """One initialized session with a spawned server; calls block until answered."""

    def __init__(
        self, portal: BlockingPortal, session: ClientSession, init: InitializeResult
    ) -> None:
        self.portal = portal
        self.session = session
        self.init = init

    def list_tools(self) -> list[Tool]:
        return self.portal.call(self.session.list_tools).tools

    def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        async def call() -> CallToolResult:
            return await self.session.call_tool(
                name, arguments, read_timeout_seconds=CALL_TIMEOUT_S
            )

        return self.portal.call(call)


@contextmanager
def connect(params: StdioServerParameters, errlog: TextIO) -> Iterator[McpClient]:
    """Spawn the server, initialize a session, and close both on exit."""

    @asynccontextmanager
    async def session() -> AsyncIterator[McpClient]:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client,
        ):
            init = await client.initialize()
            yield McpClient(portal, client, init)

    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(session()) as client,
    ):
        yield client
