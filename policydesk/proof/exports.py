"""Trace exports for auditors: JSON Lines or CSV, each record verifiable offline.

Each record carries its chain link (`seq`, `prev_hash`, `row_hash`) and `canonical`, the exact
text the database hashed when the row was written. An auditor checks, with nothing but the file:

    sha256((prev_hash + canonical).encode("utf-8")).hexdigest() == row_hash   # the row is as written
    json.loads(canonical)[field] == record[field]                             # the fields shown are those
    record[i].prev_hash == record[i-1].row_hash  when seq is consecutive       # nothing between them

`verify_export_lines` below is that check, runnable on its own (docs/security.md quotes it).
An export of a whole period (no user filter) has consecutive seqs, so a missing row shows
(`whole_period=True`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

from sqlalchemy import text

from policydesk.storage.chain import CANONICAL_ROW, pin_canonical_output

FORMATS = ("jsonl", "csv")
# What an auditor reads first; everything else is in `canonical`.
FIELDS = ("id", "seq", "created_at", "kind", "replay_of", "user_name", "user_role", "question", "dates",
          "line_of_business", "answer_text", "refused", "refusal_reason", "abstained", "degraded", "status", "citations", "warnings",
          "feedback", "prev_hash", "row_hash", "canonical")
_CITATION_KEYS = ("chunk_id", "doc_id", "title", "section", "version", "effective_from", "effective_to", "text_sha256",
                  "line_of_business")

_EXPORT_SQL = text(f"""
    SELECT t.seq, {CANONICAL_ROW}::text AS canonical, t.prev_hash, t.row_hash,
           coalesce((SELECT jsonb_agg(jsonb_build_object('at', f.at, 'user_name', f.user_name, 'verdict', f.verdict,
                                                         'reason', f.reason, 'note', f.note) ORDER BY f.id)
                     FROM feedback f WHERE f.trace_id = t.id), '[]'::jsonb) AS feedback
    FROM traces t
    WHERE t.created_at >= :start AND t.created_at < :end
      AND (CAST(:user AS text) IS NULL OR t.user_name = CAST(:user AS text))
    ORDER BY t.seq
""")


class ExportError(ValueError):
    pass


@dataclass(frozen=True)
class ExportRecord:
    fields: dict

    def csv_row(self) -> dict:
        return {k: (json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v) for k, v in self.fields.items()}


def _record(row) -> ExportRecord:
    content = json.loads(row.canonical)
    fields = {k: content.get(k) for k in FIELDS if k in content}
    fields["citations"] = [{k: c.get(k) for k in _CITATION_KEYS} for c in content.get("citations") or []]
    fields |= {"feedback": row.feedback, "prev_hash": row.prev_hash, "row_hash": row.row_hash,
               "canonical": row.canonical}
    return ExportRecord({k: fields.get(k) for k in FIELDS})


def export_traces(db, *, reviewer: str, start: date, end: date, user: str | None = None) -> list[ExportRecord]:
    """Export in a compliance reviewer's scope, and log it (who, period, filter, how many)."""
    from policydesk.proof.disputes import audit, audited_staff_filter, reviewing

    with reviewing(reviewer), db.app.begin() as conn:
        records = export_records(conn, start=start, end=end, user=user)
    audit(db, actor=reviewer, action="export", target="traces", details={
        "from": start.isoformat(), "to": end.isoformat(),
        "user": audited_staff_filter(db, (user or "").strip() or None), "records": len(records)})
    return records


def export_records(conn, *, start: date, end: date, user: str | None = None) -> list[ExportRecord]:
    """Traces asked from `start` to `end` (inclusive days, UTC), in chain order. `conn` is a
    transaction in a reviewer's scope (RLS decides what it may read)."""
    if end < start:
        raise ExportError(f"the period ends ({end}) before it starts ({start})")
    pin_canonical_output(conn)  # the canonical text exactly as the trigger hashed it
    params = {"start": datetime.combine(start, time.min, tzinfo=timezone.utc),
              "end": datetime.combine(end + timedelta(days=1), time.min, tzinfo=timezone.utc),
              "user": (user or "").strip() or None}
    return [_record(r) for r in conn.execute(_EXPORT_SQL, params)]


def render(records: Iterable[ExportRecord], fmt: str) -> Iterator[str]:
    if fmt not in FORMATS:
        raise ExportError(f"unknown export format {fmt!r}; expected one of: {', '.join(FORMATS)}")
    if fmt == "jsonl":
        for r in records:
            yield json.dumps(r.fields, sort_keys=True, default=str) + "\n"
        return
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    for r in records:
        writer.writerow(r.csv_row())
    yield buf.getvalue()


# -- offline verification (no database, no PolicyDesk import needed beyond the stdlib) ------------

def verify_export_lines(lines: Iterable[str], *, whole_period: bool = False) -> list[str]:
    """Check a JSONL export: each row's hash, its shown fields against `canonical`, and links
    between consecutive rows; with `whole_period` (an export without a user filter), also that
    no seq is missing. Returns the problems found (empty: the file verifies)."""
    problems, prev = [], None
    for n, line in enumerate(lines, start=1):
        rec = json.loads(line)
        digest = hashlib.sha256((rec["prev_hash"] + rec["canonical"]).encode("utf-8")).hexdigest()
        if digest != rec["row_hash"]:
            problems.append(f"line {n} (trace {rec['id']}): hash mismatch, the row is not as written")
        content = json.loads(rec["canonical"])
        for key in ("id", "seq", "user_name", "user_role", "question", "line_of_business", "answer_text", "refused",
                    "kind"):
            if content.get(key) != rec.get(key):
                problems.append(f"line {n} (trace {rec['id']}): field {key!r} differs from what was hashed")
        if prev is not None and rec["seq"] == prev["seq"] + 1 and rec["prev_hash"] != prev["row_hash"]:
            problems.append(f"line {n} (trace {rec['id']}): does not link to the row before it")
        if whole_period and prev is not None and rec["seq"] != prev["seq"] + 1:
            problems.append(f"line {n} (trace {rec['id']}): rows {prev['seq'] + 1}..{rec['seq'] - 1} are missing")
        prev = rec
    return problems
