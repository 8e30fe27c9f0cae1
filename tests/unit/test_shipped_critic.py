"""The shipped critic's calibration (read as a file, no model loaded): every embedding model a
store can choose has its own distance layer, with a usable cut and a record of its fit."""

from __future__ import annotations

from ragbrain.critic.folder import default_critic_path, distance_layers, read_calibration
from ragbrain.models.embeddings import EMBEDDING_CHOICES


def test_every_store_model_has_a_distance_layer() -> None:
    layers = distance_layers(read_calibration(default_critic_path()))
    assert sorted(layers) == sorted(EMBEDDING_CHOICES.values())
    for model, layer in layers.items():
        assert 0.0 < layer["threshold"] < 1.0, model
        assert "dev" in layer or "fit" in layer, f"{model}: no record of how it was fit"
