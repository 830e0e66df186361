"""The one module that reads private members of PGVectorStore and SQLAlchemy.

Nothing else in `policydesk/` names a library's private member; every such reach is here, and
`tests/test_upstream_adapter.py` pins the upstream behaviour each one relies on, so an upgrade
of either library that changes it fails there, by name, instead of somewhere in retrieval:

- `store_engines`: the (sync, async) engines a chunk store was built with. We passed them in
  (`retrievers.store.chunk_vector_store`), but PGVectorStore keeps them as `_engine` /
  `_async_engine` only.
- `dense_statement`: PGVectorStore's own dense query (`_build_query` over `_table_class`), with
  the query vector a bound parameter, so it can be compiled once per clearance and sent down a
  pipelined read. Its rows are exactly `PGVectorStore.query`'s (DEFAULT mode) rows.
- `has_listeners`: whether any `before_cursor_execute`-style listener is attached to a
  connection or its engine (SQLAlchemy's `_has_events`), so statements sent past SQLAlchemy are
  announced to them only when someone listens.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.vector_stores.types import MetadataFilters
from sqlalchemy import Select, bindparam
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.types import TypeEngine

# The bound parameter that carries the query vector in `dense_statement`.
EMBEDDING_PARAM = "embedding"


def store_engines(store) -> tuple[Engine, Any]:
    """The (sync, async) engines a PGVectorStore was built with."""
    return store._engine, store._async_engine  # noqa: SLF001


def store_table_name(store) -> str:
    """The schema-qualified name of the table a PGVectorStore reads (`public.data_<table_name>`)."""
    return store._table_class.__table__.fullname  # noqa: SLF001


def dense_statement(store, top_k: int, filters: MetadataFilters) -> tuple[Select, TypeEngine]:
    """PGVectorStore's cosine top-k SELECT (id, node_id, text, metadata_, distance) under `filters`,
    with the query vector left as the `embedding` parameter; and that column's type, whose bind
    processor turns a vector into what the driver sends."""
    column_type = store._table_class.embedding.type  # noqa: SLF001
    vector = bindparam(EMBEDDING_PARAM, type_=column_type)
    return store._build_query(vector, top_k, filters), column_type  # noqa: SLF001


def has_listeners(conn: Connection) -> bool:
    """True when the connection or its engine has any event listener attached."""
    return bool(conn._has_events or conn.engine._has_events)  # noqa: SLF001
