"""The pipeline's embedding model, remembering each query vector for the rest of its request.

The dense arm embeds the question, and the offline answerer ranks sentences against the same
question (each part of a split question): without this, the second asks for a vector the first
computed, a whole model run per answer. The vectors live only inside `request_vectors()` and are
keyed by the exact text, so nothing crosses requests or users; outside a request, and for every
text (chunk) embedding, it is the wrapped model unchanged.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

__all__ = ["RequestEmbedding", "request_vectors"]


@contextmanager
def request_vectors() -> Iterator[None]:
    """One request's scope: query vectors computed inside it are reused inside it only."""
    token = _request_vectors.set({})
    try:
        yield
    finally:
        _request_vectors.reset(token)


# The query vectors of the request under way, by text (see RequestEmbedding).
_request_vectors: contextvars.ContextVar[dict[str, list[float]] | None] = contextvars.ContextVar(
    "policydesk_request_vectors", default=None)


class RequestEmbedding(BaseEmbedding):
    """The wrapped embedding model, reusing a query vector within one request (module docstring)."""

    _inner: Any = PrivateAttr()

    def __init__(self, inner: Any) -> None:
        super().__init__(model_name=getattr(inner, "model_name", "unknown"),
                         embed_batch_size=getattr(inner, "embed_batch_size", 10))
        self._inner = inner

    @classmethod
    def class_name(cls) -> str:
        return "RequestEmbedding"

    @property
    def inner(self) -> Any:
        return self._inner

    def _get_query_embedding(self, query: str) -> list[float]:
        vectors = _request_vectors.get()
        if vectors is not None and query in vectors:
            return vectors[query]
        vector = self._inner.get_query_embedding(query)
        if vectors is not None:
            vectors[query] = vector
        return vector

    async def _aget_query_embedding(self, query: str) -> list[float]:
        vectors = _request_vectors.get()
        if vectors is not None and query in vectors:
            return vectors[query]
        vector = await self._inner.aget_query_embedding(query)
        if vectors is not None:
            vectors[query] = vector
        return vector

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._inner.get_text_embedding(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._inner.get_text_embedding_batch(texts)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await self._inner.aget_text_embedding(text)

    def __getattr__(self, name: str) -> Any:  # anything else the wrapped model offers
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name.startswith("_"):
                raise
            return getattr(self._inner, name)
