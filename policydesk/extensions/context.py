"""What an extension component is given for one request: what the built-in arms get.

A component never builds its own access rule or opens its own engine. Every read it makes goes
through this context, so it carries the caller's predicate in its SQL (`where`, `filters`) and
the caller's row-level-security scope on its connection (`session`, `scope`), the two layers the
built-in retrievers use (docs/design.md, step 3). The clearance guard re-checks whatever it
returns anyway (`policydesk.postprocessors.guard`).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import MetadataFilters
from sqlalchemy import ColumnElement
from sqlalchemy.orm import Session

from policydesk.storage.clearance import Clearance
from policydesk.storage.models import Chunk
from policydesk.storage.predicate import access_clause, access_filters
from policydesk.storage.scope import Scope, permitted_scope, scoped_session
from policydesk.versions.repository import row_to_node


@dataclass(frozen=True)
class ComponentContext:
    clearance: Clearance  # what the caller may read (role, levels, sensitive)
    dates: Mapping[str, date]  # dates entered for this request, by date basis (date_of_service, ...)
    today: date  # the request's "today" (injectable in tests and evals)
    top_k: int  # how many nodes the answer is built from
    engine: Any = field(repr=False)  # the application engine: no BYPASSRLS, RLS binds it
    async_engine: Any = field(repr=False)
    vector_store: Any = field(default=None, repr=False)  # the PGVectorStore over data_chunks
    embed_model: Any = field(default=None, repr=False)  # the query embedder the dense arm uses

    def session(self) -> Session:
        """A Session whose every transaction carries the caller's RLS scope."""
        return scoped_session(self.engine, self.clearance)

    def scope(self) -> AbstractContextManager[Scope]:
        """Bind the caller's RLS scope to every transaction opened inside the block (connections
        on `engine` or `async_engine`)."""
        return permitted_scope(self.clearance)

    def where(self, model: Any = Chunk) -> ColumnElement[bool]:
        """The access predicate on a model's stored `access_level` / `sensitive` columns."""
        return access_clause(self.clearance, model)

    def filters(self, extra: MetadataFilters | None = None) -> MetadataFilters:
        """The same predicate as PGVectorStore metadata filters (plus yours, ANDed)."""
        return access_filters(self.clearance, extra)

    @staticmethod
    def node(text: str, metadata: dict) -> TextNode:
        """A node from a stored `data_chunks` row (text, metadata_), as PGVectorStore builds it."""
        return row_to_node(text, metadata)
