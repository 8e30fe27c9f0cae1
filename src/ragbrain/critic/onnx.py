"""The critic's cross-encoder on ONNX Runtime, int8 (``RAGBRAIN_BACKEND=onnx``).

Only the transformer layers and the head move: tokenization, the lexical and list features
and the combiner stay as they are. The model is exported from the critic as loaded (its
folder's tensors plus its base's word table) and quantized like the embedding models
(``CRITIC_QUANTIZATION``), once, into the cache.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from ragbrain.critic.folder import MODEL_INPUTS, base_folder
from ragbrain.models.onnx_backend import OPSET, QUANTIZATION, quantize, runtime, session
from ragbrain.models.onnx_cache import cached_export, source_key

INT8_FILE = "critic_int8.onnx"
#: As the embedding models: of the int8 layouts tried, the one whose keep/drop decisions stay
#: closest to the calibrated torch critic's (docs/onnx.md); torch's own layout (per-tensor,
#: reduced range, every Linear) drifted furthest.
CRITIC_QUANTIZATION: dict[str, Any] = dict(QUANTIZATION)
INPUTS = [name for name, _ in MODEL_INPUTS]


def _export(model: Any) -> Any:
    def export(target: Path) -> dict[str, Any]:
        import torch

        class Logits(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
                logits: torch.Tensor = self.model(**dict(zip(INPUTS, inputs, strict=True))).logits
                return logits

        dummy = tuple(torch.ones(2, 8, dtype=torch.long) for _ in INPUTS)
        fp32 = target / "critic_fp32.onnx.tmp"
        axes = {name: {0: "batch", 1: "tokens"} for name in INPUTS}
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's notes on ops it rewrites
            torch.onnx.export(
                Logits().eval(),
                dummy,
                str(fp32),
                input_names=INPUTS,
                output_names=["logits"],
                dynamic_axes={**axes, "logits": {0: "batch"}},
                opset_version=OPSET,
                dynamo=False,
            )
        quantize(fp32, target / INT8_FILE, CRITIC_QUANTIZATION)
        fp32.unlink()
        return {"quantization": CRITIC_QUANTIZATION}

    return export


class OnnxCriticModel:
    """The critic model's logits from its int8 ONNX export: ``logits(batch)`` takes the
    ``pair_batch`` tensors and returns a float tensor of shape (n, num_labels)."""

    def __init__(self, folder: Path, model: Any, calibration: dict[str, Any]) -> None:
        """Export (first time) and load the critic model of ``folder``.

        Args:
            folder: The critic folder (its files key the export).
            model: The critic's torch model as loaded (fp32), what is exported.
            calibration: The folder's calibration (``base`` adds the base weights to the key).

        Raises:
            MissingExtraError: ONNX Runtime or onnx is not installed.
            OnnxExportError: The export failed.
        """
        runtime()
        sources = [p for p in folder.iterdir() if p.suffix in (".json", ".safetensors")]
        if calibration.get("base"):
            sources.append(base_folder(calibration["base"]) / "model.safetensors")
        key = source_key(sources, json.dumps(CRITIC_QUANTIZATION, sort_keys=True), str(OPSET))
        self.export_folder = cached_export(
            f"critic-{folder.name}-int8-{key}", _export(model), what=f"critic {folder}"
        )
        self.session = session(self.export_folder / INT8_FILE)

    def logits(self, batch: dict[str, Any]) -> Any:
        """Logits for one ``pair_batch``, as a float32 torch tensor."""
        import torch

        feed = {name: batch[name].numpy() for name in INPUTS}
        return torch.from_numpy(self.session.run(None, feed)[0])
