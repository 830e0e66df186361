"""Staff feedback on answers: "helpful" or "wrong or unclear", a reason, a screened note.

Feedback is given on one's own answer (the trace must be readable in the caller's scope, and
only asks, not replays or eval runs), stored append-only (migration 0007), and read back by the
asker and by compliance on the disputes page. The note goes through the same identifier
detectors as a question: if one fires, nothing is stored and the caller is told why, so a
member identifier never reaches the table.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text

from policydesk.detectors import find_member_identifiers
from policydesk.storage.clearance import NO_SOURCES
from policydesk.storage.scope import permitted_scope

VERDICTS = {"helpful": "Helpful", "wrong": "Wrong or unclear"}
REASONS = {
    "wrong_version": "Wrong version",
    "wrong_policy": "Wrong policy",
    "missing_information": "Missing information",
    "unclear_wording": "Unclear wording",
    "other": "Other",
}
MAX_NOTE_CHARS = 1000

_OWN_ASK_SQL = text("SELECT 1 FROM traces WHERE id = :id AND user_name = :user AND kind = 'ask'")
_INSERT_SQL = text("INSERT INTO feedback (trace_id, user_name, verdict, reason, note) "
                   "VALUES (:trace_id, :user, :verdict, :reason, :note)")
_FOR_TRACE_SQL = text("SELECT at, user_name, verdict, reason, note FROM feedback WHERE trace_id = :id ORDER BY id")


class FeedbackError(ValueError):
    """The feedback was not stored; the message says why and what to change."""

    def __init__(self, message: str, field: str = "body") -> None:
        super().__init__(message)
        self.field = field


class NotYourAnswer(FeedbackError):
    """No ask of the caller's with that id (someone else's looks the same as none)."""


@dataclass(frozen=True)
class FeedbackEntry:
    at: datetime
    user_name: str
    verdict: str
    reason: str | None
    note: str

    @property
    def verdict_label(self) -> str:
        return VERDICTS.get(self.verdict, self.verdict)

    @property
    def reason_label(self) -> str:
        return REASONS.get(self.reason or "", "")


def _validate(verdict: str, reason: str | None, note: str) -> tuple[str | None, str]:
    if verdict not in VERDICTS:
        raise FeedbackError("Choose 'helpful' or 'wrong or unclear'.", "verdict")
    reason = (reason or "").strip() or None
    if reason is not None and reason not in REASONS:
        raise FeedbackError(f"Unknown reason {reason!r}; choose one of: {', '.join(REASONS.values())}.", "reason")
    if verdict == "helpful":
        reason = None
    note = (note or "").strip()
    if len(note) > MAX_NOTE_CHARS:
        raise FeedbackError(f"The note is longer than {MAX_NOTE_CHARS} characters; shorten it.", "note")
    found = find_member_identifiers(note)
    if found:
        raise FeedbackError(
            "The note contains what looks like a member identifier (" + ", ".join(k.replace("_", " ") for k in found)
            + "). Nothing was saved: describe the problem with the answer without personal details.", "note")
    return reason, note


def record_feedback(db, *, user_name: str, trace_id: uuid.UUID, verdict: str, reason: str | None = None,
                    note: str = "") -> FeedbackEntry:
    """Store feedback on the caller's own answer, or raise FeedbackError (nothing stored)."""
    reason, note = _validate(verdict, reason, note)
    # No access levels are needed to read one's own trace row or write feedback: traces and
    # feedback are scoped by user name (migrations 0005, 0007).
    with permitted_scope(NO_SOURCES, user_name=user_name), db.app.begin() as conn:
        if conn.execute(_OWN_ASK_SQL, {"id": trace_id, "user": user_name}).first() is None:
            raise NotYourAnswer("No answer of yours with that id.", "trace_id")
        conn.execute(_INSERT_SQL, {"trace_id": trace_id, "user": user_name, "verdict": verdict, "reason": reason,
                                   "note": note})
    return FeedbackEntry(datetime.now().astimezone(), user_name, verdict, reason, note)


def feedback_for(db, trace_id: uuid.UUID, *, user_name: str, all_users: bool = False) -> list[FeedbackEntry]:
    """Feedback on one answer: the caller's own, or everyone's for a compliance reviewer."""
    with permitted_scope(NO_SOURCES, user_name=user_name, all_traces=all_users), db.app.connect() as conn:
        rows = conn.execute(_FOR_TRACE_SQL, {"id": trace_id}).all()
    return [FeedbackEntry(r.at, r.user_name, r.verdict, r.reason, r.note) for r in rows]
