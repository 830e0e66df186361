"""Embed chunk texts through the embedding cache (migration 0011).

A vector is reused when the same model already embedded the same exact text (the document title
and chunk, as `embed_text` builds it): keyed by (model key, SHA-256 of that text). Re-ingest after
one file changed, a new version that repeats most sections of the old one, or a rebuild of the
chunks then embeds only text never seen before. Texts still to embed are batched by length, so a
batch pads to similar lengths. New vectors are written in the ingest's own transaction: an ingest
that fails leaves no cache rows either.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from sqlalchemy import select
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


def embed_cached(session: Session, texts: list[str], embed_model, *, progress: bool = False
                 ) -> tuple[list[list[float]], int]:
    """One vector per text, in order, and how many texts had to be embedded now."""
    key = model_key(embed_model)
    hashes = [text_sha256(t) for t in texts]
    unique = list(dict.fromkeys(hashes))
    found: dict[str, list[float]] = {}
    for start in range(0, len(unique), 1000):
        rows = session.execute(select(EmbeddingCache.text_sha256, EmbeddingCache.embedding).where(
            EmbeddingCache.model == key, EmbeddingCache.text_sha256.in_(unique[start:start + 1000])))
        found.update((h, [float(x) for x in v]) for h, v in rows)
    first_text = dict(zip(hashes, texts))
    todo = sorted((h for h in unique if h not in found), key=lambda h: len(first_text[h]))
    batch = max(1, getattr(embed_model, "embed_batch_size", 32))
    with tqdm(total=len(todo), desc="embedding", unit="chunk", disable=not progress) as bar:
        for start in range(0, len(todo), batch):
            part = todo[start:start + batch]
            vectors = embed_model.get_text_embedding_batch([first_text[h] for h in part])
            found.update(zip(part, ([float(x) for x in v] for v in vectors)))
            session.execute(insert(EmbeddingCache).values(
                [{"model": key, "text_sha256": h, "embedding": found[h]} for h in part]
            ).on_conflict_do_nothing())
            bar.update(len(part))
    return [found[h] for h in hashes], len(todo)
