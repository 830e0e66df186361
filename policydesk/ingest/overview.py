"""The sources overview the admin page shows: every indexed source with its versions, their
windows, owner, access level, when each was ingested and last checked against its file, what that
check found, and what the last sync refused and why.

Read on the owner login: it lists every source whatever its access level, by id, title and
metadata only, never its text (the admin reads policy text with the rep's clearance, like
everyone else, through the ask page). Staleness is what the last check recorded
(`staleness.check_staleness`, run by every sync), not a new look at the folder: a page view
writes nothing. The last sync is the newest `sources_synced` audit row (`sync.sync_directory`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from policydesk.storage.models import AuditEntry, Document, DocumentVersion
from policydesk.versions.window import display_window

# What the last staleness check found for a version's file (document_versions.disk_sha256).
AS_INDEXED, CHANGED, MISSING, TOO_LARGE, NOT_CHECKED = (
    "as indexed", "changed on disk, not synced", "missing from the folder", "too large to check", "not checked yet")


@dataclass(frozen=True)
class VersionLine:
    version: int
    first_day: str
    last_day: str | None  # None: in force until a newer version closes it
    in_force: bool  # on the overview's date
    file: str
    ingested_at: datetime
    checked_at: datetime | None
    disk: str  # one of AS_INDEXED ... NOT_CHECKED

    @property
    def stale(self) -> bool:
        return self.disk not in (AS_INDEXED, NOT_CHECKED)


@dataclass(frozen=True)
class SourceLine:
    doc_id: str
    title: str
    source_type: str
    owner: str
    access_level: str
    sensitive: bool
    products: list[str] | None  # None: every product
    retired_at: datetime | None
    versions: list[VersionLine]

    @property
    def last_ingested(self) -> datetime | None:
        return max((v.ingested_at for v in self.versions), default=None)

    @property
    def stale(self) -> bool:
        return self.retired_at is None and any(v.stale for v in self.versions)


@dataclass(frozen=True)
class Refusal:
    file: str
    field: str
    reason: str


@dataclass(frozen=True)
class LastSync:
    at: datetime
    actor: str
    directory: str
    written: list[str]
    unchanged: int | None
    refused: list[Refusal]
    error: str | None  # the manifest could not be read: nothing was synced
    named: list[str]  # the paths and ids it was limited to; empty: every source


@dataclass(frozen=True)
class SourcesOverview:
    sources: list[SourceLine]
    last_sync: LastSync | None

    @property
    def stale_count(self) -> int:
        return sum(s.stale for s in self.sources)


def _disk(v: DocumentVersion) -> str:
    if v.checked_at is None or v.disk_sha256 is None:
        return NOT_CHECKED
    if v.disk_sha256 == "missing":
        return MISSING
    if v.disk_sha256 == "too_large":
        return TOO_LARGE
    return AS_INDEXED if v.disk_sha256 == v.source_sha256 else CHANGED


def _version(v: DocumentVersion, today: date) -> VersionLine:
    first, last = display_window(v.effective_from, v.effective_to)
    return VersionLine(v.version, first, last, v.effective_from <= today < v.effective_to, v.source_file,
                       v.ingested_at, v.checked_at, _disk(v))


def _last_sync(session: Session) -> LastSync | None:
    row = session.scalar(select(AuditEntry).where(AuditEntry.action == "sources_synced")
                         .order_by(AuditEntry.seq.desc()).limit(1))
    if row is None:
        return None
    d = row.details or {}
    refused = [Refusal(str(r.get("file", "")), str(r.get("field", "")), str(r.get("reason", "")))
               for r in d.get("refused", []) if isinstance(r, dict)]
    return LastSync(row.at, row.actor, row.target, [str(w) for w in d.get("written", [])], d.get("unchanged"),
                    refused, d.get("error"), [*map(str, d.get("paths", [])), *map(str, d.get("ids", []))])


def sources_overview(db, *, today: date) -> SourcesOverview:
    """Every source (retired ones too, marked), ordered by id, with its versions in order."""
    with Session(db.owner) as session:
        docs = list(session.scalars(select(Document).order_by(Document.doc_id)))
        versions: dict[str, list[VersionLine]] = {}
        sensitive: set[str] = set()  # sensitivity is per version; a source is marked if any version is
        for v in session.scalars(select(DocumentVersion).order_by(DocumentVersion.doc_id, DocumentVersion.version)):
            versions.setdefault(v.doc_id, []).append(_version(v, today))
            if v.sensitive:
                sensitive.add(v.doc_id)
        last = _last_sync(session)
    lines = [SourceLine(d.doc_id, d.title, d.source_type, d.owner, d.access_level, d.doc_id in sensitive,
                        d.line_of_business, d.retired_at, versions.get(d.doc_id, []))
             for d in docs]
    return SourcesOverview(lines, last)
