"""Which indexed sources changed on disk since they were ingested; the result is recorded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from policydesk.ingest.ingest import file_sha256
from policydesk.storage.models import DocumentVersion


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
