"""A sentence-transformers BERT folder as LangChain ``Embeddings`` on torch, without importing
sentence-transformers or transformers (most of a cold query: docs/decisions/measured-costs.md;
``ragbrain.models.bert``).

It does what ``HuggingFaceEmbeddings`` over ``SentenceTransformer.encode`` does for these
folders, step for step, so the vectors equal theirs (tests compare both on tiny models and on
the installed ones): newlines become spaces, the prompt goes first, texts are sorted longest
first and embedded ``batch_size`` at a time, tokenized with the folder's ``tokenizer.json``
(cut to ``max_seq_length``, padded to the batch's longest), pooled (mean over the attention
mask, or ``[CLS]``) and L2-normalized. ``model_name`` is the folder, as sentence-transformers'
is, so a store records the same model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from ragbrain.errors import ModelLoadError

WEIGHTS_FILE = "model.safetensors"
#: Buffers that transformers writes into some checkpoints but never loads (recomputed).
_NOT_WEIGHTS = ("embeddings.position_ids", "embeddings.token_type_ids")


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"{path}: missing or not JSON ({exc}).") from exc


def is_bert_folder(folder: Path) -> bool:
    """Whether ``SentenceEmbeddings`` runs ``folder``: a fp32 BERT (``config.json``) with a
    ``tokenizer.json`` (sentence-transformers loads any other folder)."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(config, dict)
        and config.get("model_type") == "bert"
        and config.get("dtype", config.get("torch_dtype")) in (None, "float32")
        and (folder / "tokenizer.json").is_file()
    )


def pooling_of(folder: Path) -> str:
    """``mean`` or ``cls``: the pooling a sentence-transformers folder names (mean without
    a ``modules.json``).

    Raises:
        ModelLoadError: The folder pools otherwise, or its pooling config is unreadable.
    """
    modules_file = folder / "modules.json"
    modules = _json(modules_file) if modules_file.is_file() else []
    for module in modules if isinstance(modules, list) else []:
        if str(module.get("type", "")).endswith("Pooling"):
            config = _json(folder / str(module.get("path", "")) / "config.json")
            if config.get("pooling_mode_mean_tokens"):
                return "mean"
            if config.get("pooling_mode_cls_token"):
                return "cls"
            raise ModelLoadError(f"{folder}: pooling {config} is not mean or cls.")
    return "mean"


def tokenizer_of(folder: Path, limit: int) -> Any:
    """The folder's ``tokenizer.json`` engine, set up as sentence-transformers calls it: cut
    to the window (``sentence_bert_config.json``'s ``max_seq_length``, else the tokenizer's
    and ``limit``, the position table's, smaller), padded to the longest of a batch.

    Raises:
        ModelLoadError: ``tokenizer.json`` is missing or unreadable.
    """
    from tokenizers import Tokenizer

    path = folder / "tokenizer.json"
    try:
        engine = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises its own Exception subclass
        raise ModelLoadError(f"{path}: missing or not a tokenizer ({exc}).") from exc
    settings_file = folder / "tokenizer_config.json"
    settings = _json(settings_file) if settings_file.is_file() else {}
    specials_file = folder / "special_tokens_map.json"
    specials = _json(specials_file) if specials_file.is_file() else {}
    sentence_file = folder / "sentence_bert_config.json"
    sentence = _json(sentence_file) if sentence_file.is_file() else {}
    window = sentence.get("max_seq_length")
    if window is None:
        window = min(int(settings.get("model_max_length", limit)), limit)
    pad = _token(settings.get("pad_token") or specials.get("pad_token")) or "[PAD]"
    engine.enable_truncation(int(window), strategy="longest_first")
    engine.enable_padding(pad_id=engine.token_to_id(pad) or 0, pad_token=pad)
    engine.encode_special_tokens = bool(settings.get("split_special_tokens", False))
    return engine


def _token(value: Any) -> str | None:
    """A special token as tokenizer configs write it: a string or ``{"content": ...}``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


class SentenceEmbeddings(Embeddings):
    """Normalized sentence vectors of a BERT sentence-transformers folder, on CPU torch."""

    #: What runs the model, for people (``ragbrain.models.backend.runtime_of``).
    runtime = "torch fp32"

    def __init__(
        self,
        folder: str | Path,
        *,
        batch_size: int = 32,
        query_prompt: str = "",
        passage_prompt: str = "",
        half_word_embeddings: bool = False,
    ) -> None:
        """Load the folder's weights (safetensors only), tokenizer and pooling.

        Args:
            folder: A sentence-transformers folder of a BERT model.
            batch_size: Texts per forward pass.
            query_prompt: Text put before each query (e.g. ``"query: "`` for e5).
            passage_prompt: Text put before each passage (e.g. ``"passage: "`` for e5).
            half_word_embeddings: Keep the word embeddings in fp16 in memory
                (``ragbrain.models.e5.half.HalfEmbedding``; the lookup returns fp32).

        Raises:
            ModelLoadError: A file is missing or damaged, or the weights do not fit the config.
        """
        import torch

        from ragbrain.models.bert import BertEncoder, BertShape, fill

        self.model_name = str(folder)
        source = Path(folder)
        self.batch_size = batch_size
        self.query_prompt = query_prompt
        self.passage_prompt = passage_prompt
        shape = BertShape.read(source / "config.json")
        self.pooling = pooling_of(source)
        self.tokenizer = tokenizer_of(source, shape.max_position_embeddings)
        tensors = _read(source / WEIGHTS_FILE)
        model = BertEncoder(shape, pooler=any(k.startswith("pooler.") for k in tensors))
        if half_word_embeddings:
            from ragbrain.models.e5.half import HalfEmbedding

            words = "embeddings.word_embeddings.weight"
            model.embeddings.word_embeddings = HalfEmbedding(
                torch.empty(shape.vocab_size, shape.hidden_size, dtype=torch.float16),
                shape.pad_token_id,
            )
            tensors = {
                name: t.half() if name == words else t.float() for name, t in tensors.items()
            }
        else:
            tensors = {name: t.float() for name, t in tensors.items()}
        fill(model, tensors, source / WEIGHTS_FILE)
        self.model = model.eval()

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np
        import torch

        order = np.argsort([-len(text) for text in texts])  # as sentence-transformers sorts
        rows: list[Any] = [None] * len(texts)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                batch = [int(i) for i in order[start : start + self.batch_size]]
                encodings = self.tokenizer.encode_batch([texts[i] for i in batch])
                ids = torch.tensor([e.ids for e in encodings])
                mask = torch.tensor([e.attention_mask for e in encodings])
                types = torch.tensor([e.type_ids for e in encodings])
                hidden = self.model(ids, mask, types)
                if self.pooling == "cls":
                    pooled = hidden[:, 0]
                else:
                    weights = mask.unsqueeze(-1).expand(hidden.size()).to(hidden.dtype)
                    summed = torch.sum(hidden * weights, 1)
                    pooled = summed / torch.clamp(weights.sum(1), min=1e-9)
                # The folder's Normalize module, then encode(normalize_embeddings=True).
                vectors = torch.nn.functional.normalize(pooled, p=2, dim=1)
                vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
                for i, vector in zip(batch, vectors.numpy(), strict=True):
                    rows[i] = vector
        return [row.tolist() for row in rows]

    def _prepared(self, texts: Sequence[str], prompt: str) -> list[str]:
        return [prompt + text.replace("\n", " ") for text in texts]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Normalized vectors of passages (``passage_prompt`` first)."""
        return self._encode(self._prepared(texts, self.passage_prompt))

    def embed_query(self, text: str) -> list[float]:
        """The normalized vector of one query (``query_prompt`` first)."""
        return self._encode(self._prepared([text], self.query_prompt))[0]

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """``embed_query`` of many queries, in batches (``ragbrain.models.batch``)."""
        return self._encode(self._prepared(texts, self.query_prompt))


def _read(path: Path) -> dict[str, Any]:
    """Every tensor of a safetensors file but the recomputed buffers (never unpickles).

    Raises:
        ModelLoadError: The file is missing or not safetensors.
    """
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(path))
    except Exception as exc:  # safetensors raises SafetensorError, OSError ...
        raise ModelLoadError(f"{path}: missing or not safetensors ({exc}).") from exc
    return {name: t for name, t in tensors.items() if name not in _NOT_WEIGHTS}
