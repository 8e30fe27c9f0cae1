"""A critic folder on disk: its files, loading them (safetensors only) and checking
``calibration.json`` and the weights before anything is trusted."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.critic.features import DISTANCE_LIST_NAMES, FEATURE_NAMES, LIST_NAMES
from ragbrain.errors import CriticLoadError, InvalidInputError
from ragbrain.models.embeddings import model_path
from ragbrain.models.profiles import default_profile, profiles
from ragbrain.refusal.abstain import AbstainThresholds

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

CALIBRATION_FILE = "calibration.json"
WEIGHTS_FILE = "model.safetensors"
FEATURES_FILE = "features.safetensors"
ACTIVATIONS = ("sigmoid", "softmax")
#: ``calibration["base"]`` values: the encoder a critic was cut from, whose frozen word
#: embeddings the folder leaves out and whose tokenizer it reads when it has none of its own.
#: Each model profile's ``critic_base`` (``ragbrain.models.profiles``), the default model's first.
BASES = tuple(p.critic_base for p in profiles())
#: ``ragbrain critic train --base`` names of the bases (the models' ``--embedding`` choices).
BASE_CHOICES = {p.choice: p.critic_base for p in profiles()}
#: The base of a critic folder that names none.
DEFAULT_BASE = default_profile().critic_base
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")
WORD_VECTORS = "bert.embeddings.word_embeddings.weight"
MODEL_INPUTS = (
    ("input_ids", "ids"),
    ("token_type_ids", "type_ids"),
    ("attention_mask", "attention_mask"),
)


def default_critic_path() -> Path:
    """Where the package keeps its trained default critic."""
    return Path(__file__).parent / "default"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


#: The combiner columns: the model logit and the lexical features; the distance layer adds the
#: retriever's cosine distance of each chunk. A list-aware layer (what training writes) also
#: reads the list columns of the chunk's candidate list (``features.list_columns``).
PLAIN_INPUTS = ("logit", *FEATURE_NAMES)
DISTANCE_INPUTS = (*PLAIN_INPUTS, "distance")
PLAIN_LIST_INPUTS = (*PLAIN_INPUTS, *LIST_NAMES)
DISTANCE_LIST_INPUTS = (*DISTANCE_INPUTS, *LIST_NAMES, *DISTANCE_LIST_NAMES)
#: ``calibration.json`` key of the layer that also reads the distance, and of the embedding
#: model whose distances it learned.
WITH_DISTANCE = "with_distance"
#: ``calibration.json`` key of the distance layers of further embedding models: a list of
#: objects shaped like ``with_distance`` (fit apart, on another model's distances; see
#: ``critic.training.distance_layer``). Each model has at most one layer.
MORE_DISTANCE = "more_distance_layers"


def check_combiner(path: Path, combiner: Any, layouts: Sequence[Sequence[str]]) -> None:
    """A logistic layer read from ``path``: ``inputs`` one of ``layouts``, one finite
    ``mean``, ``scale`` (> 0) and ``weights`` number per input, and a ``bias``.

    Raises:
        CriticLoadError: Naming ``path`` and what is wrong.
    """
    if not isinstance(combiner, dict):
        raise CriticLoadError(f"{path}: 'combiner' must be an object.")
    columns = combiner.get("inputs")
    if columns not in [list(layout) for layout in layouts]:
        expected = " or ".join(str(list(layout)) for layout in layouts)
        raise CriticLoadError(f"{path}: combiner 'inputs' must be {expected}, got {columns!r}.")
    for key in ("mean", "scale", "weights"):
        values = combiner.get(key)
        if (
            not isinstance(values, list)
            or len(values) != len(columns)
            or not all(_number(v) for v in values)
        ):
            raise CriticLoadError(f"{path}: combiner {key!r} must be {len(columns)} numbers.")
    if any(v <= 0 for v in combiner["scale"]) or not _number(combiner.get("bias")):
        raise CriticLoadError(f"{path}: combiner 'scale' must be > 0 and 'bias' a number.")


def check_threshold(path: Path, threshold: Any, where: str = "'threshold'") -> None:
    """A cut in [0, 1] read from ``path`` (``CriticLoadError`` naming ``where`` if not)."""
    if not _number(threshold) or not 0 <= threshold <= 1:
        raise CriticLoadError(f"{path}: {where} must be a number in [0, 1], got {threshold!r}.")


def _check_distance_layer(path: Path, layer: Any, where: str = WITH_DISTANCE) -> None:
    if not isinstance(layer, dict):
        raise CriticLoadError(f"{path}: {where!r} must be an object.")
    model = layer.get("embedding_model")
    if not isinstance(model, str) or not model:
        raise CriticLoadError(f"{path}: {where}.embedding_model must name a model.")
    check_threshold(path, layer.get("threshold"), f"{where}.threshold")
    check_combiner(path, layer.get("combiner"), (DISTANCE_INPUTS, DISTANCE_LIST_INPUTS))
    if "abstain" in layer:
        check_abstain(path, layer["abstain"], f"{where}.abstain")


def check_abstain(path: Path, record: Any, where: str) -> None:
    """An abstention record: ``critic_below``, ``distance_above`` and ``coverage_below``
    (``ragbrain.refusal.abstain.AbstainThresholds``; coverage may be null)."""
    if not isinstance(record, dict):
        raise CriticLoadError(f"{path}: {where} must be an object.")
    try:
        AbstainThresholds.from_record(record, where)
    except InvalidInputError as exc:
        raise CriticLoadError(f"{path}: {exc}") from exc


def _check_more_layers(path: Path, calibration: dict[str, Any]) -> None:
    layers = calibration[MORE_DISTANCE]
    if not isinstance(layers, list):
        raise CriticLoadError(f"{path}: {MORE_DISTANCE!r} must be a list of layers.")
    if "combiner" not in calibration:
        raise CriticLoadError(f"{path}: {MORE_DISTANCE!r} needs a 'combiner' beside it.")
    first = calibration.get(WITH_DISTANCE)
    seen = {first["embedding_model"]} if first else set()
    for number, layer in enumerate(layers):
        _check_distance_layer(path, layer, f"{MORE_DISTANCE}[{number}]")
        if layer["embedding_model"] in seen:
            raise CriticLoadError(
                f"{path}: two distance layers for {layer['embedding_model']!r}; keep one."
            )
        seen.add(layer["embedding_model"])


def distance_layers(calibration: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every distance layer of a checked calibration, by the embedding model it learned."""
    layers = [calibration[WITH_DISTANCE]] if WITH_DISTANCE in calibration else []
    layers += calibration.get(MORE_DISTANCE, [])
    return {str(layer["embedding_model"]): layer for layer in layers}


def read_calibration(folder: Path) -> dict[str, Any]:
    """Read and check ``calibration.json``; raise ``CriticLoadError`` naming any problem."""
    path = folder / CALIBRATION_FILE
    if not path.is_file():
        raise CriticLoadError(f"{path}: missing; a critic folder needs its calibration file.")
    try:
        calibration = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CriticLoadError(f"{path}: not valid JSON ({exc}).") from exc
    if not isinstance(calibration, dict):
        raise CriticLoadError(f"{path}: expected a JSON object.")
    check_threshold(path, calibration.get("threshold"))
    if calibration.get("activation") not in ACTIVATIONS:
        raise CriticLoadError(
            f"{path}: 'activation' must be one of {ACTIVATIONS}, "
            f"got {calibration.get('activation')!r}."
        )
    max_length = calibration.get("max_length", 256)
    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 8:
        raise CriticLoadError(f"{path}: 'max_length' must be an integer >= 8.")
    if calibration.get("base") not in (None, *BASES):
        raise CriticLoadError(
            f"{path}: 'base' must be one of {BASES} or absent, got {calibration.get('base')!r}."
        )
    if calibration.get("quantize") not in (None, "int8"):
        raise CriticLoadError(f"{path}: 'quantize' must be 'int8' or absent.")
    if "combiner" in calibration:
        check_combiner(path, calibration["combiner"], (PLAIN_INPUTS, PLAIN_LIST_INPUTS))
        if calibration["activation"] != "sigmoid":
            raise CriticLoadError(f"{path}: a combiner needs the 'sigmoid' activation.")
    if WITH_DISTANCE in calibration:
        if "combiner" not in calibration:
            raise CriticLoadError(f"{path}: {WITH_DISTANCE!r} needs a 'combiner' beside it.")
        _check_distance_layer(path, calibration[WITH_DISTANCE])
    if MORE_DISTANCE in calibration:
        _check_more_layers(path, calibration)
    return calibration


def read_tensors(path: Path) -> dict[str, torch.Tensor]:
    """Load a safetensors file; a pickle, a truncated file or garbage raises ``CriticLoadError``."""
    from safetensors.torch import load_file

    if not path.is_file():
        raise CriticLoadError(f"{path}: missing; critics load from safetensors weights only.")
    try:
        tensors: dict[str, torch.Tensor] = load_file(str(path))
    except Exception as exc:  # safetensors raises several unrelated types for a bad file
        raise CriticLoadError(f"{path}: not a readable safetensors file ({exc}).") from exc
    if not tensors:
        raise CriticLoadError(f"{path}: holds no tensors.")
    return tensors


def base_folder(base: str) -> Path:
    """The model folder of a critic base (``BASES``), from the model's back-end
    (``ragbrain.models.embeddings.model_path``).

    Raises:
        CriticLoadError: ``base`` is no known base, or its model cannot be loaded.
    """
    found = next((p for p in profiles() if p.critic_base == base), None)
    if found is None:
        raise CriticLoadError(f"No critic base {base!r}; known: {', '.join(BASES)}.")
    from ragbrain.errors import ModelLoadError

    try:
        return model_path(found.name)
    except ModelLoadError as exc:
        raise CriticLoadError(f"The critic's base {base}: {exc}") from exc


def tokenizer_folder(folder: Path, base: str | None) -> Path:
    """``folder`` when it holds a tokenizer of its own (``TOKENIZER_FILES``), else the folder
    of its ``base`` (``DEFAULT_BASE`` when it names none).

    Raises:
        CriticLoadError: ``base`` is no known base, or its model cannot be loaded.
    """
    if any((folder / name).is_file() for name in TOKENIZER_FILES):
        return folder
    return base_folder(base or DEFAULT_BASE)


def _base_tensors(base: str, names: Sequence[str]) -> dict[str, torch.Tensor]:
    """The tensors ``names`` (a ``BertForSequenceClassification``'s names) of a base encoder,
    those it has; read one by one, so a 12-layer base is not loaded whole for its embeddings."""
    from safetensors import safe_open

    path = base_folder(base) / WEIGHTS_FILE
    out: dict[str, torch.Tensor] = {}
    with safe_open(str(path), framework="pt") as f:
        stored = set(f.keys())
        for name in names:
            key = name.removeprefix("bert.")
            if name.startswith("bert.") and key in stored:
                out[name] = f.get_tensor(key)
    return out


def build_model(folder: Path, calibration: dict[str, Any], *, light: bool = False) -> Any:
    """Build the classifier from ``config.json`` and fill it strictly from safetensors.

    With ``light`` and a fp32 BERT config, the classifier is ``ragbrain.models.bert.BertClassifier``
    (the same logits without importing transformers' models, a large share of a cold query);
    otherwise transformers' ``AutoModelForSequenceClassification`` (what training, the ONNX
    export and other architectures use).
    """
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise CriticLoadError(f"{config_path}: missing.")
    tensors = read_tensors(folder / WEIGHTS_FILE)
    if light and _plain_bert(config_path):
        return _light_model(folder, calibration, tensors)
    from transformers import AutoConfig, AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
        model = AutoModelForSequenceClassification.from_config(config)  # type: ignore[no-untyped-call]
    except Exception as exc:  # transformers raises OSError, ValueError, KeyError ...
        raise CriticLoadError(f"{config_path}: not a usable model config ({exc}).") from exc
    _check_fit(folder, model.state_dict(), tensors, calibration)
    model.load_state_dict(tensors, strict=True)
    return model.eval()


def _plain_bert(config_path: Path) -> bool:
    """Whether ``config_path`` is a fp32 BERT config (one ``BertClassifier`` runs)."""
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # transformers' loader reports it
    return _is_plain_bert(config)


def _is_plain_bert(config: Any) -> bool:
    return (
        isinstance(config, dict)
        and config.get("model_type") == "bert"
        and config.get("dtype", config.get("torch_dtype")) in (None, "float32")
    )


def light_twin(model: Any) -> Any:
    """transformers' classifier ``model`` as a critic folder's torch backend will run it
    (``ragbrain.models.bert.BertClassifier``, sharing the weights) when it is a fp32 BERT; else
    ``model`` itself. Training calibrates on the twin: int8 logits depend on which positions
    each layer computes (the light model's last layer runs ``[CLS]`` alone), so only the
    model that loads later gives the scores the thresholds must be fit on."""
    config = model.config.to_dict()
    if not _is_plain_bert(config):
        return model
    from ragbrain.models.bert import BertClassifier, BertShape

    twin = BertClassifier(BertShape.of(config, "the trained model's config"))
    twin.load_state_dict(model.state_dict(), strict=True, assign=True)
    return twin.eval()


def _light_model(
    folder: Path, calibration: dict[str, Any], tensors: dict[str, torch.Tensor]
) -> Any:
    """``build_model`` on ``ragbrain.models.bert``, given the tensors as they are."""
    import torch

    from ragbrain.errors import ModelLoadError
    from ragbrain.models.bert import BertClassifier, BertShape

    config_path = folder / "config.json"
    try:
        shape = BertShape.read(config_path)
    except ModelLoadError as exc:
        raise CriticLoadError(f"{config_path}: not a usable model config ({exc}).") from exc
    model = BertClassifier(shape)
    _check_fit(folder, model.state_dict(), tensors, calibration)
    # A word table stored in fp16 (a multilingual base's large one) is kept so: half the
    # memory, and the lookup returns fp32, so the scores are the same (fp16 -> fp32 is exact).
    half = tensors[WORD_VECTORS].dtype == torch.float16
    if half:
        from ragbrain.models.e5.half import HalfEmbedding

        model.bert.embeddings.word_embeddings = HalfEmbedding(
            tensors[WORD_VECTORS], shape.pad_token_id
        )
    model.load_state_dict(
        {k: t if half and k == WORD_VECTORS else t.float() for k, t in tensors.items()},
        strict=True,
        assign=True,
    )
    return model.eval()


def _check_fit(
    folder: Path,
    expected: dict[str, torch.Tensor],
    tensors: dict[str, torch.Tensor],
    calibration: dict[str, Any],
) -> None:
    """Add the base model's tensors the folder lacks to ``tensors``, then check that they fit
    ``expected`` exactly (names and shapes).

    Raises:
        CriticLoadError: A tensor is missing, unexpected or of another shape.
    """
    base = calibration.get("base")
    if base in BASES:
        missing = [name for name in expected if name not in tensors]
        tensors.update(_base_tensors(base, missing))
    from ragbrain.models.bert import misfit

    problem = misfit(expected, tensors)
    if problem:
        raise CriticLoadError(
            f"{folder / WEIGHTS_FILE}: weights do not fit {folder / 'config.json'} ({problem})."
        )


def quantized(model: Any, *, inplace: bool = False) -> Any:
    """An int8 copy of ``model`` (dynamic quantization of its linear layers): what a critic
    whose calibration says ``"quantize": "int8"`` runs, at load time and when calibrated.
    ``inplace`` converts ``model`` itself instead (no copy of its word table)."""
    import warnings

    import torch

    with warnings.catch_warnings():  # torch deprecates eager quantization; it still works
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
            model, {torch.nn.Linear}, dtype=torch.qint8, inplace=inplace
        )


def tokenizer_engine(tokenizer: Any) -> Any:
    """A private copy of a fast tokenizer's ``tokenizers.Tokenizer``, without padding or
    truncation, so settings made on it reach nobody else."""
    from tokenizers import Tokenizer

    if not getattr(tokenizer, "is_fast", False):
        raise CriticLoadError(f"{type(tokenizer).__name__}: the critic needs a fast tokenizer.")
    engine = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    engine.no_padding()
    engine.no_truncation()
    return engine


def pair_engine(engine: Any, max_length: int) -> Any:
    """A ``tokenizers.Tokenizer`` that only joins and cuts already tokenized (query, passage)
    pairs (``post_process``): ``engine``'s post-processor and ``max_length`` longest-first
    truncation around a one-word vocabulary. A full second copy of the engine would cost its
    vocabulary again (docs/multilingual.md)."""
    import json

    from tokenizers import Tokenizer

    spec = json.loads(engine.to_str())
    spec.update(
        normalizer=None,
        pre_tokenizer=None,
        decoder=None,
        added_tokens=[],
        padding=None,
        truncation=None,
        model={"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
    )
    pairs = Tokenizer.from_str(json.dumps(spec))
    pairs.enable_truncation(max_length, strategy="longest_first")
    return pairs


def check_activation(folder: Path, activation: str, labels: int) -> None:
    if (activation, labels) not in (("sigmoid", 1), ("softmax", 2)):
        raise CriticLoadError(
            f"{folder / CALIBRATION_FILE}: activation {activation!r} does not fit "
            f"a model with {labels} output label(s) (sigmoid needs 1, softmax 2)."
        )
