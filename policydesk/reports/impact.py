"""The impact list: answers already given whose cited text has since changed or been superseded.

For every ask (never a replay or an eval run) in a period, each citation is checked with the
disputes verdict code (`disputes.citation_verdicts`) against the date the answer used: the date
entered for the cited policy's basis, else the day it was asked. A citation is listed when that
check is not "right version" (the section was edited, is gone, or another version now applies on
that date), or when the cited version was open-ended when cited and has since been superseded.

Visibility follows the gaps report's rules exactly: traces are read under the report scope
(only traces of staff whose clearance is within the viewer's), and a citation is listed only if
the viewer may read the cited version now; the stored and current text (and so the diff) are
shown only then. Whoever computes it is written to the audit log (`record_view`).
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from dataclasses import asdict, dataclass
from datetime import date, timezone

from sqlalchemy import select

from policydesk.proof import disputes
from policydesk.accounts.access import Clearance
from policydesk.storage.chunk_ids import sha256_text
from policydesk.reading.language import sentences
from policydesk.reports.gaps import period_bounds
from policydesk.storage import sources
from policydesk.storage.models import Trace
from policydesk.storage.scope import scoped_session
from policydesk.versions import VersionLookup

SUPERSEDED = "superseded"  # the cited version was open-ended when cited; a later version now exists
CHANGED_KINDS = (disputes.WRONG, disputes.EDITED, disputes.MISSING, disputes.NONE_IN_FORCE)


@dataclass(frozen=True)
class ImpactRow:
    trace_id: str
    asked_by: str
    asked_at: str
    role: str
    dates_entered: dict
    used_date: str
    doc_id: str
    title: str
    section: str
    chunk_id: str
    version: int
    change: str  # one of CHANGED_KINDS or SUPERSEDED
    detail: str
    old_sha256: str | None
    new_sha256: str | None  # None: the section is no longer indexed
    applies_now: int | None  # the version that applies on used_date now
    diff: str | None  # sentence diff, stored text -> current text: one "  " / "- " / "+ " line per sentence
    replay_url: str

    def record(self) -> dict:
        return asdict(self)

    @property
    def diff_lines(self) -> list[tuple[str, str]]:
        """(mark, sentence) per line of `diff`: " " unchanged, "-" only as cited, "+" only indexed now."""
        return [(line[0], line[2:]) for line in (self.diff or "").splitlines()]


def used_date(trace: Trace, doc_id: str) -> date:
    """The date the answer applied to this document: the one entered for its basis, else the day asked."""
    for applied in trace.versions_applied or []:
        if applied.get("doc_id") == doc_id and applied.get("applicable_date"):
            return date.fromisoformat(applied["applicable_date"])
    return trace.created_at.astimezone(timezone.utc).date()


def _asks(db, clearance: Clearance, start: date, end: date) -> list[Trace]:
    window = period_bounds(start, end)
    with scoped_session(db.app, clearance, report=True) as session:
        rows = list(session.scalars(select(Trace).where(
            Trace.kind == "ask", Trace.created_at >= window["start"], Trace.created_at < window["end"])
            .order_by(Trace.created_at)))
        for r in rows:
            session.expunge(r)
    return rows


def _current_texts(db, clearance: Clearance, chunk_ids: set[str]) -> dict[str, str | None]:
    with scoped_session(db.app, clearance) as session:
        return {c: sources.chunk_text(session, chunk_id=c, clearance=clearance) for c in sorted(chunk_ids)}


# A line break inside a paragraph is wrapping, not a sentence end: it is joined when the line
# before ends no sentence or lead-in (. ! ? :) and the next line goes on in lower case or with a
# number that opens no list item. A heading (no final stop, a capital after it) keeps its break.
_WRAP = re.compile(r"(?<![.!?:\n])[ \t]*\n[ \t]*(?=[a-z]|\d+(?![.)\d]))")


def sentence_diff(old: str, new: str | None) -> list[tuple[str, str]]:
    """The cited text against the text indexed now, sentence by sentence (the product's splitter),
    so a one-sentence edit is one removed and one added sentence among unchanged ones. Whitespace
    is folded: a re-wrapped line is not a change."""
    a, b = ([" ".join(x.split()) for x in sentences(_WRAP.sub(" ", t or ""))] for t in (old, new))
    out: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out += [(" ", x) for x in a[i1:i2]]
        else:
            out += [("-", x) for x in a[i1:i2]] + [("+", x) for x in b[j1:j2]]
    return out


def _diff(old: str, new: str | None) -> str:
    return "\n".join(f"{mark} {sentence}" for mark, sentence in sentence_diff(old, new))


def impact_rows(db, clearance: Clearance, *, start: date, end: date) -> list[ImpactRow]:
    """Every changed citation of the period's asks that `clearance` may see, oldest ask first."""
    if end < start:
        raise ValueError(f"the period ends ({end}) before it starts ({start})")
    traces = [t for t in _asks(db, clearance, start, end) if t.citations]
    keys = {(c["doc_id"], int(c["version"])) for t in traces for c in t.citations}
    with scoped_session(db.app, clearance) as session:
        readable = sources.readable_versions(session, keys=keys, clearance=clearance)
    versions = VersionLookup(db).versions({d for d, _ in keys}, clearance)
    current = _current_texts(db, clearance, {c["chunk_id"] for t in traces for c in t.citations
                                             if (c["doc_id"], int(c["version"])) in readable})
    rows: list[ImpactRow] = []
    for t in traces:
        cites = {c["chunk_id"]: c for c in t.citations}
        for doc_id in dict.fromkeys(c["doc_id"] for c in t.citations):
            day = used_date(t, doc_id)
            mine = [c for c in t.citations if c["doc_id"] == doc_id]
            one = Trace(id=t.id, citations=mine)
            for v in disputes.citation_verdicts(db, one, day, clearance=clearance):
                c = cites[v.chunk_id]
                if (c["doc_id"], int(c["version"])) not in readable:
                    continue  # above the viewer's clearance now: never named
                change, detail = v.kind, v.text
                if change == disputes.RIGHT:
                    info = next((x for x in versions.get(doc_id, []) if x.version == int(c["version"])), None)
                    if c.get("effective_to") is not None or info is None or info.superseded_by is None:
                        continue
                    change, detail = SUPERSEDED, f"version {info.superseded_by} has since superseded it"
                elif change not in CHANGED_KINDS:
                    continue
                now = current.get(v.chunk_id)
                rows.append(ImpactRow(
                    trace_id=str(t.id), asked_by=t.user_name, asked_at=t.created_at.isoformat(), role=t.user_role,
                    dates_entered={k: v_ for k, v_ in (t.dates or {}).items() if v_}, used_date=day.isoformat(),
                    doc_id=doc_id, title=c["title"], section=c["section"], chunk_id=v.chunk_id,
                    version=int(c["version"]), change=change, detail=detail, old_sha256=c.get("text_sha256"),
                    new_sha256=sha256_text(now) if now is not None else None, applies_now=v.applied_version,
                    diff=_diff(c.get("text") or "", now) if change in (disputes.EDITED, disputes.MISSING) else None,
                    replay_url=f"/disputes/{t.id}"))
    return rows


def record_view(db, *, actor: str, rows: list[ImpactRow], start: date, end: date, fmt: str, role: str) -> None:
    """One audit row per view or export: who, which period, in what form, which traces."""
    disputes.audit(db, actor=actor, action="impact_report", target="traces", details={
        "since": start.isoformat(), "until": end.isoformat(), "format": fmt, "viewer_role": role,
        "rows": len(rows), "traces": sorted({r.trace_id for r in rows}),
    })



# -- formats ------------------------------------------------------------------------------------

FORMATS = ("jsonl", "csv", "html")
CSV_COLUMNS = tuple(ImpactRow.__dataclass_fields__)


def impact_jsonl(rows: list[ImpactRow]) -> str:
    return "".join(json.dumps(r.record(), sort_keys=True) + "\n" for r in rows)


def impact_csv(rows: list[ImpactRow]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for r in rows:
        record = r.record()
        record["dates_entered"] = "; ".join(f"{k} {v}" for k, v in record["dates_entered"].items())
        writer.writerow(record)
    return buf.getvalue()


def impact_view(rows: list[ImpactRow], *, start: date, end: date, viewer_role: str) -> dict:
    """What the impact templates show (the page and the standalone document alike)."""
    return {"rows": rows, "period": {"start": start, "end": end}, "viewer_role": viewer_role,
            "can_replay": viewer_role == "compliance"}
