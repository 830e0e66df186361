"""Which indexed sources changed on disk since they were ingested; the result is recorded, and
every answer citing such a source says so."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from policydesk.answer import AnswerWarning
from policydesk.ingest.ingest import file_sha256
from policydesk.storage import sources
from policydesk.storage.clearance import Clearance
from policydesk.storage.models import DocumentVersion
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


def check_staleness(db, directory: Path) -> list[StaleSource]:
    root = Path(directory).resolve()
    stale: list[StaleSource] = []
    with Session(db.owner) as session, session.begin():
        for v in session.scalars(select(DocumentVersion).order_by(DocumentVersion.doc_id, DocumentVersion.version)):
            path = (root / v.source_file).resolve()
            v.checked_at = func.now()
            if not path.is_relative_to(root) or not path.is_file():
                v.disk_sha256 = "missing"
                stale.append(StaleSource(v.doc_id, v.version, v.source_file, "missing", v.source_sha256, None))
                continue
            current = file_sha256(path)
            # Recorded so every answer citing this version can say its source changed.
            v.disk_sha256 = current
            if current != v.source_sha256:
                stale.append(StaleSource(v.doc_id, v.version, v.source_file, "changed", v.source_sha256, current))
    return stale


def stale_source_warnings(db, citations, clearance: Clearance) -> list[AnswerWarning]:
    """A warning for each cited version whose file the last check found changed since ingest."""
    keys = {(c.doc_id, c.version) for c in citations}
    if not keys:
        return []
    with scoped_session(db.app, clearance) as session:
        stale = sources.changed_on_disk(session, keys=keys, clearance=clearance)
    if stale:
        log.warning("answer cites source(s) changed since ingest: %s",
                    ", ".join(f"{s['doc_id']} v{s['version']}" for s in stale))
    return [AnswerWarning(kind="stale_source", message=(
                f"{s['title']} version {s['version']} changed on disk since it was indexed; "
                "the cited text may be out of date."))
            for s in stale]
