"""A citation from the caller's own trace, shown again only while their CURRENT clearance may
read that source version (issue 12). Shared by the cited-text page and the JSON API, so both
refuse in the same way: a lost clearance looks exactly like a citation that never existed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from policydesk.access import Clearance
from policydesk.storage.models import Trace
from policydesk.storage.scope import permitted_scope
from policydesk.storage.visible import readable_versions


@dataclass(frozen=True)
class CitedText:
    trace_id: uuid.UUID
    question: str
    citation: dict[str, Any]  # as stored in traces.citations, text included


def own_citation(db, *, user_name: str, clearance: Clearance, trace_id: str, chunk_id: str) -> CitedText | None:
    """None when the trace is not the caller's, the chunk was not cited, or the caller may no
    longer read the cited version."""
    try:
        tid = uuid.UUID(trace_id)
    except ValueError:
        return None
    with permitted_scope(clearance.levels, clearance.sensitive, user_name=user_name), Session(db.app) as session:
        row = session.execute(select(Trace.citations, Trace.question).where(
            Trace.id == tid, Trace.user_name == user_name)).first()
    cite = next((c for c in (row.citations if row else []) if c.get("chunk_id") == chunk_id), None)
    if cite is None or not readable_versions(db, [(cite["doc_id"], cite["version"])], clearance.levels, clearance.sensitive):
        return None
    return CitedText(tid, row.question, cite)
