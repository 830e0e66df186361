"""Migrations, roles and the schema the rest of PolicyDesk stands on."""

from sqlalchemy import text

from policydesk.storage.migrate import current_revision


def _head() -> str:
    from alembic.script import ScriptDirectory

    from policydesk.storage.migrate import MIGRATIONS

    heads = ScriptDirectory(str(MIGRATIONS)).get_heads()
    assert len(heads) == 1, f"migrations have several heads: {heads}"
    return heads[0]


def test_migrations_run_up_from_empty(make_db):
    db = make_db()
    assert current_revision(db.owner) == _head()
    with db.owner.connect() as conn:
        tables = set(conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars())
        ext = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar_one()
    assert {"users", "documents", "document_versions", "data_chunks", "traces", "audit_log", "login_attempts",
            "api_tokens", "api_requests"} <= tables
    assert tuple(int(p) for p in ext.split(".")[:2]) >= (0, 8)


def test_app_role_is_not_superuser_and_cannot_bypass_rls(make_db, settings):
    db = make_db()
    with db.app.connect() as conn:
        row = conn.execute(text(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        )).one()
        user = conn.execute(text("SELECT current_user")).scalar_one()
    assert user == settings.APP_DB_ROLE
    assert row == (False, False)


def test_rls_is_forced_on_policy_tables(make_db):
    db = make_db()
    with db.owner.connect() as conn:
        rows = conn.execute(text(
            "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
            "WHERE relname IN ('data_chunks', 'document_versions', 'documents', 'traces', 'audit_log') ORDER BY relname"
        )).all()
    assert rows == [("audit_log", True, True), ("data_chunks", True, True), ("document_versions", True, True),
                    ("documents", True, True), ("traces", True, True)]


def test_app_role_cannot_write_policy_text(make_db):
    import pytest
    from sqlalchemy.exc import ProgrammingError

    db = make_db()
    with pytest.raises(ProgrammingError, match="permission denied"):
        with db.app.begin() as conn:
            conn.execute(text("INSERT INTO data_chunks (text, metadata_, node_id) VALUES ('x', '{}', 'x')"))
