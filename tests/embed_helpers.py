"""One session's vectors, shared by every test database: the model embeds a text once per session.

The product's embedding cache (ingest/embedcache.py, migration 0011) is a table in each database,
so every test database that ingests the demo corpus used to run the model over it again on CPU:
the largest single cost of a full run. `share_vectors` puts an in-process memo in front of the
session's model, *below* everything the product observes: the ingest still looks up its own
database's cache, still counts and stores what it sends to the model (`chunks_embedded` is
unchanged), LlamaIndex still emits its embedding events; only the arithmetic is not repeated.

Keyed by (the model's cache key, SHA-256 of the text), as the product's cache is. Only the
instances registered here are memoized: tests that build their own model (test_embed_engines.py
compares engines and batch effects) see the model itself.
"""

from __future__ import annotations

import threading
from hashlib import sha256

import numpy as np

_memo: dict[tuple[str, str], np.ndarray] = {}
_lock = threading.Lock()
_shared: set[int] = set()  # id() of the model instances whose vectors are memoized
_keys: dict[int, str] = {}  # id() of a model -> its cache key (model_key)
_stats = {"hits": 0, "misses": 0}


def share_vectors(model) -> None:
    """Memoize `model`'s vectors for the rest of the session (its ONNX engine only; a torch
    fallback runs as it is)."""
    from policydesk.providers.onnx_local import OnnxEmbedding

    if not isinstance(model, OnnxEmbedding):
        return
    _install(OnnxEmbedding)
    _shared.add(id(model))


def stats() -> dict[str, int]:
    return dict(_stats)


def _install(cls) -> None:
    if getattr(cls, "policydesk_test_memo", False):
        return
    original = cls.embed_array

    def embed_array(self, texts: list[str]) -> np.ndarray:
        if id(self) not in _shared or not texts:
            return original(self, texts)
        key = _keys.get(id(self))
        if key is None:
            from policydesk.ingest.embedcache import model_key

            key = _keys.setdefault(id(self), model_key(self))
        keys = [(key, sha256(t.encode("utf-8")).hexdigest()) for t in texts]
        with _lock:
            missing = {k: t for k, t in zip(keys, texts) if k not in _memo}
        if missing:
            vectors = original(self, list(missing.values()))
            with _lock:
                for k, v in zip(missing, vectors):
                    _memo.setdefault(k, np.array(v, dtype=np.float32))
        _stats["misses"] += len(missing)
        _stats["hits"] += len(texts) - len(missing)
        with _lock:
            return np.stack([_memo[k] for k in keys])

    cls.embed_array = embed_array
    cls.policydesk_test_memo = True
