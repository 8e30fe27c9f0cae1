"""Optional features: import their packages on first use, or say which extra installs them."""

from __future__ import annotations

import importlib
from types import ModuleType

from ragbrain.errors import MissingExtraError


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module`` for ``feature``, or fail naming the install command.

    Args:
        module: The module to import, e.g. ``"matplotlib"``.
        extra: The ragbrain extra that installs it (``eval``, ``mcp``, ...).
        feature: What needs it, for the message (``"Evaluation plots"``).

    Raises:
        MissingExtraError: ``module`` is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module.partition(".")[0]
        raise MissingExtraError(
            f"{feature} needs {package}, which is not installed: pip install 'ragbrain[{extra}]'"
        ) from exc
