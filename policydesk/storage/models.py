"""SQLAlchemy models. Alembic (policydesk/storage/migrations) owns the DDL; these mirror it.

`data_chunks` is the table `PGVectorStore(table_name="chunks", hybrid_search=True, use_jsonb=True)`
reads and writes; its columns must keep the names that class expects.
"""

from __future__ import annotations

import uuid
from datetime import date, datetime

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    BigInteger,
    Boolean,
    Computed,
    Date,
    DateTime,
    Float,
    FetchedValue,
    ForeignKey,
    Identity,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR, UUID
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# The current version's window ends here: an explicit open end, so range conditions match it
# (a NULL effective_to silently fails `effective_to > :d`).
OPEN_END = date(9999, 12, 31)
EMBED_DIM = 384
CHUNK_TABLE = "data_chunks"


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    role: Mapped[str] = mapped_column(String(32))
    password_hash: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    # Migration 0006: set by `policydesk users disable`; a disabled user is treated as unknown.
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # Migration 0009: `iss|sub` of the identity-provider account a single-sign-on user belongs to.
    oidc_subject: Mapped[str | None] = mapped_column(Text, nullable=True, unique=True)


class LoginAttempt(Base):
    """One sign-in attempt (migration 0006). The app role inserts and reads, never updates."""

    __tablename__ = "login_attempts"
    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    user_name: Mapped[str] = mapped_column(Text)
    client_addr: Mapped[str] = mapped_column(Text)
    succeeded: Mapped[bool] = mapped_column(Boolean)
    # Refused while locked, password not checked: recorded, but not counted as a failure.
    throttled: Mapped[bool] = mapped_column(Boolean, default=False)


class WebSession(Base):
    """A signed-in browser session (migration 0018), named by the cookie's random id, stored
    only as its SHA-256. The app role inserts, reads and moves seen_at/ended_at; the owner purges."""

    __tablename__ = "sessions"
    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    secret_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    seen_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    end_reason: Mapped[str | None] = mapped_column(Text, nullable=True)


class ApiToken(Base):
    """A bearer token for the JSON API (migration 0009): only a hash of its secret is stored.
    The owner login creates and revokes; the app role only reads."""

    __tablename__ = "api_tokens"
    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    key_id: Mapped[str] = mapped_column(Text, unique=True)
    secret_sha256: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    label: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class ApiRequest(Base):
    """One API request made with a valid token (migration 0009), counted by the rate limit.
    The app role inserts and reads, never updates."""

    __tablename__ = "api_requests"
    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    limited: Mapped[bool] = mapped_column(Boolean, default=False)


class Document(Base):
    __tablename__ = "documents"
    doc_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    title: Mapped[str] = mapped_column(Text)
    source_type: Mapped[str] = mapped_column(String(16))
    date_basis: Mapped[str] = mapped_column(String(32))
    access_level: Mapped[str] = mapped_column(String(16))
    owner: Mapped[str] = mapped_column(Text)
    related_policies: Mapped[list] = mapped_column(JSONB, default=list)
    # Migration 0014: the products (lines of business) the source applies to; NULL = every product.
    line_of_business: Mapped[list | None] = mapped_column(JSONB(none_as_null=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    # Migration 0023: set by `sync --retire` (its chunks deleted, these rows kept); NULL in service.
    retired_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    retired_by: Mapped[str | None] = mapped_column(Text, nullable=True)


class DocumentVersion(Base):
    __tablename__ = "document_versions"
    __table_args__ = (UniqueConstraint("doc_id", "version"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    doc_id: Mapped[str] = mapped_column(ForeignKey("documents.doc_id"))
    version: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(Text)
    source_type: Mapped[str] = mapped_column(String(16))
    effective_from: Mapped[date] = mapped_column(Date)
    effective_to: Mapped[date] = mapped_column(Date, default=OPEN_END)
    supersedes: Mapped[int | None] = mapped_column(Integer, nullable=True)
    superseded_by: Mapped[int | None] = mapped_column(Integer, nullable=True)
    date_basis: Mapped[str] = mapped_column(String(32))
    access_level: Mapped[str] = mapped_column(String(16))
    sensitive: Mapped[bool] = mapped_column(Boolean)
    owner: Mapped[str] = mapped_column(Text)
    line_of_business: Mapped[list | None] = mapped_column(JSONB(none_as_null=True), nullable=True)  # migration 0014
    source_file: Mapped[str] = mapped_column(Text)
    source_sha256: Mapped[str] = mapped_column(String(64))
    # Set by the staleness check: the file's hash on disk when last checked.
    disk_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    checked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    ingested_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    # Migration 0019: when ingest last rewrote this version with different section text; None: as first indexed.
    text_changed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


class Chunk(Base):
    __tablename__ = CHUNK_TABLE
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    text: Mapped[str] = mapped_column(String)
    metadata_: Mapped[dict] = mapped_column(JSONB)
    node_id: Mapped[str] = mapped_column(String, unique=True)
    embedding = mapped_column(Vector(EMBED_DIM))
    text_search_tsv = mapped_column(TSVECTOR, Computed("to_tsvector('english', text)", persisted=True))
    # Plain copies of metadata keys (migration 0003): leakproof comparisons that RLS and the
    # version lookup can serve from btree indexes.
    access_level = mapped_column(String, Computed("metadata_->>'access_level'", persisted=True))
    sensitive = mapped_column(Boolean, Computed("(metadata_->>'sensitive')::boolean", persisted=True))
    doc_id = mapped_column(String, Computed("metadata_->>'doc_id'", persisted=True))
    version = mapped_column(Integer, Computed("(metadata_->>'version')::integer", persisted=True))
    section_id = mapped_column(String, Computed("metadata_->>'section_id'", persisted=True))
    # Migration 0014: the source's products, NULL for a source that applies to every product.
    line_of_business = mapped_column(JSONB, Computed("nullif(metadata_ -> 'line_of_business', 'null'::jsonb)",
                                                     persisted=True))


class EmbeddingCache(Base):
    """Vectors already computed, by (model key, SHA-256 of the text embedded); owner only (0011)."""
    __tablename__ = "embedding_cache"
    model: Mapped[str] = mapped_column(Text, primary_key=True)
    text_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    embedding = mapped_column(Vector(), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())


class Trace(Base):
    __tablename__ = "traces"
    id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True), primary_key=True, default=uuid.uuid4)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    kind: Mapped[str] = mapped_column(String(16))  # ask | replay | eval
    # Not a foreign key (migration 0005): a purge must not rewrite newer rows that link here.
    replay_of: Mapped[uuid.UUID | None] = mapped_column(UUID(as_uuid=True))
    user_name: Mapped[str] = mapped_column(String(64))
    user_role: Mapped[str] = mapped_column(String(32))
    permitted_levels: Mapped[list[str]] = mapped_column(ARRAY(String))
    sensitive_cleared: Mapped[bool] = mapped_column(Boolean)
    question: Mapped[str] = mapped_column(Text)
    dates: Mapped[dict] = mapped_column(JSONB, default=dict)
    versions_applied: Mapped[list] = mapped_column(JSONB, default=list)
    chunk_ids: Mapped[list] = mapped_column(JSONB, default=list)
    answer: Mapped[dict | None] = mapped_column(JSONB)
    answer_text: Mapped[str] = mapped_column(Text, default="")
    citations: Mapped[list] = mapped_column(JSONB, default=list)
    warnings: Mapped[list] = mapped_column(JSONB, default=list)
    refused: Mapped[bool] = mapped_column(Boolean, default=False)
    refusal_reason: Mapped[str | None] = mapped_column(Text)
    abstained: Mapped[bool] = mapped_column(Boolean, default=False)
    degraded: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(16), default="ok")  # ok | failed
    error: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[list] = mapped_column(JSONB, default=list)
    stage_ms: Mapped[dict] = mapped_column(JSONB, default=dict)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    model: Mapped[str] = mapped_column(Text, default="")
    tokens_in: Mapped[int] = mapped_column(Integer, default=0)
    tokens_out: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    # Migration 0014: the product the answer was given for (NULL: none chosen). Left out of the
    # canonical row while NULL, so rows written before the column existed still verify.
    line_of_business: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Set by the database's chain trigger (migration 0005), never by the application.
    seq: Mapped[int] = mapped_column(BigInteger, server_default=FetchedValue())
    prev_hash: Mapped[str] = mapped_column(String(64), server_default=FetchedValue())
    row_hash: Mapped[str] = mapped_column(String(64), server_default=FetchedValue())
    search_tsv = mapped_column(
        TSVECTOR,
        Computed("to_tsvector('english', coalesce(question, '') || ' ' || coalesce(answer_text, ''))", persisted=True),
    )


class AuditEntry(Base):
    __tablename__ = "audit_log"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    actor: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(32))
    target: Mapped[str] = mapped_column(Text, default="")
    details: Mapped[dict] = mapped_column(JSONB, default=dict)
    # Set by the database's chain trigger (migration 0005), never by the application.
    seq: Mapped[int] = mapped_column(BigInteger, server_default=FetchedValue())
    prev_hash: Mapped[str] = mapped_column(String(64), server_default=FetchedValue())
    row_hash: Mapped[str] = mapped_column(String(64), server_default=FetchedValue())


class ChainCut(Base):
    """Where a retention purge cut a hash chain: the last removed row's seq and hash."""

    __tablename__ = "chain_cuts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    table_name: Mapped[str] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    actor: Mapped[str] = mapped_column(Text)
    cutoff: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    last_seq: Mapped[int] = mapped_column(BigInteger)
    last_hash: Mapped[str] = mapped_column(String(64))
    rows_removed: Mapped[int] = mapped_column(Integer)


class Feedback(Base):
    """Staff feedback on one answer (migration 0007): append-only, the note already screened."""

    __tablename__ = "feedback"
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    trace_id: Mapped[uuid.UUID] = mapped_column(UUID(as_uuid=True))
    user_name: Mapped[str] = mapped_column(String(64))
    verdict: Mapped[str] = mapped_column(String(16))  # helpful | wrong
    reason: Mapped[str | None] = mapped_column(String(32))
    note: Mapped[str] = mapped_column(Text, default="")


class ProductChoice(Base):
    """The product a user chose on the ask page (migration 0014): append-only, the latest wins."""

    __tablename__ = "product_choices"
    id: Mapped[int] = mapped_column(BigInteger, Identity(always=True), primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    user_name: Mapped[str] = mapped_column(String(64))
    line_of_business: Mapped[str | None] = mapped_column(Text, nullable=True)
