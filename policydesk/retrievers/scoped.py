"""One retrieval arm (pgvector cosine or Postgres full-text) under the caller's predicate.

The dense arm's statement is PGVectorStore's own (`_build_query`, with the access predicate as its
metadata filters), compiled once per clearance with the query vector left as a parameter. The
sync path sends it through a pipelined scoped read (`storage/pipelined.py`): the transaction's
settings, the query and the rollback in one wait, where `PGVectorStore.query` takes three and
rebuilds the statement each time. `tests/test_hybrid_pipelined_arms.py` pins its rows to
`PGVectorStore.query` for every role.
"""

from __future__ import annotations

import threading
from typing import Any, Literal

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import MetadataFilters, VectorStoreQuery, VectorStoreQueryMode
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import bindparam

from policydesk.config import DEFAULT_TEXT_CANDIDATES
from policydesk.retrievers.store import node_from_row, store_engines
from policydesk.storage.clearance import Clearance
from policydesk.storage.pipelined import compiled, scoped_reads
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

    def statement(self, embedding: list[float]) -> tuple[str, dict]:
        """The dense query as (sql, params) for a pipelined read."""
        table = self._store._table_class  # noqa: SLF001 - the store's own table and query builder
        engine = store_engines(self._store)[0]
        c = self._config
        key = (table.__table__.fullname, engine.dialect.name, c.clearance, c.top_k,
               c.extra_filters.model_dump_json() if c.extra_filters else None)
        with _COMPILED_LOCK:
            found = _COMPILED.get(key)
        if found is None:
            vector = bindparam("embedding", type_=table.embedding.type)
            stmt = self._store._build_query(vector, c.top_k, access_filters(c.clearance, c.extra_filters))  # noqa: SLF001
            sql, params = compiled(stmt, engine.dialect, keep=("embedding",))
            found = sql, params, table.embedding.type.bind_processor(engine.dialect)
            with _COMPILED_LOCK:
                if len(_COMPILED) >= 512:
                    _COMPILED.clear()
                _COMPILED[key] = found
        sql, params, to_db = found
        return sql, params | {"embedding": to_db(embedding)}

    @staticmethod
    def nodes(rows: list[tuple], built: dict | None = None) -> list[NodeWithScore]:
        """Rows of `statement` (id, node_id, text, metadata_, distance) as nodes scored by cosine
        similarity, as PGVectorStore scores them."""
        return [NodeWithScore(node=node_from_row(node_id, text, metadata, built), score=1 - distance)
                for _, node_id, text, metadata, distance in rows]

    def embedding(self, query_bundle: QueryBundle) -> list[float] | None:
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
        if self._config.mode == "dense":
            engine = store_engines(self._store)[0]
            [rows] = scoped_reads(engine, self._config.clearance, [self.statement(self.embedding(query_bundle))])
            return self.nodes(rows)
        # The plain text search under RLS (the path before migration 0010), kept for comparison.
        query = self._query(query_bundle, None)
        with permitted_scope(self._config.clearance):
            result = self._store.query(query)
        return _from_store_metadata(_to_scored(result))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = self._query(query_bundle, await self._aembedding(query_bundle))
        with permitted_scope(self._config.clearance):
            result = await self._store.aquery(query)
        return _from_store_metadata(_to_scored(result))


# Compiled dense statements by (table name, dialect, clearance, top k, extra filters).
_COMPILED: dict[tuple, tuple[str, dict, Any]] = {}
_COMPILED_LOCK = threading.Lock()


def _to_scored(result) -> list[NodeWithScore]:
    sims = result.similarities or [None] * len(result.nodes or [])
    return [NodeWithScore(node=n, score=s) for n, s in zip(result.nodes or [], sims)]
