"""TransformerCritic: a cross-encoder loaded from a critic folder, scoring (query, chunk) pairs
with its calibrated layer on top."""

from __future__ import annotations

import copy
import functools
import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragbrain.critic.base import keep_across_languages
from ragbrain.critic.combiner import combine
from ragbrain.critic.features import LexicalFeatures, list_columns
from ragbrain.critic.folder import (
    DISTANCE_INPUTS,
    FEATURES_FILE,
    MODEL_INPUTS,
    PLAIN_INPUTS,
    WITH_DISTANCE,
    build_model,
    check_activation,
    distance_layers,
    pair_engine,
    quantized,
    read_calibration,
    read_tensors,
    tokenizer_engine,
    tokenizer_folder,
)
from ragbrain.critic.onnx import OnnxCriticModel
from ragbrain.errors import CriticLoadError
from ragbrain.models.embeddings import set_offline
from ragbrain.refusal.abstain import AbstainThresholds

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

#: How ``TransformerCritic.inputs`` computes a folder's per-pair inputs; caches of them (the
#: benchmarks') key on it, so it changes whenever the numbers may (an int8 forward pass that
#: runs other rows gets other activation scales, hence logits about 0.1 apart).
INPUTS_VERSION = 2


class TransformerCritic:
    """A cross-encoder critic: (query, chunk) -> relevance probability.

    The folder holds ``config.json``, ``model.safetensors`` and ``calibration.json`` (threshold,
    activation, max_length; optionally ``base``, ``quantize``, a ``combiner``, a logistic
    layer over the model logit and the lexical features of ``features.safetensors``, and a
    ``with_distance`` layer that also reads the retriever's cosine distance). With
    ``base`` (a model profile's ``critic_base``, ``ragbrain.critic.folder.BASES``) the tensors
    the folder lacks (the word embeddings) come from that model, and so does the tokenizer when
    the folder has none (without a base, the default model's).

    The distance layer only means something for distances of the embedding model it learned,
    so it is used when ``embedding_model`` names that model (``for_model``; ``build_graph``
    binds a critic to its store's model); otherwise the critic judges without distances.
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        batch_size: int = 32,
        embedding_model: str | None = None,
        backend: str | None = None,
    ) -> None:
        """Load and validate a critic folder.

        Args:
            folder: The critic folder.
            batch_size: Pairs per forward pass.
            embedding_model: The model behind the distances ``score`` will get (see
                ``for_model``); None judges without distances.
            backend: ``torch`` or ``onnx`` (int8 on ONNX Runtime; see ``ragbrain.models.backend``);
                None is torch, whatever ``RAGBRAIN_BACKEND`` says (it picks the embedding
                model's runtime only).

        Raises:
            CriticLoadError: The folder, its weights, config or calibration is missing,
                corrupt or inconsistent. Nothing is ever unpickled.
            MissingExtraError: ``onnx`` without ONNX Runtime installed.
            OnnxExportError: The ONNX export failed.
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
        # The critic runs on torch whatever RAGBRAIN_BACKEND says: on ONNX Runtime int8 it is
        # slower (the export computes every token in the last layer) and makes other keep/drop
        # decisions (docs/onnx.md).
        # ``backend="onnx"`` still asks for it.
        self.backend = backend or "torch"
        # torch runs BERT on ragbrain.models.bert; the ONNX export reads transformers' model.
        self.model = build_model(self.folder, self.calibration, light=self.backend == "torch")
        check_activation(self.folder, self.activation, int(self.model.config.num_labels))
        # The fast tokenizer's engine reads whole texts (for the lexical features); a light
        # one with its post-processor only joins and cuts (query, passage) pairs.
        # The folder's own tokenizer, else its base's.
        self._tokenizer_folder = tokenizer_folder(self.folder, self.calibration.get("base"))
        self._words = self._engine()
        self._pairs = pair_engine(self._words, self.max_length)
        self._passages = _EncodingCache(self._words)  # shared by every ``for_model`` view
        self.pad_id = int(getattr(self.model.config, "pad_token_id", None) or 0)
        self.features = self._features() if "combiner" in self.calibration else None
        self.onnx: OnnxCriticModel | None = None
        if self.backend == "onnx":
            self.onnx = OnnxCriticModel(self.folder, self.model, self.calibration)
        elif self.calibration.get("quantize") == "int8":
            self.model = quantized(self.model, inplace=True)
        self._use_layer(embedding_model)

    @property
    def distance_model(self) -> str | None:
        """The embedding model whose distances the first distance layer learned (None: no
        layer; ``distance_models`` names every one)."""
        layer = self.calibration.get(WITH_DISTANCE)
        return str(layer["embedding_model"]) if layer else None

    @property
    def distance_models(self) -> tuple[str, ...]:
        """Every embedding model the critic has a distance layer for."""
        return tuple(distance_layers(self.calibration))

    def _use_layer(self, embedding_model: str | None) -> None:
        self.embedding_model = embedding_model
        layer = distance_layers(self.calibration).get(embedding_model or "")
        self.uses_distance = layer is not None
        source: dict[str, Any] = layer if layer is not None else self.calibration
        self.threshold = float(source["threshold"])
        self.combiner: dict[str, Any] | None = source.get("combiner")
        record = layer.get("abstain") if layer is not None else None
        self.abstain_thresholds: AbstainThresholds | None = None
        if record is not None:
            fit = record.get("fit")
            by = fit.get("by") if isinstance(fit, dict) else None
            origin = (
                f"{by}, for {embedding_model}"
                if isinstance(by, str) and by.startswith("ragbrain critic calibrate")
                else f"fit on every shared set's train/dev for {embedding_model}"
            )
            self.abstain_thresholds = AbstainThresholds.from_record(record, origin)

    def for_model(self, embedding_model: str | None) -> TransformerCritic:
        """This critic (sharing its model) judging distances of ``embedding_model``: with its
        distance layer and threshold when it learned that model's distances, else without.
        Bound to a model that reads every language (its profile's ``reads``), it keeps the
        hits in another language than the query unjudged (``keep_across_languages``)."""
        bound = copy.copy(self)
        bound._use_layer(embedding_model)
        return bound

    @functools.cached_property
    def tokenizer(self) -> Any:
        """The transformers fast tokenizer (loaded on first use: scoring needs only its
        engine, and importing transformers costs ~1 s of a cold start)."""
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self._tokenizer_folder, local_files_only=True)

    def _engine(self) -> Any:
        """A private copy of the tokenizer's engine, read from ``tokenizer.json`` when there
        is one (the very engine the fast tokenizer wraps), else from the fast tokenizer."""
        from tokenizers import Tokenizer

        path = self._tokenizer_folder / "tokenizer.json"
        if not path.is_file():
            return tokenizer_engine(self.tokenizer)
        engine = Tokenizer.from_file(str(path))
        engine.no_padding()
        engine.no_truncation()
        return engine

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
        """Tokenize the query and every passage once, whole; pairs and features slice these
        (ids only: no character offsets, which cost a quarter of the time). A passage judged
        lately (a compound question's parts judge the same chunks again; an agent's next
        question often finds them too) comes from a small cache of encodings."""
        query_encoding = self._words.encode(query, add_special_tokens=False)
        return query_encoding, self._passages.encode(passages)

    def pair_batch(self, query_encoding: Any, passage_encodings: Sequence[Any]) -> dict[str, Any]:
        """Model inputs for (query, passage) pairs: ``[CLS] query [SEP] passage [SEP]`` cut to
        ``max_length`` longest-first and padded, as the tokenizer's own pair call makes them."""
        import torch

        pairs = [
            self._pairs.post_process(query_encoding, passage, add_special_tokens=True)
            for passage in passage_encodings
        ]
        width = max((len(pair.ids) for pair in pairs), default=0)
        pad = {"ids": self.pad_id}  # the other fields pad with 0
        return {
            name: torch.tensor(
                [
                    getattr(pair, field) + [pad.get(field, 0)] * (width - len(pair.ids))
                    for pair in pairs
                ]
            )
            for name, field in MODEL_INPUTS
        }

    def _logits(self, query_encoding: Any, passage_encodings: Sequence[Any]) -> torch.Tensor:
        import torch

        outputs = []
        with torch.inference_mode():
            for start in range(0, len(passage_encodings), self.batch_size):
                chunk = passage_encodings[start : start + self.batch_size]
                batch = self.pair_batch(query_encoding, chunk)
                if self.onnx is not None:
                    outputs.append(self.onnx.logits(batch))
                else:
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
        return keep_across_languages(
            self.embedding_model, query, passages, scores, unjudged=self.threshold
        )

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
                    f"{self.folder}: this critic judges with {self.embedding_model} "
                    "distances; pass one distance per passage."
                )
            x = torch.cat([x, torch.tensor(distances, dtype=x.dtype)[:, None]], dim=1)
        columns = DISTANCE_INPUTS if self.uses_distance else PLAIN_INPUTS
        if len(self.combiner["inputs"]) > len(columns):  # list-aware
            x = torch.cat([x, list_columns(x, columns)], dim=1)
        return _finite(combine(x, self.combiner))


class _EncodingCache:
    """The tokenizer engine's encodings of the latest ``size`` distinct passages (by text),
    safe to share between threads; an encoding is what the engine would give again."""

    def __init__(self, engine: Any, size: int = 512) -> None:
        self.engine = engine
        self.size = size
        self._lock = threading.Lock()
        self._by_text: OrderedDict[str, Any] = OrderedDict()

    def encode(self, passages: Sequence[str]) -> list[Any]:
        """One encoding per passage, in order (special tokens left out)."""
        with self._lock:
            found = {text: self._by_text[text] for text in passages if text in self._by_text}
            for text in found:
                self._by_text.move_to_end(text)
        missing = list(dict.fromkeys(text for text in passages if text not in found))
        if missing:
            new = self.engine.encode_batch_fast(missing, add_special_tokens=False)
            found.update(zip(missing, new, strict=True))
            with self._lock:
                self._by_text.update(zip(missing, new, strict=True))
                while len(self._by_text) > self.size:
                    self._by_text.popitem(last=False)
        return [found[text] for text in passages]


def _finite(probs: torch.Tensor) -> list[float]:
    """The probabilities as floats, a non-finite one as NaN (never relevant)."""
    return [p if math.isfinite(p) else math.nan for p in probs.tolist()]
