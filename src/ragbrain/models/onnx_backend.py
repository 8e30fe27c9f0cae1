"""Sentence-embedding models on ONNX Runtime, int8: exported once from the installed weights.

A sentence-transformers folder (a BERT-like ``transformers`` model with its tokenizer and
pooling config, as every model with a profile is) is exported with its
pooling to ONNX, quantized dynamically to int8 (weights int8 per channel, activations
uint8, the layout that AVX-512 VNNI runs fastest) and kept in the cache (see
``ragbrain.models.onnx_cache``). ``OnnxEmbeddings`` then tokenizes with the model's own fast
tokenizer, batches by length as sentence-transformers does, and returns normalized vectors.

sentence-transformers' own ONNX path (``backend="onnx"``) needs optimum-onnx, whose only
release requires transformers < 4.58; ragbrain runs on transformers 5, so the export is done
here with ``torch.onnx`` and ``onnxruntime.quantization``.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from ragbrain._util import require
from ragbrain.models.onnx_cache import OnnxExportError, cached_export, source_key

INT8_FILE = "model_int8.onnx"
#: Dynamic int8 for the embedding models: weights QInt8 per channel, activations QUInt8 at
#: full range (AVX-512 VNNI needs no reduced range), the feed-forward output MatMuls kept fp32.
QUANTIZATION: dict[str, Any] = {
    "weights": "QInt8",
    "activations": "QUInt8 (dynamic)",
    "per_channel": True,
    "reduce_range": False,
    "operators": ["MatMul"],
    "ffn_output_fp32": True,
    "target": "avx512_vnni",
}
OPSET = 17
#: The model inputs and the ``tokenizers.Encoding`` fields that fill them.
FIELDS = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
#: Padded tokens per forward pass at most (texts x the longest's tokens). Smaller passes are
#: faster (docs/onnx.md measures it) and bound the activations ONNX Runtime's arena holds
#: (docs/onnx.md, "Memory").
BATCH_TOKENS = 1024
FEATURE = "The ONNX backend (RAGBRAIN_BACKEND=onnx, the default)"
#: onnxruntime and onnx are core dependencies: missing, the install is broken.
FIX = (
    "reinstall ragbrain's dependencies (pip install 'onnxruntime>=1.17' 'onnx>=1.17'), or run "
    "on torch with RAGBRAIN_BACKEND=torch"
)


def runtime() -> Any:
    """The ``onnxruntime`` module, or a clear error naming the install and the setting.

    Raises:
        MissingExtraError: ONNX Runtime is not installed.
    """
    return require("onnxruntime", feature=FEATURE, fix=FIX)


def session(path: Path) -> Any:
    """An ONNX Runtime CPU session for ``path``, using every core this process may run on."""
    ort = runtime()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = len(os.sched_getaffinity(0))
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    # Its threads stop spinning when a run returns: spinning on, they kept both cores busy
    # while the torch critic judged right after a query (docs/decisions/measured-costs.md).
    options.add_session_config_entry("session.force_spinning_stop", "1")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def quantize(fp32: Path, int8: Path, config: dict[str, Any] = QUANTIZATION) -> None:
    """Dynamic int8 quantization of ``fp32`` into ``int8`` as ``config`` says (keys of
    ``QUANTIZATION``)."""
    onnx = require("onnx", feature=FEATURE, fix=FIX)
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(fp32), load_external_data=False).graph
    logging.disable(logging.WARNING)  # the quantizer logs advice on the root logger
    try:
        quantize_dynamic(
            fp32,
            int8,
            op_types_to_quantize=config["operators"],
            per_channel=config["per_channel"],
            reduce_range=config["reduce_range"],
            weight_type=QuantType.QInt8,
            nodes_to_exclude=[
                node.name
                for node in graph.node
                if config["ffn_output_fp32"] and _ffn_output(node.name)
            ],
        )
    finally:
        logging.disable(logging.NOTSET)


def _ffn_output(name: str) -> bool:
    """Whether an exported node is a BERT layer's feed-forward output MatMul (kept fp32: with
    it int8 too, the int8 and fp32 vectors agree much less: docs/onnx.md)."""
    return name.endswith("/output/dense/MatMul") and "/attention/" not in name


def _json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def pooling_mode(folder: Path) -> str:
    """``mean`` or ``cls``: the pooling of a sentence-transformers folder (mean without one).

    Raises:
        OnnxExportError: The folder pools otherwise (max, weighted, ...).
    """
    from ragbrain.errors import ModelLoadError
    from ragbrain.models.sentence import pooling_of

    try:
        return pooling_of(folder)
    except ModelLoadError as exc:
        raise OnnxExportError(str(exc)) from exc


def max_length(folder: Path, tokenizer: Any) -> int:
    """The model's window: ``sentence_bert_config.json``'s ``max_seq_length``, else the
    smaller of the tokenizer's and the position table's."""
    if (length := _json(folder / "sentence_bert_config.json").get("max_seq_length")) is not None:
        return int(length)
    positions = int(_json(folder / "config.json").get("max_position_embeddings", 512))
    return int(min(tokenizer.model_max_length, positions))


def _export_embedding(folder: Path, mode: str) -> Any:
    """A callable that writes the int8 export of ``folder`` into the folder it is given."""

    def export(target: Path) -> dict[str, Any]:
        import torch
        from transformers import AutoModel

        model = AutoModel.from_pretrained(folder, local_files_only=True, use_safetensors=True)
        model.eval()
        names = ["input_ids", "attention_mask"]
        if "token_type_ids" in inspect.signature(model.forward).parameters:
            names.append("token_type_ids")

        class Pooled(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
                hidden: torch.Tensor = self.model(
                    **dict(zip(names, inputs, strict=True))
                ).last_hidden_state
                if mode == "cls":
                    return hidden[:, 0]
                mask = inputs[1].unsqueeze(-1).to(hidden.dtype)
                return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

        dummy = tuple(torch.ones(2, 8, dtype=torch.long) for _ in names)
        fp32 = target / "model_fp32.onnx.tmp"
        axes = {name: {0: "batch", 1: "tokens"} for name in names}
        with torch.inference_mode(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's notes on ops it rewrites
            torch.onnx.export(
                Pooled(),
                dummy,
                str(fp32),
                input_names=names,
                output_names=["sentence_embedding"],
                dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
                opset_version=OPSET,
                dynamo=False,
            )
        quantize(fp32, target / INT8_FILE)
        fp32.unlink()
        return {
            "source": str(folder),
            "pooling": mode,
            "inputs": names,
            "quantization": QUANTIZATION,
        }

    return export


def export_embedding_model(folder: Path) -> Path:
    """The checked int8 ONNX export of the sentence-transformers model in ``folder``, made on
    first use (offline, from the folder's safetensors weights) and cached.

    Args:
        folder: A sentence-transformers model folder.

    Returns:
        The export folder (``model_int8.onnx`` and ``manifest.json``).

    Raises:
        MissingExtraError: ONNX Runtime or onnx is not installed.
        OnnxExportError: The export failed.
    """
    runtime()
    folder = Path(folder)
    mode = pooling_mode(folder)
    sources = [p for p in folder.iterdir() if p.suffix in (".json", ".safetensors")]
    key = source_key(sources, mode, json.dumps(QUANTIZATION, sort_keys=True), str(OPSET))
    return cached_export(
        f"{folder.name}-int8-{key}",
        _export_embedding(folder, mode),
        what=f"embedding model in {folder}",
    )


class OnnxEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` running a sentence-transformers folder's int8 ONNX export.

    ``model_name`` is the source folder, as for ``HuggingFaceEmbeddings``, so the store records
    the model, not the backend (the two backends' vectors agree to a cosine >= 0.995; see
    docs/onnx.md).
    """

    #: What runs the model, for people (``ragbrain.models.backend.runtime_of``).
    runtime = "ONNX Runtime int8"

    @property
    def variant(self) -> str:
        """How its vectors are made (runtime, quantization, passes), for caches that keep
        them apart from other ways of making the same model's (``corpus_store``)."""
        return f"onnx-int8-{BATCH_TOKENS}"

    def __init__(
        self,
        folder: str | Path,
        *,
        batch_size: int = 32,
        query_prompt: str = "",
        passage_prompt: str = "",
    ) -> None:
        """Export (the first time) and load the model of ``folder``.

        Args:
            folder: A sentence-transformers model folder.
            batch_size: Texts per forward pass.
            query_prompt: Text put before each query (e.g. ``"query: "`` for e5).
            passage_prompt: Text put before each passage (e.g. ``"passage: "`` for e5).

        Raises:
            MissingExtraError: ONNX Runtime or onnx is not installed.
            OnnxExportError: The export failed.
        """
        self.model_name = str(folder)
        self.batch_size = batch_size
        self.query_prompt = query_prompt
        self.passage_prompt = passage_prompt
        source = Path(folder)
        self.export_folder = export_embedding_model(source)
        self.session = session(self.export_folder / INT8_FILE)
        self.input_names = [item.name for item in self.session.get_inputs()]
        self.tokenizer = _tokenizer(source)
        # Run options of a call's last pass: shrink the CPU arena back when it ends. Without
        # this the arena keeps its peak for good (docs/onnx.md, "Memory"); without the arena,
        # every pass maps and faults in its buffers anew, at half the speed.
        self._release = runtime().RunOptions()
        self._release.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def _encode(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of ``texts``, longest first in batches of ``batch_size`` texts, each run in
        passes of at most ``BATCH_TOKENS`` padded tokens; the last pass gives the arena's
        memory back, so a process holds a batch's activations only while it embeds."""
        import numpy as np

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        rows: list[Any] = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            encodings = self.tokenizer.encode_batch([texts[i] for i in batch])
            step = max(1, BATCH_TOKENS // len(encodings[0].ids))  # padded to the longest
            for first in range(0, len(batch), step):
                part = encodings[first : first + step]
                feed = {
                    name: np.array([getattr(e, FIELDS[name]) for e in part], dtype=np.int64)
                    for name in self.input_names
                }
                last = start + first + step >= len(order)
                vectors = self.session.run(None, feed, self._release if last else None)[0]
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                vectors = vectors / np.maximum(norms, 1e-12)
                for i, vector in zip(batch[first : first + step], vectors, strict=True):
                    rows[i] = vector
        return [row.tolist() for row in rows]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Normalized vectors of passages (``passage_prompt`` first)."""
        return self._encode([self.passage_prompt + text for text in texts])

    def embed_query(self, text: str) -> list[float]:
        """The normalized vector of one query (``query_prompt`` first)."""
        return self._encode([self.query_prompt + text])[0]

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """``embed_query`` of many queries, in batches (``ragbrain.models.batch``)."""
        return self._encode([self.query_prompt + text for text in texts])


def _tokenizer(folder: Path) -> Any:
    """The folder's tokenizer engine, cut to the model's window and padded to the longest: read
    from its ``tokenizer.json`` as ``ragbrain.models.sentence`` reads it (no transformers
    import, which is most of a cold start), else from transformers' tokenizer (a folder without
    one)."""
    if (folder / "tokenizer.json").is_file():
        from ragbrain.models.sentence import tokenizer_of

        positions = int(_json(folder / "config.json").get("max_position_embeddings", 512))
        return tokenizer_of(folder, positions)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    return _engine(tokenizer, max_length(folder, tokenizer))


def _engine(tokenizer: Any, window: int) -> Any:
    """The fast tokenizer's engine, truncating to ``window`` and padding to the longest."""
    from tokenizers import Tokenizer

    engine = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    engine.enable_truncation(window)
    engine.enable_padding(
        pad_id=tokenizer.pad_token_id or 0, pad_token=tokenizer.pad_token or "[PAD]"
    )
    return engine
