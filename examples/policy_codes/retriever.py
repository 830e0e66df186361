"""Exact match on the plan's own codes: a retriever that joins the built-in arms' fusion."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy import Select

from examples.policy_codes.codes import check_pattern, codes_in, matching_chunks
from policydesk.extensions import ComponentContext


class CodeMatchConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    pattern: str = Field(description="Regex for one of the plan's codes, e.g. '[A-Z]{2,4}-\\d{2,4}'.")
    top_k: int = Field(default=8, gt=0, le=50, description="At most this many chunks per question part.")

    @field_validator("pattern")
    @classmethod
    def _check_pattern(cls, value: str) -> str:
        return check_pattern(value)


class PolicyCodeRetriever(BaseRetriever):
    """Chunks that name a code the question names (document id, section heading or text).

    Embeddings place "PA-104" near any other short code; an exact match does not. Reads go through
    the request's `ComponentContext`: the access predicate in the WHERE clause and the caller's
    row-level-security scope on the connection, in both the sync and the async path.
    """

    def __init__(self, context: ComponentContext, *, pattern: str, top_k: int = 8, **kwargs: Any) -> None:
        self._context = context
        self._config = CodeMatchConfig(pattern=pattern, top_k=top_k)
        super().__init__(**kwargs)

    @property
    def config(self) -> CodeMatchConfig:
        return self._config

    def _statement(self, query_bundle: QueryBundle) -> Select | None:
        codes = codes_in(self._config.pattern, query_bundle.query_str)
        return matching_chunks(codes, self._context.where(), self._config.top_k) if codes else None

    def _nodes(self, rows) -> list[NodeWithScore]:
        return [NodeWithScore(node=self._context.node(r.text, r.metadata_), score=float(r.score)) for r in rows]

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        stmt = self._statement(query_bundle)
        if stmt is None:
            return []
        with self._context.session() as session:
            return self._nodes(session.execute(stmt).all())

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        stmt = self._statement(query_bundle)
        if stmt is None:
            return []
        with self._context.scope():
            async with self._context.async_engine.connect() as conn:
                return self._nodes((await conn.execute(stmt)).all())
