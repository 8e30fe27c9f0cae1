"""Give a critic a distance layer for another embedding model, without retraining it.

The critic's encoder and lexical features do not depend on the store's embedding model; only
its distance layer does (it reads the retriever's cosine distances, whose scale is the
model's own). A layer for another model is a logistic combiner fit on that model's
distances (``benchmarks.lodo --embedding MODEL --ship-layer``: fit on every shared set's
train/dev lists, the choice of columns and the threshold made leave-one-domain-out). This
module writes such a layer into a critic folder's ``calibration.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ragbrain._util import write_text
from ragbrain.critic.folder import CALIBRATION_FILE, MORE_DISTANCE, WITH_DISTANCE, read_calibration
from ragbrain.errors import CriticLoadError


def add_distance_layer(folder: Path, layer: dict[str, Any]) -> dict[str, Any]:
    """Write ``layer`` into ``folder``'s calibration, replacing the layer of its model.

    Args:
        folder: A critic folder (its calibration is checked before and after).
        layer: ``embedding_model``, ``threshold``, ``combiner`` (over ``DISTANCE_INPUTS`` or
            ``DISTANCE_LIST_INPUTS``) and optionally ``dev``/``fit`` records.

    Returns:
        The calibration as written.

    Raises:
        CriticLoadError: The folder's calibration, or the layer, does not check; the file is
            then left as it was.
    """
    calibration = read_calibration(folder)
    model = layer.get("embedding_model")
    first = calibration.get(WITH_DISTANCE)
    if first is not None and first["embedding_model"] == model:
        calibration[WITH_DISTANCE] = layer
    else:
        others = [m for m in calibration.get(MORE_DISTANCE, []) if m["embedding_model"] != model]
        calibration[MORE_DISTANCE] = [*others, layer]
    path = folder / CALIBRATION_FILE
    before = path.read_text(encoding="utf-8")
    write_text(path, json.dumps(calibration, indent=2) + "\n")
    try:
        read_calibration(folder)
    except CriticLoadError:
        write_text(path, before)
        raise
    return calibration
