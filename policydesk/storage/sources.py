"""Scoped reads of stored sources (document versions and chunks), as keyword-only functions.

Each function takes a session opened with `scoped_session` (row-level security binds it) and
the caller's `Clearance`, and puts `access_clause` in its own WHERE clause as well: a row the
caller can't see is never fetched, and a missing scope can't widen what is read. Chunk reads
compare the plain columns of migration 0003, never `metadata_->>…`: under RLS only leakproof
comparisons can use the (doc_id, version, section_id) index.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ARRAY, Integer, Row, Select, Text, any_, bindparam, cast, func, select
from sqlalchemy.orm import Session

from policydesk.storage.clearance import Clearance
from policydesk.storage.models import Chunk, DocumentVersion
from policydesk.storage.predicate import access_clause


def _versions_where(doc_filter, clearance: Clearance) -> Select:
    v = DocumentVersion
    return (select(v.doc_id, v.version, v.title, v.effective_from, v.effective_to, v.date_basis, v.superseded_by)
            .where(doc_filter, access_clause(clearance, v))
            .order_by(v.doc_id, v.effective_from, v.version))


def array_param(name: str, item_type=Text):
    """A list parameter bound at call time, compared with `= ANY(...)` (one statement text for any
    number of values, so it can be compiled once per clearance: storage/pipelined.py)."""
    return bindparam(name, value=[], type_=ARRAY(item_type))


def versions_statement(doc_ids: Iterable[str], clearance: Clearance) -> Select:
    return _versions_where(DocumentVersion.doc_id.in_(sorted(set(doc_ids))), clearance)


def sections_statement(doc_id: str, version: int, clearance: Clearance, section_id: str | None = None) -> Select:
    stmt = select(Chunk.text, Chunk.metadata_).where(
        Chunk.doc_id == doc_id, Chunk.version == int(version), access_clause(clearance, Chunk))
    if section_id is not None:
        return stmt.where(Chunk.section_id == section_id)
    return stmt.order_by(Chunk.id)  # ingest inserts sections in document order


def section_versions_statement(clearance: Clearance) -> Select:
    """Every visible version of the sections named by (doc_id, section_id) pairs, given as two
    arrays bound at call time (`doc_ids`, `section_ids`): the rows a version swap may need, in one
    read. Plain-column `= ANY` tests (leakproof, so the index serves them under RLS); the caller
    drops pairs it did not ask for. The metadata comes as JSON text, parsed only for a row a swap
    uses (most rows are the versions not applied)."""
    return select(Chunk.doc_id, Chunk.version, Chunk.section_id, Chunk.text, cast(Chunk.metadata_, Text)).where(
        Chunk.doc_id == any_(array_param("doc_ids")), Chunk.section_id == any_(array_param("section_ids")),
        access_clause(clearance, Chunk))


def versions_of_statement(clearance: Clearance) -> Select:
    """`versions_statement` with the document ids as one array bound at call time (`doc_ids`)."""
    return _versions_where(DocumentVersion.doc_id == any_(array_param("doc_ids")), clearance)


def version_sections_statement(clearance: Clearance) -> Select:
    """Every section of the versions named by (doc_id, version) pairs, given as two arrays bound at
    call time (`doc_ids`, `versions`), in document order per version (ingest inserts sections in
    order); the caller drops pairs it did not ask for."""
    return (select(Chunk.doc_id, Chunk.version, Chunk.text, Chunk.metadata_)
            .where(Chunk.doc_id == any_(array_param("doc_ids")), Chunk.version == any_(array_param("versions", Integer)),
                   access_clause(clearance, Chunk))
            .order_by(Chunk.id))


def version_rows(session: Session, *, doc_ids: Iterable[str], clearance: Clearance) -> list[Row]:
    """Visible versions of the documents, oldest first per document."""
    ids = set(doc_ids)
    if not ids:
        return []
    return list(session.execute(versions_statement(ids, clearance)).all())


def section_rows(session: Session, *, doc_id: str, version: int, clearance: Clearance,
                 section_id: str | None = None) -> list[Row]:
    """(text, metadata_) of one section, or of every section of a version in document order."""
    return list(session.execute(sections_statement(doc_id, version, clearance, section_id)).all())


def chunk_text(session: Session, *, chunk_id: str, clearance: Clearance) -> str | None:
    """The text indexed now for a chunk id, if the caller may read it."""
    return session.scalar(select(Chunk.text).where(Chunk.node_id == chunk_id, access_clause(clearance, Chunk)))


def date_bases(session: Session, *, clearance: Clearance) -> set[str]:
    """The date bases named by any version the caller may see."""
    v = DocumentVersion
    return set(session.scalars(select(v.date_basis).distinct().where(access_clause(clearance, v))))


def changed_on_disk(session: Session, *, keys: Iterable[tuple[str, int]], clearance: Clearance) -> list[dict[str, Any]]:
    """Of these (doc_id, version) pairs, those whose file changed since ingest (per the staleness check)."""
    wanted = set(keys)
    if not wanted:
        return []
    v = DocumentVersion
    rows = session.execute(select(v.doc_id, v.version, v.title, v.disk_sha256, v.source_sha256).where(
        v.doc_id.in_({k[0] for k in wanted}), access_clause(clearance, v))).all()
    return [{"doc_id": r.doc_id, "version": r.version, "title": r.title} for r in rows
            if (r.doc_id, r.version) in wanted and r.disk_sha256 is not None and r.disk_sha256 != r.source_sha256]


def text_changed_since(session: Session, *, keys: Iterable[tuple[str, int]], clearance: Clearance,
                       since) -> list[dict[str, Any]]:
    """Of these (doc_id, version) pairs, those whose indexed text ingest rewrote at or after `since`."""
    wanted = set(keys)
    if not wanted:
        return []
    v = DocumentVersion
    rows = session.execute(select(v.doc_id, v.version, v.title, v.text_changed_at).where(
        v.doc_id.in_({k[0] for k in wanted}), v.text_changed_at >= since, access_clause(clearance, v))).all()
    return [{"doc_id": r.doc_id, "version": r.version, "title": r.title, "changed_at": r.text_changed_at}
            for r in rows if (r.doc_id, r.version) in wanted]


def readable_versions(session: Session, *, keys: Iterable[tuple[str, int]], clearance: Clearance) -> set[tuple[str, int]]:
    """The subset of (doc_id, version) keys readable under this clearance *now*.

    A trace stores the cited text as it was shown; showing it again is a new read, so it follows
    the caller's current clearance. A version the caller lost access to looks exactly like one
    that does not exist.
    """
    wanted = {(str(d), int(v)) for d, v in keys}
    if not wanted:
        return set()
    v = DocumentVersion
    rows = session.execute(select(v.doc_id, v.version).where(
        v.doc_id.in_(sorted({d for d, _ in wanted})), access_clause(clearance, v))).all()
    return {(r.doc_id, int(r.version)) for r in rows} & wanted


def version_catalog(session: Session, *, clearance: Clearance) -> list[Row]:
    """Every version the caller may see, with its owner and file hashes, by document and version."""
    v = DocumentVersion
    return list(session.execute(
        select(v.doc_id, v.version, v.title, v.source_type, v.owner, v.effective_from, v.source_sha256,
               v.disk_sha256, v.line_of_business, v.source_file, v.text_changed_at)
        .where(access_clause(clearance, v)).order_by(v.doc_id, v.version)).all())


def product_names(session: Session, *, clearance: Clearance) -> list[str]:
    """The products (lines of business) named by any version the caller may see, sorted: the
    valid product names are the ones the corpus's sources name."""
    v = DocumentVersion
    name = func.jsonb_array_elements_text(v.line_of_business).label("name")
    inner = select(name).where(v.line_of_business.is_not(None), access_clause(clearance.for_product(None), v))
    return sorted(set(session.scalars(select(inner.subquery().c.name).distinct())))
