"""One retrieval arm (pgvector cosine or Postgres full-text) under the caller's predicate."""

from __future__ import annotations

from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters, VectorStoreQuery, VectorStoreQueryMode
from pydantic import BaseModel, ConfigDict, Field

from policydesk.config import DEFAULT_TEXT_CANDIDATES
from policydesk.storage.clearance import Clearance
from policydesk.storage.predicate import access_filters
from policydesk.storage.scope import permitted_scope


class EmbeddingUnavailable(RuntimeError):
    """The query embedding could not be computed (provider error, quota, timeout)."""


# The full-text side path's default candidate cap (migration 0016), the one Settings uses.
TEXT_CANDIDATES = DEFAULT_TEXT_CANDIDATES


class ArmConfig(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    clearance: Clearance
    top_k: int = 8
    mode: Literal["dense", "text"] = "dense"
    extra_filters: MetadataFilters | None = None
    # The full-text side path's candidate cap (migration 0016): rows containing the question's
    # rarest words, up to about this many, are ranked; a caller who may read no more chunks than
    # this, or whose question's words are all rarer than this in total, gets the uncapped ranking.
    text_candidates: int = Field(default=TEXT_CANDIDATES, ge=1)


def _from_store_metadata(nodes: list[NodeWithScore]) -> list[NodeWithScore]:
    for n in nodes:
        n.node.metadata.pop("custom_fields", None)
    return nodes


class PermissionScopedRetriever(BaseRetriever):
    """Retrieve from PGVectorStore with the access predicate in the statement's WHERE clause.

    The same clearance is bound to the transaction for row-level security, the second layer.
    """

    def __init__(self, vector_store, embed_model: BaseEmbedding | None, config: ArmConfig, **kwargs: Any) -> None:
        if config.mode == "dense" and embed_model is None:
            raise ValueError("the dense arm needs an embedding model")
        self._store = vector_store
        self._embed_model = embed_model
        self._config = config
        super().__init__(**kwargs)

    @property
    def config(self) -> ArmConfig:
        return self._config

    def _query(self, query_bundle: QueryBundle, embedding: list[float] | None) -> VectorStoreQuery:
        c = self._config
        return VectorStoreQuery(
            query_embedding=embedding,
            query_str=query_bundle.query_str,
            similarity_top_k=c.top_k,
            sparse_top_k=c.top_k,
            filters=access_filters(c.clearance, c.extra_filters),
            mode=VectorStoreQueryMode.DEFAULT if c.mode == "dense" else VectorStoreQueryMode.TEXT_SEARCH,
        )

    def _embedding(self, query_bundle: QueryBundle) -> list[float] | None:
        if self._config.mode != "dense":
            return None
        if query_bundle.embedding is not None:
            return query_bundle.embedding
        try:
            return self._embed_model.get_query_embedding(query_bundle.query_str)
        except Exception as exc:  # any provider failure degrades, loudly, to full-text
            raise EmbeddingUnavailable(f"{exc.__class__.__name__}: {exc}") from exc

    async def _aembedding(self, query_bundle: QueryBundle) -> list[float] | None:
        if self._config.mode != "dense":
            return None
        if query_bundle.embedding is not None:
            return query_bundle.embedding
        try:
            return await self._embed_model.aget_query_embedding(query_bundle.query_str)
        except Exception as exc:
            raise EmbeddingUnavailable(f"{exc.__class__.__name__}: {exc}") from exc

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = self._query(query_bundle, self._embedding(query_bundle))
        with permitted_scope(self._config.clearance):
            result = self._store.query(query)
        return _from_store_metadata(_to_scored(result))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = self._query(query_bundle, await self._aembedding(query_bundle))
        with permitted_scope(self._config.clearance):
            result = await self._store.aquery(query)
        return _from_store_metadata(_to_scored(result))


def _to_scored(result) -> list[NodeWithScore]:
    sims = result.similarities or [None] * len(result.nodes or [])
    return [NodeWithScore(node=n, score=s) for n, s in zip(result.nodes or [], sims)]
