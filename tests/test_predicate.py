"""The one access-predicate builder and the clearance-bound session, on the demo corpus."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text
from sqlalchemy.dialects import postgresql

from policydesk.accounts.access import ROLES, Clearance, clearance_for
from policydesk.storage.models import Chunk, DocumentVersion
from policydesk.storage.predicate import access_clause, access_filters
from policydesk.storage.scope import scoped_session


def _sql(clause) -> str:
    return str(clause.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))


def test_clause_is_on_plain_columns_and_filters_match_it():
    rep = clearance_for("rep")
    clause = _sql(access_clause(rep, Chunk))
    # Plain stored columns (migration 0003), never metadata_->>: the index stays usable under RLS.
    assert clause == "data_chunks.access_level IN ('public', 'internal') AND NOT data_chunks.sensitive"
    assert "metadata_" not in clause
    filters = access_filters(rep)
    assert [(f.key, f.value) for f in filters.filters] == [("access_level", ["public", "internal"]), ("sensitive", "false")]
    assert _sql(access_clause(clearance_for("compliance"), DocumentVersion)) == (
        "document_versions.access_level IN ('public', 'internal', 'restricted', 'compliance')")


@pytest.mark.parametrize("levels", [(), ("public", "secret")])
def test_unknown_or_empty_levels_are_refused(levels):
    bad = Clearance(role="test", levels=levels, sensitive=False)
    with pytest.raises(ValueError, match="refusing to build a predicate"):
        access_clause(bad, Chunk)
    with pytest.raises(ValueError, match="refusing to build a predicate"):
        access_filters(bad)


@pytest.mark.parametrize("role", ROLES)
def test_clause_and_row_level_security_agree(role, demo_db):
    clearance = clearance_for(role)
    with demo_db.owner.connect() as conn:  # outside RLS: only the predicate decides
        by_predicate = set(conn.execute(select(Chunk.node_id).where(access_clause(clearance, Chunk))).scalars())
    with scoped_session(demo_db.app, clearance) as session:  # under RLS, no predicate of ours
        by_rls = set(session.execute(text("SELECT node_id FROM data_chunks")).scalars())
    assert by_predicate and by_predicate == by_rls


def test_scoped_session_binds_every_transaction(demo_db):
    # The binding belongs to the session, not to a context variable, so it survives the
    # thread hop between a FastAPI dependency and its route, and a commit in between.
    with scoped_session(demo_db.app, clearance_for("rep")) as session:
        first = session.execute(text("SELECT count(*) FROM document_versions")).scalar_one()
        session.commit()
        second = session.execute(text("SELECT count(*) FROM document_versions WHERE NOT sensitive")).scalar_one()
    assert first > 0 and first == second


def test_a_sessions_scope_wins_over_the_context_and_costs_one_statement(demo_db):
    # Inside a compliance reviewer's context, a session bound to a rep sees what a rep sees: the
    # session's scope is the one the engine's begin hook sets, in its single set_config statement.
    from sqlalchemy import create_engine, event

    from policydesk.storage.scope import permitted_scope

    rep = clearance_for("rep")
    statements: list[str] = []
    spy = lambda conn, cursor, statement, *args: statements.append(statement)  # noqa: E731
    event.listen(demo_db.app, "before_cursor_execute", spy)
    try:
        with permitted_scope(clearance_for("compliance")), scoped_session(demo_db.app, rep) as session:
            seen = set(session.execute(text("SELECT node_id FROM data_chunks")).scalars())
    finally:
        event.remove(demo_db.app, "before_cursor_execute", spy)
    with demo_db.owner.connect() as conn:
        allowed = set(conn.execute(select(Chunk.node_id).where(access_clause(rep, Chunk))).scalars())
    assert seen == allowed and len(seen) < len(_all_chunk_ids(demo_db))
    assert sum("set_config" in s for s in statements) == 1, statements
    # An engine without the begin hook (an extension's own engine) still gets the scope bound.
    bare = create_engine(demo_db.app_url)
    try:
        with scoped_session(bare, rep) as session:
            assert set(session.execute(text("SELECT node_id FROM data_chunks")).scalars()) == allowed
    finally:
        bare.dispose()


def _all_chunk_ids(db) -> set[str]:
    with db.owner.connect() as conn:
        return set(conn.execute(select(Chunk.node_id)).scalars())
