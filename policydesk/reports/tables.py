"""The gaps report as rows: one table the CSV writes and the HTML page shows, and the page's view."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from policydesk.reports.charts import daily_chart, owner_chart
from policydesk.reports.gaps import ABSTAIN_KINDS, NO_PRODUCT, Counts, GapsReport, SourceRow

REFUSAL_KINDS = ("member_identifier", "claim_action", "out_of_scope", "no_version_in_force", "postflight",
                 "empty_question", "question_too_long")
COLUMNS = ("level", "name", "owner", "line_of_business", "asked", "answered", "not_answered", *(f"no_answer_{k}" for k in ABSTAIN_KINDS),
           "refused", *(f"refused_{k}" for k in REFUSAL_KINDS), "degraded", "conflicts", "marked_wrong")


def _cells(c: Counts) -> dict:
    return {"asked": c.asked, "answered": c.answered, "not_answered": c.not_answered,
            **{f"no_answer_{k}": c.abstained.get(k, 0) for k in ABSTAIN_KINDS},
            "refused": sum(c.refused.values()), **{f"refused_{k}": c.refused.get(k, 0) for k in REFUSAL_KINDS},
            "degraded": c.degraded, "conflicts": c.conflicts, "marked_wrong": c.marked_wrong}


def report_rows(report: GapsReport) -> list[dict]:
    rows = [{"level": "total", "name": "all questions" if report.owner is None else f"questions on {report.owner}'s sources",
             "owner": report.owner or "", **_cells(report.totals)}]
    rows += [{"level": "owner", "name": owner, "owner": owner, **_cells(c)} for owner, c in report.owners.items()]
    # Per line of business the questions were asked for, once any was chosen.
    if any(p != NO_PRODUCT for p in report.products):
        rows += [{"level": "product", "name": p or "no line of business chosen", "owner": "",
                  "line_of_business": p, **_cells(c)} for p, c in report.products.items()]
    rows += [{"level": "source", "name": f"{s.title} ({s.doc_id})", "owner": s.owner,
              "line_of_business": " ".join(s.line_of_business) or "all", **_cells(s.counts)}
             for s in report.sources if s.counts.asked or s.counts.conflicts]
    return rows


def report_csv(report: GapsReport) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n", restval="")
    writer.writeheader()
    writer.writerows(report_rows(report))
    return buf.getvalue()


@dataclass(frozen=True)
class OwnerGroup:
    """One owner's sources on the page: the owner named once, over their sources' rows."""
    owner: str
    counts: Counts  # the owner's questions, each once however many of their sources it reached
    sources: list[SourceRow]


def owner_groups(report: GapsReport) -> list[OwnerGroup]:
    """Sources with a question or a conflict in the period, grouped by owner, owners by name."""
    shown: dict[str, list[SourceRow]] = {}
    for s in report.sources:  # already ordered: most not answered first
        if s.counts.asked or s.counts.conflicts:
            shown.setdefault(s.owner, []).append(s)
    return [OwnerGroup(o, report.owners.get(o, Counts()), shown[o]) for o in sorted(shown)]


def report_view(report: GapsReport) -> dict:
    """What the gaps templates show (the page and the standalone document alike)."""
    products = ({p or "no line of business chosen": c for p, c in report.products.items()}
                if any(p != NO_PRODUCT for p in report.products) else {})
    return {"report": report, "rows": report_rows(report), "groups": owner_groups(report), "products": products,
            "daily_chart": daily_chart(report.daily), "owner_chart": owner_chart(report.owners)}
