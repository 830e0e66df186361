"""Database set-up shared by tests that write many rows by hand."""

from __future__ import annotations

from sqlalchemy import text

from policydesk.accounts.access import ROLES, clearance_for
from policydesk.storage.models import Chunk
from policydesk.storage.scope import scoped_session


def insert_chunk_rows(db, rows: list[dict]) -> None:
    """Insert `rows` into data_chunks in one transaction, as a bulk load: the HNSW indexes are
    dropped first and built again afterwards with the definitions they had (pg_indexes).

    Inserted one by one, a few thousand near-duplicate vectors cost 20-40 s of graph inserts on
    two shared cores; a build over the same rows takes 2-3 s and gives an index with the same name,
    operator class and parameters. Triggers and every other index see the rows as before."""
    with db.owner.begin() as conn:
        indexes = conn.execute(text(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = 'data_chunks' AND indexdef ILIKE '% USING hnsw %'")).all()
        for name, _ in indexes:
            conn.execute(text(f'DROP INDEX "{name}"'))
        conn.execute(Chunk.__table__.insert(), rows)
        for _, definition in indexes:
            conn.execute(text(definition))


def visible_levels(engine, role: str) -> dict[str, int]:
    """Chunks per access level that `role` reads through `engine` (the app login, under RLS)."""
    with scoped_session(engine, clearance_for(role)) as session:
        return dict(session.execute(text("SELECT access_level, count(*) FROM data_chunks GROUP BY 1")).all())


def distinct_clearances() -> int:
    """How many different clearances the roles have (admin reads as a rep does)."""
    return len({(clearance_for(r).levels, clearance_for(r).sensitive) for r in ROLES})
