"""Source files as ingested (migration 0024): kept by ingest, read back only at a cited place.

- `keep_files` (owner login, inside ingest's transaction): the bytes of each file ingest read,
  keyed by their SHA-256; bytes already kept are not read or written again.
- `cited_place` / `cited_file` (application login, in a `scoped_session`): the cited chunk is
  re-read by its id under the caller's clearance (`access_clause` on the chunk and on its version,
  row-level security behind both), and only through that row is its version's file reached. A
  chunk that does not exist, was retired or rewritten away, or is above the caller's clearance
  gives None, the same None for each, so a caller learns nothing about what they may not read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath

from sqlalchemy import DateTime, LargeBinary, String, and_, func, literal, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Mapped, Session, mapped_column

from policydesk.storage.clearance import Clearance
from policydesk.storage.models import Base, Chunk, DocumentVersion
from policydesk.storage.predicate import access_clause

PAGE_START_KEY = "page_start"
PAGE_END_KEY = "page_end"
PDF_SUFFIX = ".pdf"
WRITE_BATCH_BYTES = 16 << 20  # files kept per INSERT: up to about this many bytes


class SourceFile(Base):
    """The bytes of one ingested file (migration 0024); a CHECK keeps them hashing to `sha256`."""

    __tablename__ = "source_files"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    content: Mapped[bytes] = mapped_column(LargeBinary)
    stored_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class FileChangedError(ValueError):
    """The bytes read for keeping do not hash to the version's recorded SHA-256."""


def keep_files(session: Session, files: Mapping[str, object]) -> int:
    """Keep each file under its SHA-256 (`files`: sha256 -> a callable returning the bytes, called
    only for a hash not kept yet). Bytes whose hash is not their key are refused (FileChangedError):
    a file that changed between being read for its chunks and being kept. Returns how many were
    written; bytes already kept write nothing."""
    wanted = sorted(s for s in files if s)
    if not wanted:
        return 0
    kept = set(session.scalars(select(SourceFile.sha256).where(SourceFile.sha256.in_(wanted))))
    rows, held, written = [], 0, 0

    def write() -> None:
        # Two ingests keeping the same bytes at once: the second finds the row and adds nothing.
        session.execute(insert(SourceFile).values(rows).on_conflict_do_nothing(index_elements=["sha256"]))
        rows.clear()

    for sha in wanted:
        if sha in kept:
            continue
        content = files[sha]()
        if hashlib.sha256(content).hexdigest() != sha:
            raise FileChangedError(sha)
        rows.append({"sha256": sha, "content": content})
        held, written = held + len(content), written + 1
        if held >= WRITE_BATCH_BYTES:  # memory stays about one batch, whatever the corpus
            write()
            held = 0
    if rows:
        write()
    return written


@dataclass(frozen=True)
class CitedPlace:
    """Where a cited chunk is in its source, as stored for the version it belongs to."""

    chunk_id: str
    doc_id: str
    version: int
    title: str
    section: str
    section_id: str
    source_file: str
    source_sha256: str
    page_start: int | None  # PDFs ingested since pages were kept; None otherwise
    page_end: int | None
    file_kept: bool  # False for a version ingested before files were kept (migration 0024)

    @property
    def is_pdf(self) -> bool:
        return PurePosixPath(self.source_file).suffix.lower() == PDF_SUFFIX


def _page(value) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _place_statement(clearance: Clearance, chunk_id: str, *columns):
    c, v = Chunk, DocumentVersion
    return (select(c.node_id, c.doc_id, c.version, c.section_id, c.metadata_, v.title, v.source_file,
                   v.source_sha256, *columns)
            .join(v, and_(v.doc_id == c.doc_id, v.version == c.version))
            .where(c.node_id == chunk_id, access_clause(clearance, c), access_clause(clearance, v)))


def _place(row, file_kept: bool) -> CitedPlace:
    meta = row.metadata_ or {}
    return CitedPlace(row.node_id, row.doc_id, int(row.version), row.title, str(meta.get("section", "")),
                      row.section_id, row.source_file, row.source_sha256, _page(meta.get(PAGE_START_KEY)),
                      _page(meta.get(PAGE_END_KEY)), file_kept)


def cited_place(session: Session, *, chunk_id: str, clearance: Clearance) -> CitedPlace | None:
    """The cited chunk's place, if the caller may read it now; None otherwise (whatever the reason)."""
    kept = select(literal(True)).where(SourceFile.sha256 == DocumentVersion.source_sha256).exists()
    row = session.execute(_place_statement(clearance, chunk_id, kept.label("file_kept"))).one_or_none()
    return None if row is None else _place(row, bool(row.file_kept))


def cited_file(session: Session, *, chunk_id: str, clearance: Clearance) -> tuple[CitedPlace, bytes] | None:
    """The cited chunk's place and its version's file as ingested, in one statement that reaches the
    bytes only through the chunk and version rows the caller may read; None when either is not
    readable or the file was not kept."""
    stmt = _place_statement(clearance, chunk_id, SourceFile.content).join(
        SourceFile, SourceFile.sha256 == DocumentVersion.source_sha256)
    row = session.execute(stmt).one_or_none()
    return None if row is None else (_place(row, True), bytes(row.content))


def version_sections(session: Session, *, place: CitedPlace, clearance: Clearance) -> list[tuple[str, str, dict]]:
    """(chunk id, text, metadata) of every chunk of the cited version the caller may read, in
    document order (ingest writes a version's chunks in order)."""
    rows = session.execute(
        select(Chunk.node_id, Chunk.text, Chunk.metadata_)
        .where(Chunk.doc_id == place.doc_id, Chunk.version == place.version, access_clause(clearance, Chunk))
        .order_by(Chunk.id)).all()
    return [(r.node_id, r.text, r.metadata_ or {}) for r in rows]
