"""Reads of stored traces for the pages that show them, as keyword-only functions taking a session."""

from __future__ import annotations

import uuid

from sqlalchemy import Row, select
from sqlalchemy.orm import Session

from policydesk.storage.models import Trace


def own_trace_citations(session: Session, *, trace_id: uuid.UUID, user_name: str) -> Row | None:
    """(citations, question) of a trace, only if `user_name` asked it: another user's trace is not found."""
    return session.execute(select(Trace.citations, Trace.question).where(
        Trace.id == trace_id, Trace.user_name == user_name)).first()
