"""One session's vectors, shared by every test database: the model computes a batch once per session.

The product's embedding cache (ingest/embedcache.py, migration 0011) is a table in each database,
so every test database that ingested the demo corpus ran the model over it again on CPU: the
largest single cost of a full run. `share_vectors` puts an in-process memo in front of the
session's model, *below* everything the product observes: the ingest still looks up its own
database's cache, still counts and stores what it sends to the model (`chunks_embedded` is
unchanged), LlamaIndex still emits its embedding events; only the arithmetic is not repeated.

A memo entry is one call: the model's cache key (ingest/embedcache.py `model_key`) and the SHA-256
of every text in the call, in order. A text's vector moves in the 7th decimal with its batch-mates
(padding), so a memo by single text would hand one ingest the vectors another ingest's batches
made; by call, a memoized answer is bit for bit what the model returns for that same call (the
engine is deterministic for a given input), and an ingest whose batches differ reaches the model.
A single question (the query path) is a call of one text.

Only the instances registered here are memoized: tests that build their own model
(test_embed_engines.py compares engines and batch effects) see the model itself.
"""

from __future__ import annotations

import threading
from hashlib import sha256

import numpy as np

_memo: dict[tuple[str, str], np.ndarray] = {}
_lock = threading.Lock()
_shared: set[int] = set()  # id() of the model instances whose calls are memoized
_keys: dict[int, str] = {}  # id() of a model -> its cache key (model_key)
_stats = {"hits": 0, "misses": 0}


def share_vectors(model) -> None:
    """Memoize `model`'s calls for the rest of the session (its ONNX engine only; a torch fallback
    runs as it is)."""
    try:
        from policydesk.providers.onnx_local import OnnxEmbedding
    except ImportError:  # the engine moved: the suite runs without the memo (slower, same results)
        return
    if not isinstance(model, OnnxEmbedding) or not hasattr(OnnxEmbedding, "embed_array"):
        return
    _install(OnnxEmbedding)
    _shared.add(id(model))


def stats() -> dict[str, int]:
    return dict(_stats)


def _call_key(model, texts: list[str]) -> tuple[str, str]:
    key = _keys.get(id(model))
    if key is None:
        try:
            from policydesk.ingest.embedcache import model_key
        except ImportError:  # moved: the class and its settings name the model well enough here
            def model_key(m):
                return f"{type(m).__name__}|{getattr(m, 'model_name', '')}|{getattr(m, 'engine', '')}"
        key = _keys.setdefault(id(model), model_key(model))
    digest = sha256()
    for t in texts:
        digest.update(sha256(t.encode("utf-8")).digest())
    return key, digest.hexdigest()


def _install(cls) -> None:
    if getattr(cls, "policydesk_test_memo", False):
        return
    original = cls.embed_array

    def embed_array(self, texts: list[str]) -> np.ndarray:
        if id(self) not in _shared or not texts:
            return original(self, texts)
        key = _call_key(self, list(texts))
        with _lock:
            found = _memo.get(key)
        if found is None:
            found = np.array(original(self, texts), dtype=np.float32)
            found.setflags(write=False)
            with _lock:
                _memo.setdefault(key, found)
            _stats["misses"] += 1
        else:
            _stats["hits"] += 1
        return found.copy()

    cls.embed_array = embed_array
    cls.policydesk_test_memo = True
