"""Which indexed sources changed on disk since they were ingested; the result is recorded, and
every answer citing such a source says so, as does one citing text a sync rewrote recently."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from policydesk.contract.answer import AnswerWarning
from policydesk.config import get_settings
from policydesk.ingest.errors import IngestError
from policydesk.ingest.plan import file_sha256
from policydesk.storage import sources
from policydesk.storage.clearance import Clearance
from policydesk.storage.models import Document, DocumentVersion
from policydesk.storage.scope import scoped_session

log = logging.getLogger("policydesk.pipeline")  # reported as part of the answer it warns


@dataclass(frozen=True)
class StaleSource:
    doc_id: str
    version: int
    file: str
    reason: str  # "changed" | "missing"
    indexed_sha256: str
    current_sha256: str | None


def check_staleness(db, directory: Path, *, max_bytes: int | None = None) -> list[StaleSource]:
    """Every version in service compared with its file in `directory` (retired sources are
    not: their files are expected to be gone). A file over `max_bytes` (default: the configured
    MAX_SOURCE_BYTES) is recorded as `too_large` without being read."""
    root = Path(directory).resolve()
    limit = get_settings().MAX_SOURCE_BYTES if max_bytes is None else max_bytes
    stale: list[StaleSource] = []
    with Session(db.owner) as session, session.begin():
        for v in session.scalars(select(DocumentVersion).join(Document, Document.doc_id == DocumentVersion.doc_id)
                                 .where(Document.retired_at.is_(None))
                                 .order_by(DocumentVersion.doc_id, DocumentVersion.version)):
            path = (root / v.source_file).resolve()
            v.checked_at = func.now()
            if not path.is_relative_to(root) or not path.is_file():
                v.disk_sha256 = "missing"
                stale.append(StaleSource(v.doc_id, v.version, v.source_file, "missing", v.source_sha256, None))
                continue
            try:
                current = file_sha256(path, max_bytes=limit)
            except IngestError:
                v.disk_sha256 = "too_large"
                stale.append(StaleSource(v.doc_id, v.version, v.source_file, "changed", v.source_sha256, None))
                continue
            # Recorded so every answer citing this version can say its source changed.
            v.disk_sha256 = current
            if current != v.source_sha256:
                stale.append(StaleSource(v.doc_id, v.version, v.source_file, "changed", v.source_sha256, current))
    return stale


def stale_source_warnings(db, citations, clearance: Clearance, *, recent_days: int | None = None,
                          now: datetime | None = None) -> list[AnswerWarning]:
    """A warning for each cited version whose file the last check found changed since ingest, and
    (kind `recent_change`) for each whose indexed text a sync rewrote within `recent_days`
    (default: the configured RECENT_CHANGE_DAYS)."""
    keys = {(c.doc_id, c.version) for c in citations}
    if not keys:
        return []
    days = get_settings().RECENT_CHANGE_DAYS if recent_days is None else recent_days
    since = (now or datetime.now(timezone.utc)) - timedelta(days=days)
    with scoped_session(db.app, clearance) as session:
        stale = sources.changed_on_disk(session, keys=keys, clearance=clearance)
        edited = sources.text_changed_since(session, keys=keys, clearance=clearance, since=since)
    if stale:
        log.warning("answer cites source(s) changed since ingest: %s",
                    ", ".join(f"{s['doc_id']} v{s['version']}" for s in stale))
    warnings = [AnswerWarning(kind="stale_source", message=(
                    f"{s['title']} version {s['version']} changed on disk since it was indexed; "
                    "the cited text may be out of date."))
                for s in stale]
    warnings += [AnswerWarning(kind="recent_change", message=(
                     f"{e['title']} version {e['version']} was edited on "
                     f"{e['changed_at'].astimezone(timezone.utc).date().isoformat()}: this answer cites the edited "
                     "text, and answers given before then quoted the earlier wording."))
                 for e in sorted(edited, key=lambda e: (e["doc_id"], e["version"]))]
    return warnings
