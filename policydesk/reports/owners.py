"""The owners report: what each source owner should act on.

Per owner, over the sources the viewer may see (the gaps report's own reads and rules: it is
computed from `gaps_report`):

- changed in the folder, not yet synced: the staleness the last `sync` or `check-staleness`
  recorded (a file whose hash differs from the one indexed);
- past review: the manifest's optional `review_every: DAYS` (read from the folder at report
  time; absent = never due), counted from the source's last review, taken as the later of its
  newest version's effective date and the day a sync last changed its text;
- newest version taking effect within RECENT_CHANGE_DAYS of today (before or after);
- questions on their sources that went unanswered in the period: only those a source of theirs
  came close to (the gaps report's attribution), never one that merely ranked an unrelated source
  first.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from datetime import date, timedelta, timezone
from pathlib import Path

from policydesk.accounts.access import Clearance
from policydesk.ingest.manifest import load_manifest
from policydesk.reports.clusters import QuestionCluster
from policydesk.reports.gaps import gaps_report
from policydesk.storage import sources
from policydesk.storage.scope import scoped_session

KINDS = ("not_synced", "past_review", "version_change", "unanswered", "ocr_flagged")


@dataclass(frozen=True)
class OwnerItem:
    kind: str  # one of KINDS
    doc_id: str
    title: str
    detail: str


@dataclass
class OwnerEntry:
    owner: str
    items: list[OwnerItem] = field(default_factory=list)
    unanswered: int = 0
    clusters: list[QuestionCluster] = field(default_factory=list)  # with --owner and a model only

    def of(self, kind: str) -> list[OwnerItem]:
        return [i for i in self.items if i.kind == kind]


@dataclass
class OwnersReport:
    start: date
    end: date
    today: date
    viewer_role: str
    owners: list[OwnerEntry]
    review_known: bool  # False: no folder to read `review_every` from
    # The gaps report's: None when questions were matched to sources by name only (no embedding model).
    min_similarity: float | None = None


def _review_days(directory: Path | None) -> dict[str, int]:
    """doc_id -> review_every of its newest listed version, from the folder's manifest."""
    if directory is None:
        return {}
    days: dict[str, tuple[int, int]] = {}
    for s in load_manifest(directory):
        if s.review_every is not None and s.version >= days.get(s.doc_id, (0, 0))[0]:
            days[s.doc_id] = (s.version, s.review_every)
    return {d: v for d, (_, v) in days.items()}


def owners_report(db, clearance: Clearance, *, start: date, end: date, today: date, recent_days: int,
                  directory: Path | None = None, owner: str | None = None, embed_model=None,
                  min_similarity: float | None = None) -> OwnersReport:
    # The model (when given) decides which sources a question came close to, for every owner.
    gaps = gaps_report(db, clearance, start=start, end=end, today=today, owner=owner, embed_model=embed_model,
                       min_similarity=min_similarity)
    with scoped_session(db.app, clearance) as session:
        catalog = sources.version_catalog(session, clearance=clearance)
    newest = {v.doc_id: v for v in catalog}  # ordered by version: the last one wins
    entries: dict[str, OwnerEntry] = {}

    def entry(name: str) -> OwnerEntry:
        return entries.setdefault(name, OwnerEntry(name))

    for s in gaps.stale:
        entry(s.owner).items.append(OwnerItem("not_synced", s.doc_id, s.title, s.detail))
    review = _review_days(directory)
    for doc_id, v in newest.items():
        if owner is not None and v.owner != owner:
            continue
        changed = v.text_changed_at.astimezone(timezone.utc).date() if v.text_changed_at else None
        reviewed = max(d for d in (v.effective_from, changed) if d is not None)
        if doc_id in review and reviewed + timedelta(days=review[doc_id]) < today:
            entry(v.owner).items.append(OwnerItem("past_review", doc_id, v.title, (
                f"review every {review[doc_id]} days; last reviewed {reviewed}, due "
                f"{reviewed + timedelta(days=review[doc_id])}")))
        if abs((v.effective_from - today).days) <= recent_days:
            when = "takes effect" if v.effective_from > today else "took effect"
            entry(v.owner).items.append(OwnerItem("version_change", doc_id, v.title,
                                                  f"version {v.version} {when} {v.effective_from}"))
    for row in gaps.sources:
        if row.counts.not_answered:
            entry(row.owner).items.append(OwnerItem("unanswered", row.doc_id, row.title, (
                f"{row.counts.not_answered} of {row.counts.asked} questions not answered")))
            entry(row.owner).unanswered += row.counts.not_answered
    for name, item in ocr_flagged_items(db, clearance, owner=owner):
        entry(name).items.append(item)
    if owner is not None:
        entry(owner).clusters = gaps.clusters
    return OwnersReport(start, end, today, clearance.role, [entries[k] for k in sorted(entries)], directory is not None,
                        gaps.min_similarity)


COLUMNS = ("owner", "kind", "doc_id", "title", "detail")


def owners_csv(report: OwnersReport) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for e in report.owners:
        for i in e.items:
            writer.writerow({"owner": e.owner, "kind": i.kind, "doc_id": i.doc_id, "title": i.title, "detail": i.detail})
    return buf.getvalue()


def ocr_flagged_items(db, clearance: Clearance, *, owner: str | None = None) -> list[tuple[str, OwnerItem]]:
    """(owner, item) per indexed version the viewer may read with scanned pages flagged at ingest for
    low OCR confidence (chunk metadata `ocr_flagged`, ingest/readers/ocr.py): the text to check."""
    from sqlalchemy import select

    from policydesk.storage.models import Chunk, DocumentVersion
    from policydesk.storage.predicate import access_clause

    with scoped_session(db.app, clearance) as session:
        rows = session.execute(select(Chunk.doc_id, Chunk.version, Chunk.metadata_).where(
            Chunk.metadata_.has_key("ocr_flagged"), access_clause(clearance, Chunk)).order_by(Chunk.id)).all()
        catalog = {(v.doc_id, v.version): v for v in session.execute(select(
            DocumentVersion.doc_id, DocumentVersion.version, DocumentVersion.title, DocumentVersion.owner)
            .where(access_clause(clearance, DocumentVersion)))}
    pages: dict[tuple[str, int], dict[int, float]] = {}
    for doc_id, version, meta in rows:
        for n in meta["ocr_flagged"]:
            pages.setdefault((doc_id, version), {})[int(n)] = float(meta["ocr_pages"][str(n)])
    out = []
    for (doc_id, version), flagged in sorted(pages.items()):
        v = catalog.get((doc_id, version))
        if v is None or (owner is not None and v.owner != owner):
            continue
        listed = ", ".join(f"page {n} ({c:.0f})" for n, c in sorted(flagged.items()))
        out.append((v.owner, OwnerItem("ocr_flagged", doc_id, v.title, (
            f"version {version}: scanned {listed} read by OCR with low confidence; check the text or rescan"))))
    return out
