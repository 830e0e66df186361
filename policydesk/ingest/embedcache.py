"""Embed chunk texts through the embedding cache (migration 0011), in the background.

A vector is reused when the same model already embedded the same exact text (the document title
and chunk, as `embed_text` builds it): keyed by (model key, SHA-256 of that text). Re-ingest after
one file changed, a new version that repeats most sections of the old one, or a rebuild of the
chunks then embeds only text never seen before. New vectors are written in the ingest's own
transaction: an ingest that fails leaves no cache rows either.

The model runs while the ingest reads the next files (`EmbeddingQueue`): on a first load the
model is most of the work, and reading, screening and chunking every file before it started, and
writing every chunk after it finished, would leave one of two cores idle meanwhile
(docs/performance.md, "Ingest").
"""

from __future__ import annotations

import contextvars
import hashlib
from array import array
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
from pgvector import Vector
from sqlalchemy import Text, cast, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session
from tqdm import tqdm

from policydesk.providers.fingerprint import weights_fingerprint
from policydesk.storage.models import EmbeddingCache

# Settings of an embedding model that change its vectors, where the class has them ("engine": the
# ONNX Runtime engine's precision and file, providers/onnx_local.py).
_MODEL_ATTRS = ("max_length", "normalize", "text_instruction", "embed_dim", "dimensions",
                "output_dimensionality", "pooling", "engine")


def model_key(embed_model) -> str:
    """Which model made a vector: class, model name and the settings that change its output; for a
    local model directory, its last two path parts and a fingerprint of its files instead of the full path
    (so two installs of the same weights share the cache, and changed weights do not)."""
    name = str(getattr(embed_model, "model_name", "") or "")
    path = Path(name)
    if name and path.is_dir():
        name = f"{path.parent.name}/{path.name}@{weights_fingerprint(path)}"
    parts = [type(embed_model).__name__, name]
    parts += [f"{a}={getattr(embed_model, a)}" for a in _MODEL_ATTRS if getattr(embed_model, a, None) is not None]
    return "|".join(parts)


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorText(Vector):
    """A vector held as pgvector's text form, which is what pgvector's SQLAlchemy type sends for a
    `Vector` (`to_text()`). A vector is written twice per first load (cache row, chunk row) and
    read back from the cache on every rebuild; pgvector formats each float with `repr` (17 digits
    for a float32 value, each time the vector is written) and parses the cache's text back into
    floats. Here a vector is formatted once, as float32 to 9 significant digits (which
    round-trips every float32 exactly, so Postgres stores the same `real` values; the test pins
    it), and a cached one is passed on as read."""

    def __init__(self, text: str) -> None:  # noqa: D107 - no float list kept; see _value
        self._text = text

    @classmethod
    def of(cls, values) -> VectorText:
        """The model's output (floats of any width), as float32 text."""
        floats = np.asarray(values, dtype=np.float32).tolist()
        return cls("[" + ",".join(["%.9g" % x for x in floats]) + "]")

    @property
    def _value(self) -> array:  # what Vector's other methods read, parsed only if asked for
        return array("f", self._from_text(self._text))

    def to_text(self) -> str:
        return self._text


class EmbeddingQueue:
    """Texts handed in as the ingest plans each file, embedded on background threads meanwhile.

    Every `embed_batch_size` new texts (not seen before in this ingest) are looked up in the cache
    at once; those not there are sorted by length (so a batch pads to similar lengths) and go to
    the model as one batch. Batches are cut by count in the order texts arrive, never by timing,
    so one corpus gives the same batches, and the same vectors, every time. Two batches are at the
    model at once, so its worker threads never wait for the slowest text of a batch. Everything
    touching the database (look-ups, cache inserts) runs on the caller's thread in its session,
    which is not thread-safe; the background threads only call the model (ONNX Runtime and torch
    release the GIL while they compute, so reading goes on meanwhile).

    Use as a context manager: leaving it (an error, a refused file) cancels what has not started
    and waits for what has, so no model call outlives the ingest.
    """

    def __init__(self, session: Session, embed_model, *, progress: bool = False) -> None:
        self._session = session
        self._model = embed_model
        self._key = model_key(embed_model)
        self._batch = max(1, getattr(embed_model, "embed_batch_size", 32))
        self._texts: dict[str, str] = {}  # SHA-256 -> text, every text handed in
        self._pending: list[str] = []  # handed in, not looked up yet
        self._vectors: dict[str, VectorText] = {}  # found in the cache, or embedded and stored
        self._running: list[tuple[list[str], Future]] = []  # batches at the model, in order
        self._pool = ThreadPoolExecutor(2, thread_name_prefix="policydesk-ingest-embed")
        self._bar = tqdm(total=0, desc="embedding", unit="chunk", disable=not progress)
        self.embedded = 0  # texts sent to the model

    def __enter__(self) -> EmbeddingQueue:
        return self

    def __exit__(self, *exc) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._bar.close()

    def add(self, texts: list[str]) -> list[str]:
        """Queue `texts`; their keys, for `ready` and `vectors`."""
        keys = [text_sha256(t) for t in texts]
        for k, t in zip(keys, texts):
            if k not in self._texts:
                self._texts[k] = t
                self._pending.append(k)
        while len(self._pending) >= self._batch:
            self._dispatch(self._pending[: self._batch])
            del self._pending[: self._batch]
        while self._running and self._running[0][1].done():
            self._store_next()
        return keys

    def finish(self) -> None:
        """No more texts: send what is left to the model."""
        if self._pending:
            self._dispatch(self._pending)
            self._pending = []

    def ready(self, keys: list[str]) -> bool:
        return all(k in self._vectors for k in keys)

    def wait(self) -> bool:
        """Store the next batch the model returns (waiting for it); False when none is left."""
        if not self._running:
            return False
        self._store_next()
        return True

    def vectors(self, keys: list[str]) -> list[VectorText]:
        """The vectors of texts queued before, in order, waiting for the model where needed."""
        self.finish()
        while not self.ready(keys) and self.wait():
            pass
        return [self._vectors[k] for k in keys]

    def _dispatch(self, keys: list[str]) -> None:
        rows = self._session.execute(select(EmbeddingCache.text_sha256, cast(EmbeddingCache.embedding, Text)).where(
            EmbeddingCache.model == self._key, EmbeddingCache.text_sha256.in_(keys)))
        self._vectors.update((k, VectorText(v)) for k, v in rows)
        todo = sorted((k for k in keys if k not in self._vectors), key=lambda k: len(self._texts[k]))
        if not todo:
            return
        self._bar.total += len(todo)
        self._bar.refresh()
        call = contextvars.copy_context().run  # the caller's instrumentation context
        texts = [self._texts[k] for k in todo]
        self._running.append((todo, self._pool.submit(call, self._model.get_text_embedding_batch, texts)))
        self.embedded += len(todo)

    def _store_next(self) -> None:
        """Keep and cache the vectors of the oldest batch at the model."""
        todo, future = self._running.pop(0)
        vectors = future.result()  # a model error is raised here, on the ingest's thread
        self._vectors.update(zip(todo, map(VectorText.of, vectors)))
        self._session.execute(insert(EmbeddingCache).values(
            [{"model": self._key, "text_sha256": k, "embedding": self._vectors[k]} for k in todo]
        ).on_conflict_do_nothing())
        self._bar.update(len(todo))

