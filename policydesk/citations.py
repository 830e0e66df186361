"""A citation from the caller's own trace, shown again only while their CURRENT clearance may
read that source version. Shared by the cited-text page and the JSON API, so both
refuse in the same way: a lost clearance looks exactly like a citation that never existed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from policydesk.access import Clearance
from policydesk.storage import sources
from policydesk.storage.scope import scoped_session
from policydesk.storage.traces import own_trace_citations


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
    with scoped_session(db.app, clearance, user_name=user_name) as session:
        row = own_trace_citations(session, trace_id=tid, user_name=user_name)
        cite = next((c for c in (row.citations if row else []) if c.get("chunk_id") == chunk_id), None)
        if cite is None or not sources.readable_versions(session, keys=[(cite["doc_id"], cite["version"])],
                                                         clearance=clearance):
            return None
    return CitedText(tid, row.question, cite)
