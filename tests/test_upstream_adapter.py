"""What `policydesk/storage/upstream.py` relies on inside PGVectorStore and SQLAlchemy.

Each test pins one upstream behaviour the adapter reads through a private member, so a library
upgrade that changes it fails here, naming the member, rather than somewhere in retrieval."""

from __future__ import annotations

import pytest
from llama_index.core.vector_stores.types import VectorStoreQuery
from sqlalchemy import create_engine, event

from policydesk.accounts.access import ROLES, clearance_for
from policydesk.retrievers import chunk_vector_store
from policydesk.storage.pipelined import compiled, scoped_reads
from policydesk.storage.predicate import access_filters
from policydesk.storage.scope import permitted_scope
from policydesk.storage.upstream import EMBEDDING_PARAM, dense_statement, has_listeners, store_engines, store_table_name

QUESTION = "How long does a provider have to file a claim?"


def test_the_store_keeps_the_engines_it_was_built_with(demo_db):
    # PGVectorStore._engine / _async_engine: the very engines chunk_vector_store passed in.
    sync, async_ = store_engines(chunk_vector_store(demo_db))
    assert sync is demo_db.app and async_ is demo_db.app_async


def test_the_store_reads_the_chunk_table(demo_db):
    # PGVectorStore._table_class: the mapped class over data_<table_name>, the table Alembic owns.
    assert store_table_name(chunk_vector_store(demo_db)) == "public.data_chunks"


def test_the_dense_statement_selects_what_the_arm_reads_and_leaves_the_vector_a_parameter(demo_db):
    # PGVectorStore._build_query: (id, node_id, text, metadata_, distance) by cosine distance, the
    # filters in the WHERE, cut at k; a bound vector stays a parameter after compilation.
    stmt, column_type = dense_statement(chunk_vector_store(demo_db), 7, access_filters(clearance_for("rep")))
    assert [c.name for c in stmt.selected_columns] == ["id", "node_id", "text", "metadata_", "distance"]
    sql, params = compiled(stmt, demo_db.app.dialect, keep=(EMBEDDING_PARAM,))
    assert f"%({EMBEDDING_PARAM})s" in sql and "<=>" in sql and "distance asc" in sql
    assert "metadata_->>'access_level'" in sql.replace('"', "") or "access_level" in sql
    assert 7 in params.values()
    assert column_type.bind_processor(demo_db.app.dialect) is not None


@pytest.mark.parametrize("role", ROLES)
def test_the_dense_statement_returns_the_rows_pgvectorstore_query_returns(role, demo_db, embed_model):
    store, c = chunk_vector_store(demo_db), clearance_for(role)
    embedding = embed_model.get_query_embedding(QUESTION)
    stmt, column_type = dense_statement(store, 20, access_filters(c))
    sql, params = compiled(stmt, demo_db.app.dialect, keep=(EMBEDDING_PARAM,))
    to_db = column_type.bind_processor(demo_db.app.dialect)
    [rows] = scoped_reads(demo_db.app, c, [(sql, params | {EMBEDDING_PARAM: to_db(embedding)})])
    with permitted_scope(c):
        expected = store.query(VectorStoreQuery(query_embedding=embedding, similarity_top_k=20,
                                                filters=access_filters(c)))
    assert [r[1] for r in rows] == list(expected.ids) and rows
    assert [1 - r[4] for r in rows] == pytest.approx(expected.similarities, abs=1e-9)


def test_has_listeners_follows_listeners_on_the_engine_and_the_connection(demo_db):
    # Connection._has_events / Engine._has_events: set once any listener is attached to either.
    engine = create_engine(demo_db.app.url)
    try:
        def spy(*args, **kwargs) -> None:
            return None

        with engine.connect() as conn:
            assert has_listeners(conn) is False
            event.listen(conn, "before_cursor_execute", spy)
            assert has_listeners(conn) is True
        with engine.connect() as conn:
            assert has_listeners(conn) is False  # a connection's listener leaves with it
        event.listen(engine, "before_cursor_execute", spy)
        with engine.connect() as conn:
            assert has_listeners(conn) is True
    finally:
        engine.dispose()
