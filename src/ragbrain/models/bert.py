"""BERT's encoder in plain torch, for inference: what a query needs without importing
transformers' model classes (docs/decisions/measured-costs.md).

The modules and their weight names follow transformers' ``BertModel`` and
``BertForSequenceClassification``, and the forward pass runs the same operations in the same
order (``sdpa`` attention, no mask without padding, a boolean mask with it, exact GELU), so a
folder's safetensors load unchanged and the outputs equal transformers' (tests compare them).
Only absolute positions, bidirectional attention and the GELU/ReLU activations are supported:
``BertShape.read`` refuses any other config, naming what it found.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ragbrain.errors import ModelLoadError

_ACTIVATIONS = ("gelu", "relu")  # transformers' "gelu" is the exact (erf) one


@dataclass(frozen=True)
class BertShape:
    """The fields of a BERT ``config.json`` that this encoder reads."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float
    hidden_act: str
    pad_token_id: int | None
    num_labels: int

    @classmethod
    def read(cls, path: Path) -> BertShape:
        """The shape in a ``config.json``.

        Raises:
            ModelLoadError: The file is missing or unreadable, is not a BERT config, or asks
                for what this encoder does not run (another position type, a decoder, another
                activation).
        """
        try:
            config: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelLoadError(f"{path}: not a readable model config ({exc}).") from exc
        return cls.of(config, str(path))

    @classmethod
    def of(cls, config: Any, source: str) -> BertShape:
        """The shape in a parsed ``config.json`` (``source`` names it in errors).

        Raises:
            ModelLoadError: As ``read``.
        """
        if not isinstance(config, dict) or config.get("model_type") != "bert":
            raise ModelLoadError(f"{source}: not a BERT config (model_type must be 'bert').")
        unsupported = {
            "position_embedding_type": config.get("position_embedding_type", "absolute")
            != "absolute",
            "is_decoder": bool(config.get("is_decoder", False)),
            "hidden_act": config.get("hidden_act", "gelu") not in _ACTIVATIONS,
        }
        wrong = [f"{key}={config.get(key)!r}" for key, bad in unsupported.items() if bad]
        if wrong:
            raise ModelLoadError(f"{source}: unsupported BERT settings {', '.join(wrong)}.")
        labels = config.get("id2label")
        try:
            return cls(
                vocab_size=int(config["vocab_size"]),
                hidden_size=int(config["hidden_size"]),
                num_hidden_layers=int(config["num_hidden_layers"]),
                num_attention_heads=int(config["num_attention_heads"]),
                intermediate_size=int(config["intermediate_size"]),
                max_position_embeddings=int(config.get("max_position_embeddings", 512)),
                type_vocab_size=int(config.get("type_vocab_size", 2)),
                layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
                hidden_act=str(config.get("hidden_act", "gelu")),
                pad_token_id=config.get("pad_token_id"),
                num_labels=int(config.get("num_labels", len(labels) if labels else 2)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelLoadError(f"{source}: incomplete BERT config ({exc!r}).") from exc


class _Embeddings(nn.Module):
    def __init__(self, shape: BertShape) -> None:
        super().__init__()
        # The file fills the table: allocated (lazily, by the OS), never drawn at random.
        self.word_embeddings: nn.Module = nn.Embedding(
            shape.vocab_size,
            shape.hidden_size,
            padding_idx=shape.pad_token_id,
            _weight=torch.empty(shape.vocab_size, shape.hidden_size),
        )
        self.position_embeddings = nn.Embedding(shape.max_position_embeddings, shape.hidden_size)
        self.token_type_embeddings = nn.Embedding(shape.type_vocab_size, shape.hidden_size)
        self.LayerNorm = nn.LayerNorm(shape.hidden_size, eps=shape.layer_norm_eps)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)[None, :]
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(positions)
        out: torch.Tensor = self.LayerNorm(embeddings)
        return out


class _SelfAttention(nn.Module):
    def __init__(self, shape: BertShape) -> None:
        super().__init__()
        self.heads = shape.num_attention_heads
        self.head_size = shape.hidden_size // shape.num_attention_heads
        self.scaling = self.head_size**-0.5
        self.query = nn.Linear(shape.hidden_size, shape.hidden_size)
        self.key = nn.Linear(shape.hidden_size, shape.hidden_size)
        self.value = nn.Linear(shape.hidden_size, shape.hidden_size)

    def forward(
        self, hidden: torch.Tensor, mask: torch.Tensor | None, rows: torch.Tensor
    ) -> torch.Tensor:
        """Attention outputs for the positions in ``rows`` (the queries), every position
        being a key and a value; ``rows`` is ``hidden`` itself or its first position."""
        split = (hidden.shape[0], -1, self.heads, self.head_size)
        query = self.query(rows).view(*split).transpose(1, 2)
        key = self.key(hidden).view(*split).transpose(1, 2)
        value = self.value(hidden).view(*split).transpose(1, 2)
        out = nn.functional.scaled_dot_product_attention(
            query, key, value, attn_mask=mask, dropout_p=0.0, scale=self.scaling, is_causal=False
        )
        out = out.transpose(1, 2).contiguous()
        return out.reshape(*rows.shape[:-1], -1).contiguous()


class _Residual(nn.Module):
    """A dense layer, then LayerNorm over it plus the block's input (``*Output`` in BERT)."""

    def __init__(self, inputs: int, shape: BertShape) -> None:
        super().__init__()
        self.dense = nn.Linear(inputs, shape.hidden_size)
        self.LayerNorm = nn.LayerNorm(shape.hidden_size, eps=shape.layer_norm_eps)

    def forward(self, hidden: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.LayerNorm(self.dense(hidden) + residual)
        return out


class _Attention(nn.Module):
    def __init__(self, shape: BertShape) -> None:
        super().__init__()
        self.self = _SelfAttention(shape)
        self.output = _Residual(shape.hidden_size, shape)

    def forward(
        self, hidden: torch.Tensor, mask: torch.Tensor | None, rows: torch.Tensor
    ) -> torch.Tensor:
        out: torch.Tensor = self.output(self.self(hidden, mask, rows), rows)
        return out


class _Intermediate(nn.Module):
    def __init__(self, shape: BertShape) -> None:
        super().__init__()
        self.dense = nn.Linear(shape.hidden_size, shape.intermediate_size)
        self.gelu = shape.hidden_act == "gelu"

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        out = self.dense(hidden)
        return nn.functional.gelu(out) if self.gelu else nn.functional.relu(out)


class _Layer(nn.Module):
    def __init__(self, shape: BertShape) -> None:
        super().__init__()
        self.attention = _Attention(shape)
        self.intermediate = _Intermediate(shape)
        self.output = _Residual(shape.intermediate_size, shape)

    def forward(
        self, hidden: torch.Tensor, mask: torch.Tensor | None, *, first_only: bool = False
    ) -> torch.Tensor:
        """The layer's output at every position, or (``first_only``) at the first one only:
        its attention still reads every position, but nothing after it is computed for the
        others (a classifier's last layer: the pooler reads ``[CLS]`` alone)."""
        rows = hidden[:, :1] if first_only else hidden
        attended = self.attention(hidden, mask, rows)
        out: torch.Tensor = self.output(self.intermediate(attended), attended)
        return out


class _Encoder(nn.Module):
    def __init__(self, shape: BertShape) -> None:
        super().__init__()
        self.layer = nn.ModuleList(_Layer(shape) for _ in range(shape.num_hidden_layers))

    def forward(
        self, hidden: torch.Tensor, mask: torch.Tensor | None, *, first_only: bool = False
    ) -> torch.Tensor:
        """The last hidden states; with ``first_only``, of the first position only (batch,
        1, hidden), the last layer computing nothing else."""
        last = len(self.layer) - 1
        for index, layer in enumerate(self.layer):
            hidden = layer(hidden, mask, first_only=first_only and index == last)
        return hidden


class _Pooler(nn.Module):
    def __init__(self, shape: BertShape) -> None:
        super().__init__()
        self.dense = nn.Linear(shape.hidden_size, shape.hidden_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))


def padding_mask(mask: torch.Tensor) -> torch.Tensor | None:
    """The boolean mask sdpa gets for a 2-D padding mask, (batch, 1, 1, keys): it broadcasts
    over the heads and over however many query positions a layer computes; None when nothing
    is padded."""
    if bool(mask.all()):
        return None
    return mask.bool()[:, None, None, :]


class BertEncoder(nn.Module):
    """``BertModel`` for inference: the last hidden states of a batch (``pooler`` optional)."""

    def __init__(self, shape: BertShape, *, pooler: bool = True) -> None:
        super().__init__()
        self.shape = shape
        self.embeddings = _Embeddings(shape)
        self.encoder = _Encoder(shape)
        self.pooler = _Pooler(shape) if pooler else None

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        *,
        first_only: bool = False,
    ) -> torch.Tensor:
        """Hidden states (batch, tokens, hidden) of padded token ids; with ``first_only``,
        those of the first token (``[CLS]``) alone, (batch, 1, hidden), computed as they
        would be in the whole output but without the last layer's work for the other tokens."""
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        hidden = self.embeddings(input_ids, token_type_ids)
        mask = None if attention_mask is None else padding_mask(attention_mask)
        out: torch.Tensor = self.encoder(hidden, mask, first_only=first_only)
        return out


@dataclass
class ClassifierOutput:
    """What ``BertClassifier`` returns: the logits, as transformers' output names them."""

    logits: torch.Tensor


class BertClassifier(nn.Module):
    """``BertForSequenceClassification`` for inference: pooled ``[CLS]`` -> linear logits."""

    def __init__(self, shape: BertShape) -> None:
        super().__init__()
        self.config = shape
        self.bert = BertEncoder(shape, pooler=True)
        self.classifier = nn.Linear(shape.hidden_size, shape.num_labels)

    def get_input_embeddings(self) -> nn.Module:
        """The word-embedding table (as transformers' models name the accessor)."""
        return self.bert.embeddings.word_embeddings

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> ClassifierOutput:
        """Logits (batch, num_labels) of padded (query, passage) pairs."""
        hidden = self.bert(input_ids, attention_mask, token_type_ids, first_only=True)
        pooler = self.bert.pooler
        if pooler is None:  # pragma: no cover - BertClassifier always builds one
            raise RuntimeError("BertClassifier needs a pooler.")
        return ClassifierOutput(logits=self.classifier(pooler(hidden)))


def fill(model: nn.Module, tensors: dict[str, torch.Tensor], source: Path) -> None:
    """Load ``tensors`` into ``model`` strictly, every name and shape, taking the tensors
    as they are (``assign``: no copy of the weights).

    Raises:
        ModelLoadError: A tensor is missing, unexpected or of another shape, naming a few.
    """
    problem = misfit(model.state_dict(), tensors)
    if problem:
        raise ModelLoadError(f"{source}: weights do not fit the model config ({problem}).")
    model.load_state_dict(tensors, strict=True, assign=True)


def misfit(expected: dict[str, torch.Tensor], tensors: dict[str, torch.Tensor]) -> str | None:
    """What keeps ``tensors`` from loading into a model whose state is ``expected`` (a few
    missing, unexpected and wrongly shaped names), or None when every name and shape fits."""
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    wrong = sorted(
        name
        for name in set(expected) & set(tensors)
        if tuple(expected[name].shape) != tuple(tensors[name].shape)
    )
    if missing or unexpected or wrong:
        return f"missing {missing[:3]}, unexpected {unexpected[:3]}, wrong shape {wrong[:3]}"
    return None
