"""Optional features: import their packages on first use, or say which extra installs them."""

from __future__ import annotations

import importlib
from types import ModuleType

from ragbrain.errors import MissingExtraError


def require(
    module: str, *, feature: str, extra: str | None = None, fix: str | None = None
) -> ModuleType:
    """Import ``module`` for ``feature``, or fail naming the install command.

    Args:
        module: The module to import, e.g. ``"matplotlib"``.
        feature: What needs it, for the message (``"Evaluation plots"``).
        extra: The ragbrain extra that installs it (``eval``, ``mcp``, ...).
        fix: What to do instead, for a core dependency (no extra installs it).

    Raises:
        MissingExtraError: ``module`` is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module.partition(".")[0]
        way_out = fix or f"pip install 'ragbrain[{extra}]'"
        raise MissingExtraError(
            f"{feature} needs {package}, which is not installed: {way_out}"
        ) from exc
