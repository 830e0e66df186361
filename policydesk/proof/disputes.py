"""Disputes: find what was said, see it exactly, check it against the member's date, replay it.

A service for compliance reviewers (the web layer enforces who may call it; nothing here knows
about HTTP). Every search, open, check and replay writes an audit_log row naming the reviewer.
Only the replay calls the model, through the same pipeline and permission filter as any ask.

Verdicts are computed in code from effective dates and SHA-256 hashes, never by a model.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from policydesk.accounts.access import Clearance, clearance_for
from policydesk.contract.answer import AskRequest
# The verdict compares against the hash ingest wrote, so it must be ingest's own function.
from policydesk.storage.chunk_ids import sha256_text
from policydesk.products import product_label, products_text
from policydesk.storage.storable import WITHHELD, echoable
from policydesk.storage import sources
from policydesk.storage.audit import insert_audit
from policydesk.storage.chain import RowProof, row_proof
from policydesk.storage.models import AuditEntry, Trace
from policydesk.storage.scope import permitted_scope, scoped_session
from policydesk.versions import BASES, VersionLookup, Window, basis_title, in_force_on

SEARCH_LIMIT = 50
# The warning an answer carries when its dates were read from the question, none entered
# (policydesk/reading/question_dates.py).
DATE_FROM_QUESTION = "date_from_question"
AUDIT_LIMIT = 200

RIGHT = "right"
WRONG = "wrong_version"
EDITED = "edited"
MISSING = "section_missing"
NONE_IN_FORCE = "none_in_force"
WRONG_PRODUCT = "wrong_product"


# -- audit --------------------------------------------------------------------------------------

def audit(db, *, actor: str, action: str, target: str = "", details: dict[str, Any] | None = None) -> None:
    """One audit_log row, in its own transaction on the application engine (INSERT is granted)."""
    with db.app.begin() as conn:
        insert_audit(conn, actor=actor, action=action, target=target, details=details)


def reviewing(reviewer: str):
    """The scope a compliance reviewer reads traces and the audit log in (RLS: every row)."""
    return permitted_scope(clearance_for("compliance"), user_name=reviewer, all_traces=True)


def audit_entries(db, *, reviewer: str, actor: str | None = None, action: str | None = None,
                  logged_from: date | None = None, logged_to: date | None = None,
                  limit: int = AUDIT_LIMIT) -> list[AuditEntry]:
    """The newest audit rows, each filter applied in SQL: the actor and action exactly as stored,
    the days logged inclusive (UTC), as the search reads its asked-on dates."""
    query = select(AuditEntry)
    if actor:
        query = query.where(AuditEntry.actor == actor)
    if action:
        query = query.where(AuditEntry.action == action)
    if logged_from:
        query = query.where(AuditEntry.at >= _day_start(logged_from))
    if logged_to:
        query = query.where(AuditEntry.at < _day_start(logged_to + timedelta(days=1)))
    with reviewing(reviewer), Session(db.app) as session:
        return list(session.scalars(query.order_by(AuditEntry.at.desc(), AuditEntry.id.desc()).limit(limit)))


def audit_actions(db, *, reviewer: str) -> list[str]:
    """The actions the audit log holds, for the filter: read from the rows, not listed in code."""
    with reviewing(reviewer), Session(db.app) as session:
        return list(session.scalars(select(AuditEntry.action).distinct().order_by(AuditEntry.action)))


# -- find ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Hit:
    id: uuid.UUID
    created_at: datetime
    user_name: str
    user_role: str
    question: str
    answer_text: str
    refused: bool
    abstained: bool
    dates: dict
    marked_wrong: bool = False
    line_of_business: str | None = None
    dates_from_question: bool = False  # `dates` were read from the question; none was entered


_SEARCH_SQL = """
    SELECT id, created_at, user_name, user_role, question, answer_text, refused, abstained, dates, line_of_business,
           EXISTS (SELECT 1 FROM feedback f WHERE f.trace_id = traces.id AND f.verdict = 'wrong') AS marked_wrong,
           COALESCE(answer->'warnings' @> CAST(:read_from_question AS jsonb), false) AS dates_from_question
    FROM traces
    WHERE kind = 'ask'
      AND (NOT CAST(:marked_wrong AS boolean)
           OR EXISTS (SELECT 1 FROM feedback f WHERE f.trace_id = traces.id AND f.verdict = 'wrong'))
      AND (CAST(:words AS text) IS NULL OR search_tsv @@ websearch_to_tsquery('english', CAST(:words AS text)))
      AND (CAST(:staff AS text) IS NULL OR user_name = CAST(:staff AS text))
      AND (CAST(:asked_from AS timestamptz) IS NULL OR created_at >= CAST(:asked_from AS timestamptz))
      AND (CAST(:asked_before AS timestamptz) IS NULL OR created_at < CAST(:asked_before AS timestamptz))
    ORDER BY created_at DESC
    LIMIT :limit
"""


def search(db, words: str | None, staff: str | None, asked_from: date | None, asked_to: date | None,
           *, reviewer: str, marked_wrong: bool = False, limit: int = SEARCH_LIMIT) -> list[Hit]:
    """Asks (never replays or eval runs) matching the words, staff member and asked-on dates (inclusive);
    with `marked_wrong`, only answers staff marked wrong or unclear."""
    words = (words or "").strip() or None
    staff = (staff or "").strip() or None
    params = {
        "words": words,
        "staff": staff,
        "asked_from": _day_start(asked_from),
        "asked_before": _day_start(asked_to + timedelta(days=1)) if asked_to else None,
        "limit": limit,
        "marked_wrong": bool(marked_wrong),
        "read_from_question": json.dumps([{"kind": DATE_FROM_QUESTION}]),
    }
    with reviewing(reviewer), db.app.connect() as conn:
        rows = conn.execute(text(_SEARCH_SQL), params).all()
    hits = [Hit(r.id, r.created_at, r.user_name, r.user_role, r.question, r.answer_text, r.refused, r.abstained,
                r.dates or {}, r.marked_wrong, r.line_of_business, r.dates_from_question) for r in rows]
    audit(db, actor=reviewer, action="search", details={
        "words": words if not words or echoable(words, max_chars=500) else WITHHELD,
        "staff": audited_staff_filter(db, staff),
        "asked_from": asked_from.isoformat() if asked_from else None,
        "asked_to": asked_to.isoformat() if asked_to else None,
        "marked_wrong": bool(marked_wrong),
        "results": len(hits),
    })
    return hits


def audited_staff_filter(db, staff: str | None) -> str | None:
    """The staff filter as the audit row may repeat it: the name of a staff member as typed, else
    withheld. It names a user; anything else typed there (a member's number or name pasted into the
    wrong box) is not recorded, whatever its spelling."""
    if staff is None:
        return None
    with db.app.connect() as conn:
        known = conn.execute(text("SELECT 1 FROM users WHERE name = :n"), {"n": staff}).first() is not None
    return staff if known else WITHHELD


def _day_start(d: date | None) -> datetime | None:
    return datetime.combine(d, time.min, tzinfo=timezone.utc) if d else None


# -- see it exactly -----------------------------------------------------------------------------

def dates_from_question(trace: Trace) -> bool:
    """Whether the trace's dates were read from its question (none entered)."""
    return any(w.get("kind") == DATE_FROM_QUESTION for w in (trace.answer or {}).get("warnings") or [])


def load(db, trace_id: uuid.UUID, *, reviewer: str) -> Trace | None:
    """The stored trace, detached, without an audit row (check and replay write their own)."""
    with reviewing(reviewer), Session(db.app) as session:
        trace = session.get(Trace, trace_id)
        if trace is not None:
            session.expunge(trace)
    return trace


def open(db, trace_id: uuid.UUID, *, reviewer: str) -> Trace | None:  # noqa: A001 - the service verb
    """The stored trace, exactly as recorded. Logged whether or not it exists."""
    trace = load(db, trace_id, reviewer=reviewer)
    audit(db, actor=reviewer, action="open", target=str(trace_id), details={"found": trace is not None})
    return trace


def replays_of(db, trace_id: uuid.UUID, *, reviewer: str) -> list[Trace]:
    with reviewing(reviewer), Session(db.app) as session:
        rows = list(session.scalars(select(Trace).where(Trace.replay_of == trace_id).order_by(Trace.created_at)))
        for r in rows:
            session.expunge(r)
    return rows


def proof(db, trace_id: uuid.UUID, *, reviewer: str) -> RowProof | None:
    """Whether this trace verifies: its hash recomputes and it links to the row before it."""
    with reviewing(reviewer), db.app.begin() as conn:
        return row_proof(conn, trace_id)


def readable_citations(db, trace: Trace, clearance: Clearance) -> set[tuple[str, int]]:
    """The cited versions this viewer may read today; stored text of any other is withheld."""
    keys = [(c["doc_id"], c["version"]) for c in trace.citations or []]
    with scoped_session(db.app, clearance) as session:
        return sources.readable_versions(session, keys=keys, clearance=clearance)


# -- check it against the member's date ---------------------------------------------------------

@dataclass(frozen=True)
class Verdict:
    chunk_id: str
    doc_id: str
    title: str
    section: str
    cited_version: int
    cited_window: str
    basis: str | None
    basis_title: str  # which date the member date is, as headed on the page
    member_date: date
    kind: str  # right | wrong_version | edited | section_missing | none_in_force | wrong_product
    text: str
    applied_version: int | None = None
    applied_window: str | None = None
    member_product: str | None = None  # the member's product, as the reviewer entered it

    @property
    def ok(self) -> bool:
        return self.kind == RIGHT


def check(db, trace: Trace, member_date: date, *, reviewer: str, clearance: Clearance | None = None,
          member_product: str | None = None) -> list[Verdict]:
    """A verdict for each cited section: did the cited source apply to the member's product (when the
    reviewer entered it), did the cited version apply on member_date, and is its text unchanged?

    Reads versions and current text under the reviewer's clearance (compliance sees every level),
    through the same permission-scoped reads the pipeline uses.
    """
    verdicts = citation_verdicts(db, trace, member_date, clearance=clearance or clearance_for("compliance"),
                                 member_product=member_product)
    audit(db, actor=reviewer, action="check", target=str(trace.id), details={
        "member_date": member_date.isoformat(), "member_product": member_product,
        "verdicts": [{"chunk_id": v.chunk_id, "verdict": v.kind, "text": v.text} for v in verdicts],
    })
    return verdicts


def citation_verdicts(db, trace: Trace, member_date: date, *, clearance: Clearance,
                      member_product: str | None = None) -> list[Verdict]:
    """`check` without its audit row: for callers that audit once for many traces (the impact list)."""
    citations = list(trace.citations or [])
    lookup = VersionLookup(db)
    versions = lookup.versions([c["doc_id"] for c in citations], clearance)
    verdicts = []
    for c in citations:
        doc_versions = versions.get(c["doc_id"], [])
        basis = doc_versions[0].date_basis if doc_versions else None
        basis = basis if basis in BASES else None
        cited_window = Window.cited(c["effective_from"], c.get("effective_to")).format()
        common = dict(chunk_id=c["chunk_id"], doc_id=c["doc_id"], title=c["title"], section=c["section"],
                      cited_version=int(c["version"]), cited_window=cited_window, basis=basis,
                      basis_title=basis_title(basis), member_date=member_date, member_product=member_product)
        products = c.get("line_of_business") or []
        if member_product is not None and products and member_product not in products:
            verdicts.append(Verdict(**common, kind=WRONG_PRODUCT, text=(
                f"wrong product: {c['title']} ({c['doc_id']}) applies to {products_text(products)} only, "
                f"not the member's {product_label(member_product)}")))
            continue
        applied = in_force_on(doc_versions, member_date)
        if applied is None:
            verdicts.append(Verdict(**common, kind=NONE_IN_FORCE, text="no version in force on that date"))
            continue
        applied_window = Window.stored(applied.effective_from, applied.effective_to).format()
        common |= {"applied_version": applied.version, "applied_window": applied_window}
        if applied.version != int(c["version"]):
            verdicts.append(Verdict(**common, kind=WRONG, text=(
                f"wrong policy version: version {applied.version} applied, {applied_window}")))
            continue
        current = _current_text(db, c["chunk_id"], clearance)
        if current is None:
            verdicts.append(Verdict(**common, kind=MISSING, text=(
                "right version, but the cited section no longer exists in the indexed text")))
        elif sha256_text(current) != c.get("text_sha256"):
            verdicts.append(Verdict(**common, kind=EDITED, text="right version, but the section was edited since it was cited"))
        else:
            verdicts.append(Verdict(**common, kind=RIGHT, text="right version"))
    return verdicts


def _current_text(db, chunk_id: str, clearance: Clearance) -> str | None:
    with scoped_session(db.app, clearance) as session:
        return sources.chunk_text(session, chunk_id=chunk_id, clearance=clearance)


def date_bases(db, trace: Trace, *, clearance: Clearance | None = None) -> list[str]:
    """The date bases of the policies the answer cited (which date the member date means)."""
    clearance = clearance or clearance_for("compliance")
    doc_ids = [c["doc_id"] for c in trace.citations or []]
    versions = VersionLookup(db).versions(doc_ids, clearance)
    bases = [vs[0].date_basis for vs in versions.values() if vs and vs[0].date_basis in BASES]
    if not bases:  # nothing cited with a basis (a refusal, a wiki answer): use what was entered, else service
        bases = [b for b, v in (trace.dates or {}).items() if v and b in BASES] or ["date_of_service"]
    return list(dict.fromkeys(bases))


# -- replay -------------------------------------------------------------------------------------

def replay(pipeline, trace: Trace, member_date: date, *, reviewer: str, member_product: str | None = None):
    """Re-run the question for member_date with the ORIGINAL role's clearance; its own trace, linked.
    The product is the member's as the reviewer entered it, else the one the answer was given for."""
    bases = date_bases(pipeline.db, trace)
    product = member_product or trace.line_of_business
    result = pipeline.ask(AskRequest(
        user_name=reviewer, question=trace.question, dates={b: member_date for b in bases},
        kind="replay", replay_of=trace.id, as_role=trace.user_role, line_of_business=product,
    ))
    audit(pipeline.db, actor=reviewer, action="replay", target=str(trace.id), details={
        "member_date": member_date.isoformat(), "bases": bases, "as_role": trace.user_role,
        "line_of_business": product,
        "replay_trace": str(result.trace_id) if result.trace_id else None,
    })
    return result
