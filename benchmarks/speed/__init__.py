"""Speed benchmarks behind one entry point, one subcommand each (``python -m benchmarks.speed``).

    python -m benchmarks.speed critic [...]                      the critic step alone
    python -m benchmarks.speed e5 [...]                          e5-small against MiniLM
    python -m benchmarks.speed onnx [...]                        torch fp32 against ONNX int8
    python -m benchmarks.speed filter {types,scopes} [...]       filtered vs unfiltered search
    python -m benchmarks.speed ingest {notes,pdf} [...]          ingestion vs the raw encoder
    python -m benchmarks.speed mcp {roundtrip,tools,http,first-search} [...]   the MCP server

Each subcommand is a module of this package with its own options (``... critic --help``) and
writes its JSON and Markdown to benchmarks/results/ under the names its docstring gives.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

#: Each subcommand's module (in this package) and what it measures.
COMMANDS = {
    "critic": "the critic step alone: load time, memory, p50/p95 for batches of 10 chunks",
    "e5": "e5-small against MiniLM: ingest speed, query embedding, memory",
    "onnx": "torch fp32 against ONNX Runtime int8: speed, agreement, quality",
    "filter": "filtered vs unfiltered search at 100k synthetic chunks (types, scopes)",
    "ingest": "ingestion throughput vs the raw encoder (notes, pdf)",
    "mcp": "the MCP server's cost (roundtrip, tools, http, first-search)",
}


def usage() -> str:
    """The subcommands, one a line."""
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {what}" for name, what in COMMANDS.items()]
    return "usage: python -m benchmarks.speed COMMAND [ARGS ...]\n\ncommands:\n" + "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Run one subcommand's module with the remaining arguments as its own."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help"}:
        print(usage())
        sys.exit(0 if args else 2)
    command, *rest = args
    if command not in COMMANDS:
        print(f"unknown benchmark {command!r}\n\n{usage()}", file=sys.stderr)
        sys.exit(2)
    module = importlib.import_module(f"benchmarks.speed.{command}")
    sys.argv = [f"python -m benchmarks.speed {command}", *rest]
    module.main()
