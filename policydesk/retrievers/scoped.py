"""The dense arm (pgvector cosine) under the caller's predicate.

The statement is PGVectorStore's own (`storage/upstream.dense_statement`, with the access
predicate as its metadata filters), compiled once per clearance with the query vector left as a
parameter, and sent through a pipelined scoped read (`storage/pipelined.py`): the transaction's
settings, the query and the rollback in one wait, where `PGVectorStore.query` takes three and
rebuilds the statement each time. `tests/test_hybrid_pipelined_arms.py` pins its rows to
`PGVectorStore.query` for every role.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores.types import MetadataFilters
from pydantic import BaseModel, ConfigDict, Field

from policydesk.config import DEFAULT_TEXT_CANDIDATES
from policydesk.retrievers.store import node_from_row
from policydesk.retrievers.threaded import ThreadedRetriever
from policydesk.storage.clearance import Clearance
from policydesk.storage.pipelined import compiled, scoped_reads
from policydesk.storage.predicate import access_filters
from policydesk.storage.upstream import EMBEDDING_PARAM, dense_statement, store_engines, store_table_name


class EmbeddingUnavailable(RuntimeError):
    """The query embedding could not be computed (provider error, quota, timeout)."""


# The full-text side path's default candidate cap (migration 0016), the one Settings uses.
TEXT_CANDIDATES = DEFAULT_TEXT_CANDIDATES


class ArmConfig(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    clearance: Clearance
    top_k: int = 8
    extra_filters: MetadataFilters | None = None
    # The full-text side path's candidate cap (migration 0016): rows containing the question's
    # rarest words, up to about this many, are ranked; a caller who may read no more chunks than
    # this, or whose question's words are all rarer than this in total, gets the uncapped ranking.
    text_candidates: int = Field(default=TEXT_CANDIDATES, ge=1)


class PermissionScopedRetriever(ThreadedRetriever):
    """Dense retrieval from PGVectorStore with the access predicate in the statement's WHERE clause.

    The same clearance is bound to the transaction for row-level security, the second layer.
    """

    def __init__(self, vector_store, embed_model: BaseEmbedding, config: ArmConfig, **kwargs: Any) -> None:
        if embed_model is None:
            raise ValueError("the dense arm needs an embedding model")
        self._store = vector_store
        self._engine = store_engines(vector_store)[0]
        self._embed_model = embed_model
        self._config = config
        super().__init__(**kwargs)

    @property
    def config(self) -> ArmConfig:
        return self._config

    def statement(self, embedding: list[float]) -> tuple[str, dict]:
        """The dense query as (sql, params) for a pipelined read."""
        c = self._config
        sql, params, to_db = _compiled_dense(_DenseKey(
            store_table_name(self._store), self._engine.dialect, c.clearance, c.top_k,
            c.extra_filters.model_dump_json() if c.extra_filters else None, self._store, c.extra_filters))
        return sql, params | {EMBEDDING_PARAM: to_db(embedding)}

    @staticmethod
    def nodes(rows: list[tuple], build: Callable[[str, str, dict], TextNode] = node_from_row) -> list[NodeWithScore]:
        """Rows of `statement` (id, node_id, text, metadata_, distance) as nodes (`build`) scored by
        cosine similarity, as PGVectorStore scores them."""
        return [NodeWithScore(node=build(node_id, text, metadata), score=1 - distance)
                for _, node_id, text, metadata, distance in rows]

    def embedding(self, query_bundle: QueryBundle) -> list[float]:
        if query_bundle.embedding is not None:
            return query_bundle.embedding
        try:
            return self._embed_model.get_query_embedding(query_bundle.query_str)
        except Exception as exc:  # any provider failure degrades, loudly, to full-text
            raise EmbeddingUnavailable(f"{exc.__class__.__name__}: {exc}") from exc

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        [rows] = scoped_reads(self._engine, self._config.clearance, [self.statement(self.embedding(query_bundle))])
        return self.nodes(rows)


@dataclass(frozen=True)
class _DenseKey:
    """What a compiled dense statement depends on; the store and filters ride along unhashed."""

    table: str
    dialect: Any
    clearance: Clearance
    top_k: int
    filters_json: str | None
    store: Any = field(compare=False, hash=False)
    filters: MetadataFilters | None = field(compare=False, hash=False)


@lru_cache(maxsize=512)
def _compiled_dense(key: _DenseKey) -> tuple[str, dict, Any]:
    stmt, column_type = dense_statement(key.store, key.top_k, access_filters(key.clearance, key.filters))
    sql, params = compiled(stmt, key.dialect, keep=(EMBEDDING_PARAM,))
    return sql, params, column_type.bind_processor(key.dialect)
