"""A BERT encoder (and its sequence classifier) in plain torch, for inference only.

The embedding model and the critic are small BERTs (MiniLM: 6 and 2 layers). Building them
with transformers' model classes imports its whole modeling stack (torch._dynamo, distributed
checkpointing, losses: ~4.7 s on 2 cores) before any weight is read; this module computes the
same function (absolute positions, erf GELU, post-layer-norm, additive attention mask, tanh
pooler) with the same parameter names, so the same safetensors files load strictly. Tests
compare its outputs with transformers' on the shipped weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ragbrain.errors import CriticLoadError


@dataclass(frozen=True)
class BertConfig:
    """The fields of a BERT ``config.json`` the forward pass reads."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    num_labels: int = 1

    @classmethod
    def read(cls, path: Path) -> BertConfig:
        """Read ``config.json``; only BERT with GELU and absolute positions is accepted.

        Raises:
            CriticLoadError: The file is missing, not JSON, or not such a BERT.
        """
        try:
            raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            if raw.get("model_type", "bert") != "bert":
                raise ValueError(f"model_type {raw.get('model_type')!r}, not 'bert'")
            if raw.get("hidden_act", "gelu") != "gelu":
                raise ValueError(f"hidden_act {raw.get('hidden_act')!r}, not 'gelu'")
            if raw.get("position_embedding_type", "absolute") != "absolute":
                raise ValueError("only absolute position embeddings are supported")
            labels = raw.get("num_labels") or len(raw.get("id2label") or {}) or 1
            fields = {name: raw[name] for name in cls.__dataclass_fields__ if name in raw}
            return cls(**{**fields, "num_labels": int(labels)})
        except (OSError, ValueError, TypeError) as exc:
            raise CriticLoadError(f"{path}: not a usable BERT config ({exc}).") from exc


class _Embeddings(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(
            config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id
        )
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        summed = (
            self.word_embeddings(input_ids)
            + self.token_type_embeddings(token_type_ids)
            + self.position_embeddings(positions)
        )
        return self.LayerNorm(summed)  # type: ignore[no-any-return]


class _SelfAttention(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.heads = config.num_attention_heads
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, length, self.heads, width // self.heads).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = q @ k.transpose(-1, -2) / (width // self.heads) ** 0.5 + bias
        context = torch.softmax(scores, dim=-1) @ v
        return context.transpose(1, 2).reshape(batch, length, width)


class _Output(nn.Module):
    def __init__(self, inner: int, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(inner, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(x) + residual)  # type: ignore[no-any-return]


class _Attention(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.self = _SelfAttention(config)
        self.output = _Output(config.hidden_size, config)


class _Intermediate(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)


class _Layer(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = _Attention(config)
        self.intermediate = _Intermediate(config)
        self.output = _Output(config.intermediate_size, config)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        attended = self.attention.output(self.attention.self(x, bias), x)
        inner = nn.functional.gelu(self.intermediate.dense(attended))
        return self.output(inner, attended)  # type: ignore[no-any-return]


class _Encoder(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList(_Layer(config) for _ in range(config.num_hidden_layers))


class _Pooler(nn.Module):
    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)


class BertModel(nn.Module):
    """BERT's encoder; ``forward`` returns the last hidden states (batch, length, width)."""

    def __init__(self, config: BertConfig, *, pooler: bool = True) -> None:
        super().__init__()
        self.config = config
        self.embeddings = _Embeddings(config)
        self.encoder = _Encoder(config)
        self.pooler = _Pooler(config) if pooler else None

    def get_input_embeddings(self) -> nn.Embedding:
        """The word embedding table."""
        return self.embeddings.word_embeddings

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        mask = attention_mask if attention_mask is not None else torch.ones_like(input_ids)
        types = token_type_ids if token_type_ids is not None else torch.zeros_like(input_ids)
        x: torch.Tensor = self.embeddings(input_ids, types)
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.encoder.layer:
            x = layer(x, bias)
        return x

    def pooled(self, hidden: torch.Tensor) -> torch.Tensor:
        """The pooler's output: tanh of a dense layer over the first ([CLS]) token."""
        if self.pooler is None:
            raise ValueError("this BertModel was built without a pooler")
        pooled: torch.Tensor = torch.tanh(self.pooler.dense(hidden[:, 0]))
        return pooled


@dataclass
class Logits:
    """What the classifier returns, named as transformers names it."""

    logits: torch.Tensor


class BertForSequenceClassification(nn.Module):
    """BERT, its pooler and a linear head: ``model(**batch).logits`` (batch, num_labels)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.bert = BertModel(config)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def get_input_embeddings(self) -> nn.Embedding:
        """The word embedding table."""
        return self.bert.get_input_embeddings()

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> Logits:
        hidden = self.bert(input_ids, attention_mask, token_type_ids)
        return Logits(self.classifier(self.bert.pooled(hidden)))
