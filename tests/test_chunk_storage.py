"""Where a chunk's columns live (migration 0020): the vector and metadata every visited row is
read for stay in the row; the text, read only for the rows returned, may go out of line."""

from __future__ import annotations

from sqlalchemy import text

from policydesk.accounts.access import clearance_for
from policydesk.ingest.chunks import make_node, row_metadata
from policydesk.retrievers import chunk_vector_store
from policydesk.retrievers.scoped import ArmConfig, PermissionScopedRetriever
from policydesk.storage.models import Chunk

_OUT_OF_LINE = ("SELECT count(*) FILTER (WHERE pg_column_toast_chunk_id(embedding) IS NOT NULL), "
                "count(*) FILTER (WHERE pg_column_toast_chunk_id(metadata_) IS NOT NULL), "
                "count(*) FILTER (WHERE pg_column_toast_chunk_id(text) IS NOT NULL), count(*) FROM data_chunks")


def test_ingested_chunks_keep_their_vector_and_metadata_in_the_row(demo_db):
    with demo_db.owner.connect() as conn:
        vectors_out, metadata_out, _, rows = conn.execute(text(_OUT_OF_LINE)).one()
        storage = dict(conn.execute(text(
            "SELECT attname, attstorage FROM pg_attribute WHERE attrelid = 'data_chunks'::regclass "
            "AND attname IN ('embedding', 'metadata_', 'text')")).all())
    assert rows > 100
    assert (vectors_out, metadata_out) == (0, 0)
    assert storage == {"embedding": "m", "metadata_": "m", "text": "x"}


def test_a_long_section_goes_out_of_line_and_comes_back_whole(make_db, demo_db, embed_model):
    """The text makes way for the vector: a 30 kB section is stored out of line, its vector in the
    row, and the dense arm returns the section's text exactly."""
    db = make_db()
    long_text = " ".join(f"Clause {i}: a claim line billed after the filing limit is denied." for i in range(500))
    with demo_db.owner.connect() as conn:
        stored = conn.execute(text("SELECT embedding::text FROM data_chunks LIMIT 1")).scalar_one()
    vector = [float(x) for x in stored.strip("[]").split(",")]
    meta = {"chunk_id": "LONG-1:v1:s", "title": "A long manual chapter", "version": 1, "section": "S",
            "section_id": "s", "source_type": "policy", "effective_from": "2024-01-01", "effective_to": "9999-12-31",
            "supersedes": None, "superseded_by": None, "date_basis": "date_of_service", "access_level": "public",
            "sensitive": False, "owner": "t", "related_policies": [], "source_file": "x", "text_sha256": "0"}
    node = make_node("LONG-1", long_text, meta)
    with db.owner.begin() as conn:
        conn.execute(Chunk.__table__.insert(), [dict(node_id=node.node_id, text=long_text,
                                                     metadata_=row_metadata(node), embedding=vector)])
    with db.owner.connect() as conn:
        vectors_out, metadata_out, texts_out, rows = conn.execute(text(_OUT_OF_LINE)).one()
    assert (vectors_out, metadata_out, texts_out, rows) == (0, 0, 1, 1)

    arm = PermissionScopedRetriever(chunk_vector_store(db), embed_model, ArmConfig(clearance=clearance_for("rep")))
    [hit] = arm.retrieve("When is a late claim line denied?")
    assert hit.node.get_content() == long_text
