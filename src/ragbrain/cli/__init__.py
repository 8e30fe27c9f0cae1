"""The command line: parse, call the library, print; one module per group of commands.
`ragbrain --help` lists them, in the order they are imported here."""

from ragbrain.cli.common import app

# isort: split
from ragbrain.cli import notes  # noqa: F401  (each module registers its commands)

# isort: split
from ragbrain.cli import search  # noqa: F401

# isort: split
from ragbrain.cli import evaluation  # noqa: F401

# isort: split
from ragbrain.cli import critic, mcp  # noqa: F401

__all__ = ["app"]
