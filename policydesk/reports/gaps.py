"""The gaps report: where staff questions go unanswered, by source owner and by policy.

Everything is read through the application login in the viewer's scope: sources through the
same predicate and row-level security as retrieval (a source the viewer may not read is never
named), and traces under the report scope (migration 0008), which admits only traces of staff
whose clearance is within the viewer's. Counts are computed in Python from those rows, so the
CSV, the HTML page and the tests all read one `GapsReport`.

A question is attributed to the sources it cited; one that cited nothing (not answered, or
refused after retrieval) to the sources in its context that came close to it (`attribution.py`:
the question names the source, or its similarity reaches settings.GAP_MIN_SIMILARITY), and to
no source when none did. A question charged to no source is counted in the totals and in its
group of unanswered questions, never in an owner's row.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone

from sqlalchemy import text

from policydesk.accounts.access import Clearance
from policydesk.config import get_settings
from policydesk.reports.attribution import close_sources
from policydesk.reports.clusters import QuestionCluster, cluster_questions, group_exact
from policydesk.storage import sources
from policydesk.storage.chunk_ids import doc_id_of_chunk
from policydesk.storage.scope import scoped_session

ABSTAIN_KINDS = ("no_source", "weak_match", "not_in_sources", "failed_closed", "failed_check", "line_of_business",
                 "error")
NO_PRODUCT = ""  # the `products` key of questions asked without a line of business

_TRACES_SQL = text("""
    SELECT id, created_at, question, refused, abstained, degraded, status, answer, citations, chunk_ids,
           line_of_business
    FROM traces
    WHERE kind = 'ask' AND created_at >= :start AND created_at < :end
    ORDER BY created_at
""")
_WRONG_SQL = text("SELECT DISTINCT trace_id FROM feedback WHERE verdict = 'wrong' AND at >= :start")


@dataclass
class Counts:
    asked: int = 0
    answered: int = 0
    abstained: Counter = field(default_factory=Counter)  # abstain code -> n
    refused: Counter = field(default_factory=Counter)  # refusal code -> n
    degraded: int = 0
    conflicts: int = 0
    marked_wrong: int = 0

    @property
    def not_answered(self) -> int:
        return sum(self.abstained.values())

    def add(self, t: "_Trace", wrong: bool) -> None:
        self.asked += 1
        if t.refused:
            self.refused[t.refusal_code or "refused"] += 1
        elif t.abstained:
            self.abstained[t.abstain_code or "not_in_sources"] += 1
        else:
            self.answered += 1
        self.degraded += int(t.degraded)
        self.marked_wrong += int(wrong)


@dataclass
class SourceRow:
    doc_id: str
    title: str
    source_type: str
    owner: str
    counts: Counts = field(default_factory=Counts)
    line_of_business: tuple[str, ...] = ()  # the source's products; empty = every product
    conflicts: Counter = field(default_factory=Counter)  # "note title says X" -> n


@dataclass(frozen=True)
class SourceNote:
    doc_id: str
    title: str
    owner: str
    detail: str


@dataclass
class GapsReport:
    start: date
    end: date
    owner: str | None
    viewer_role: str
    totals: Counts
    sources: list[SourceRow]
    owners: dict[str, Counts]
    clusters: list[QuestionCluster]
    stale: list[SourceNote]
    scheduled: list[SourceNote]
    daily: dict[date, Counts]
    # Per line of business the question was asked for (NO_PRODUCT: none chosen).
    products: dict[str, Counts] = field(default_factory=dict)
    unclaimed: int = 0  # questions that cited nothing and came close to no source: charged to no owner
    # How a question that cited nothing was matched to sources: by name and similarity, or (without
    # an embedding model) by name only, which the page says.
    min_similarity: float | None = None  # None: no embedding model, naming only; groups by exact wording


@dataclass(frozen=True)
class _Trace:
    id: str
    day: date
    question: str
    refused: bool
    abstained: bool
    degraded: bool
    refusal_code: str | None
    abstain_code: str | None
    cited_docs: tuple[str, ...]
    context: tuple[str, ...]  # chunk ids in context, best-ranked first
    conflicts: tuple[dict, ...]
    line_of_business: str | None = None


def _trace(row) -> _Trace:
    answer = row.answer or {}
    cited = tuple(dict.fromkeys(c["doc_id"] for c in row.citations or []))
    return _Trace(
        id=str(row.id), day=row.created_at.astimezone(timezone.utc).date(), question=row.question,
        refused=row.refused, abstained=row.abstained or row.status == "failed", degraded=row.degraded,
        refusal_code=answer.get("refusal_code"), abstain_code=answer.get("abstain_code"), cited_docs=cited,
        context=tuple(row.chunk_ids or ()),
        conflicts=tuple(answer.get("conflicts") or ()), line_of_business=row.line_of_business,
    )


def period_bounds(start: date, end: date) -> dict[str, datetime]:
    """[start, end] as inclusive UTC days: the bounds every report reads traces between."""
    return {"start": datetime.combine(start, time.min, tzinfo=timezone.utc),
            "end": datetime.combine(end + timedelta(days=1), time.min, tzinfo=timezone.utc)}


def gaps_report(db, clearance: Clearance, *, start: date, end: date, today: date, owner: str | None = None,
                embed_model=None, min_similarity: float | None = None) -> GapsReport:
    """Counts for [start, end] (inclusive days, UTC) as `clearance` may see them. `min_similarity`:
    settings.GAP_MIN_SIMILARITY unless given."""
    if end < start:
        raise ValueError(f"the period ends ({end}) before it starts ({start})")
    window = period_bounds(start, end)
    with scoped_session(db.app, clearance, report=True) as session:
        versions = sources.version_catalog(session, clearance=clearance)
        traces = [_trace(r) for r in session.execute(_TRACES_SQL, window)]
        wrong = {str(r.trace_id) for r in session.execute(_WRONG_SQL, {"start": window["start"]})}

    latest = {v.doc_id: v for v in versions}  # ordered by version: the last one wins
    wanted = {d for d, v in latest.items() if owner is None or v.owner == owner}
    rows = {d: SourceRow(d, latest[d].title, latest[d].source_type, latest[d].owner,
                         line_of_business=tuple(latest[d].line_of_business or ())) for d in sorted(wanted)}
    if min_similarity is None:
        min_similarity = get_settings().GAP_MIN_SIMILARITY
    uncited = [t for t in traces if not t.cited_docs and t.context]
    close = dict(zip((t.id for t in uncited), close_sources(
        db, clearance, [(t.question, t.context) for t in uncited], {d: v.title for d, v in latest.items()},
        embed_model=embed_model, min_similarity=min_similarity)))
    totals, owners, daily, products = Counts(), defaultdict(Counts), defaultdict(Counts), defaultdict(Counts)
    unanswered: list[str] = []
    unclaimed: Counter = Counter()
    for t in traces:
        docs = [d for d in (t.cited_docs or close.get(t.id, ())) if d in latest]
        mine = [d for d in docs if d in wanted]
        if owner is not None and not mine:
            continue  # another owner's question, or one no source of theirs was near
        is_wrong = t.id in wrong
        totals.add(t, is_wrong)
        daily[t.day].add(t, is_wrong)
        products[t.line_of_business or NO_PRODUCT].add(t, is_wrong)
        for d in mine:
            rows[d].counts.add(t, is_wrong)
        for o in {latest[d].owner for d in mine}:
            owners[o].add(t, is_wrong)
        # One count per question and policy, however many chunk pairs were flagged; a pair is
        # named only if the viewer may read both sides.
        flagged: dict[str, set[str]] = defaultdict(set)
        for c in t.conflicts:
            policy_doc, note_doc = c.get("policy_doc_id"), doc_id_of_chunk(c.get("note_chunk_id", ""))
            if policy_doc in rows and note_doc in latest:
                flagged[policy_doc].add(f"{c.get('note_title')} says {', '.join(c.get('note_values') or [])}")
        for policy_doc, notes in flagged.items():
            rows[policy_doc].counts.conflicts += 1
            for note in notes:
                rows[policy_doc].conflicts[note] += 1
        if flagged:
            totals.conflicts += 1
            for o in {latest[d].owner for d in flagged}:
                owners[o].conflicts += 1
        if t.abstained and not t.refused:
            unanswered.append(t.question)
            if not docs:
                unclaimed[t.question.strip()] += 1

    stale = [SourceNote(v.doc_id, v.title, v.owner, f"version {v.version} changed on disk since it was indexed")
             for v in versions if v.doc_id in wanted and v.disk_sha256 and v.disk_sha256 != v.source_sha256]
    scheduled = [SourceNote(v.doc_id, v.title, v.owner, f"version {v.version} takes effect {v.effective_from}")
                 for v in versions if v.doc_id in wanted and v.effective_from > today]
    clusters = (cluster_questions(unanswered, embed_model, unclaimed=unclaimed) if embed_model is not None
                else group_exact(unanswered, unclaimed=unclaimed))
    return GapsReport(start, end, owner, clearance.role, totals,
                      sorted(rows.values(), key=lambda r: (-r.counts.not_answered, -r.counts.asked, r.doc_id)),
                      dict(sorted(owners.items())), clusters, stale, scheduled, dict(sorted(daily.items())),
                      dict(sorted(products.items())), unclaimed=sum(unclaimed.values()),
                      min_similarity=min_similarity if embed_model is not None else None)
