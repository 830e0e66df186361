"""View-models: everything a template shows, prepared in Python so the templates stay dumb."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Callable
from urllib.parse import quote

from sqlalchemy.orm import Session

from policydesk.accounts.access import Clearance
from policydesk.products import product_label, products_text
from policydesk.storage import sources
from policydesk.storage.models import OPEN_END
from policydesk.versions import BASIS_KEYS, Window, basis_title, in_force_on

WARNING_LABELS = {
    "recent_change": "Recent change",
    "scheduled_change": "Scheduled change",
    "conflict": "Conflict",
    "degraded": "Degraded",
    "extractive": "Extractive answerer",
    "policy_text": "Policy text, not a written answer",
    "stale_source": "Stale source",
    "version_swapped": "Version applied",
    "date_from_question": "Date read from the question",
    "date_in_question": "Date in the question differs",
    "not_in_force": "Not in force",
    "line_of_business": "Line of business",
    "ocr_text": "Read by OCR",
}


# -- the ask form -------------------------------------------------------------------------------

@dataclass(frozen=True)
class DateField:
    name: str
    label: str
    value: str


def date_fields(session: Session, clearance: Clearance, values: dict[str, str] | None = None) -> list[DateField]:
    """One optional date field per date basis present in the corpus the caller may see."""
    values = values or {}
    present = sources.date_bases(session, clearance=clearance)
    return [DateField(b, basis_title(b), values.get(b, "")) for b in BASIS_KEYS if b in present]


@dataclass(frozen=True)
class ProductField:
    """The product selector: the names the caller's sources use, and the one chosen."""
    options: list[tuple[str, str]]  # (name, label)
    value: str


def product_field(session: Session, clearance: Clearance, value: str | None) -> ProductField | None:
    names = sources.product_names(session, clearance=clearance)
    if not names:
        return None
    return ProductField([(n, product_label(n)) for n in names], value or "")


def product_line(data: dict[str, Any]) -> str:
    chosen = data.get("line_of_business")
    return f"Line of business: {product_label(chosen)}" if chosen else "No line of business chosen"


# -- an answer ----------------------------------------------------------------------------------

@dataclass
class CitationView:
    number: int
    chunk_id: str
    doc_id: str
    title: str
    section: str
    source_type: str
    version: int
    window: str
    text_url: str | None = None
    text: str | None = None
    dom_id: str = ""
    products: str = ""  # "Medicaid only"; empty for a source for every product

    @property
    def version_line(self) -> str:
        return f"version {self.version} · {self.window}"


@dataclass
class ClaimView:
    text: str
    refs: list[int]


@dataclass
class WarningView:
    kind: str
    label: str
    message: str


@dataclass
class PassageView:
    """Policy text shown as it stands, split into runs, the marked sentence(s) flagged."""

    label: str
    runs: list[tuple[str, bool]]

    @classmethod
    def of(cls, p: dict[str, Any]) -> "PassageView":
        text, runs, at = p["text"], [], 0
        for start, end in sorted(tuple(m) for m in p.get("marked", [])):
            runs += [(text[at:start], False), (text[start:end], True)]
            at = end
        runs.append((text[at:], False))
        window = Window.cited(p["effective_from"], p.get("effective_to")).format("arrow")
        return cls(f"{p['title']} · {p['section']} · version {p['version']} ({window})",
                   [r for r in runs if r[0]])


@dataclass
class AnswerView:
    status: str  # answered | refused | no_answer | error
    answer: str = ""
    message: str = ""
    answer_refs: list[int] = field(default_factory=list)  # the sources of the claims the answer says itself
    claims: list[ClaimView] = field(default_factory=list)
    citations: list[CitationView] = field(default_factory=list)
    passages: list[PassageView] = field(default_factory=list)
    warnings: list[WarningView] = field(default_factory=list)
    windows: list[str] = field(default_factory=list)
    dates_line: str = ""
    trace_id: str | None = None
    model: str = ""
    timelines: list["Timeline"] = field(default_factory=list)
    product_line: str = ""

    @property
    def answered(self) -> bool:
        return self.status == "answered"


def dates_line(dates: dict[str, Any] | None, no_date: str) -> str:
    entered = [f"{basis_title(b)} {v}" for b, v in (dates or {}).items() if v]
    return ", ".join(entered) if entered else no_date


def answer_view(data: dict[str, Any], citations: list[dict[str, Any]], *, no_date: str,
                text_url: Callable[[str], str] | None = None, include_text: bool = False,
                readable: set[tuple[str, int]] | None = None) -> AnswerView:
    """From the stored/JSON form of an answer (AskResult.to_json or traces.answer) and its citations.

    With `include_text`, a citation's stored text is shown only if its (doc_id, version) is in
    `readable`, the versions the viewer may read today (policydesk.storage.visible)."""
    if data.get("refused"):
        status, message = "refused", data.get("refusal_reason") or "The question was refused."
    elif data.get("error"):
        status, message = "error", data["error"]
    elif data.get("abstained") or not data.get("answerable", bool(data.get("answer"))):
        status, message = "no_answer", data.get("abstain_reason") or "The sources do not contain the answer."
    else:
        status, message = "answered", ""
    cites = []
    for i, c in enumerate(citations, start=1):
        cites.append(CitationView(
            number=i, chunk_id=c["chunk_id"], doc_id=c["doc_id"], title=c["title"], section=c["section"],
            source_type=c.get("source_type", ""), version=int(c["version"]),
            window=Window.cited(c["effective_from"], c.get("effective_to")).format("arrow"),
            text_url=text_url(c["chunk_id"]) if text_url else None,
            text=c.get("text") if include_text and (c["doc_id"], int(c["version"])) in (readable or set()) else None,
            dom_id=f"cite-{i}",
            products=f"{products_text(c['line_of_business'])} only" if c.get("line_of_business") else "",
        ))
    number = {c.chunk_id: c.number for c in cites}
    claims = [ClaimView(cl["text"], [number[cid] for cid in cl.get("citations", []) if cid in number])
              for cl in data.get("claims", [])]
    # Policy text shown with no model: the passage is the answer, so its sentences are not listed
    # again as claims. A stored view shows a passage only where the viewer may read its version
    # today, as for cited text.
    passages = [PassageView.of(p) for p in data.get("passages", []) if status == "answered"
                and (readable is None or (p["doc_id"], int(p["version"])) in readable)]
    if data.get("passages"):
        claims = []
    # A claim the answer already says is not listed again under it (a model often answers with its
    # one claim word for word): its references go on the answer, so each sentence is shown once.
    answer = data.get("answer", "") if status == "answered" else ""
    said = _said(answer)
    answer_refs = list(dict.fromkeys(r for cl in claims if _said(cl.text) in said for r in cl.refs))
    claims = [cl for cl in claims if _said(cl.text) not in said]
    windows = list(dict.fromkeys(f"{c.title} · {c.version_line}" for c in cites if c.source_type == "policy"))
    warnings = [WarningView(w["kind"], WARNING_LABELS.get(w["kind"], w["kind"].replace("_", " ").capitalize()),
                            w["message"]) for w in data.get("warnings", [])]
    return AnswerView(status=status, answer=answer, message=message, answer_refs=answer_refs, claims=claims,
                      citations=cites, passages=passages, warnings=warnings, windows=windows,
                      dates_line=dates_line(data.get("dates"), no_date), trace_id=data.get("trace_id"),
                      model=data.get("model", ""), product_line=product_line(data))


def _said(text: str) -> str:
    """A sentence as compared for repeats: spacing, case and closing punctuation aside."""
    return " ".join(text.split()).casefold().rstrip(" .;:")


def citation_url(trace_id: str) -> Callable[[str], str]:
    return lambda chunk_id: f"/citations/{trace_id}/{quote(chunk_id, safe='')}"


# -- version timelines --------------------------------------------------------------------------

@dataclass
class Segment:
    version: int
    window: str
    left: float
    width: float
    cited: bool
    applies: bool
    open_ended: bool

    @property
    def position(self) -> str:
        """Classes placing the bar to the whole percent (app.css `.tl-l*`, `.tl-w*`): pages carry no
        inline style (the Content-Security-Policy allows styles from PolicyDesk's own files only).
        Rounded at both ends, so bars that meet still meet."""
        first = round(self.left)
        return f"tl-l{first} tl-w{max(0, round(self.left + self.width) - first)}"


@dataclass
class Timeline:
    doc_id: str
    title: str
    segments: list[Segment]
    marker_left: float
    marker_label: str
    start_label: str
    end_label: str

    @property
    def marker_position(self) -> str:
        return f"tl-l{round(self.marker_left)}"


def _pct(d: date, start: date, span: int) -> float:
    return round(max(0.0, min(100.0, (d - start).days / span * 100)), 2)


def timelines(lookup, citations: list[dict[str, Any]], clearance: Clearance, dates: dict[str, Any] | None,
              fallback: date, fallback_label: str) -> list[Timeline]:
    """A bar per version of each cited policy (as the caller may see them), the applicable date marked."""
    policy_ids = list(dict.fromkeys(c["doc_id"] for c in citations if c.get("source_type") == "policy"))
    if not policy_ids:
        return []
    cited = {(c["doc_id"], int(c["version"])) for c in citations}
    found = lookup.versions(policy_ids, clearance)
    out = []
    for doc_id in policy_ids:
        versions = found.get(doc_id) or []
        if not versions:
            continue
        basis = versions[0].date_basis
        entered = (dates or {}).get(basis)
        marker = date.fromisoformat(entered) if isinstance(entered, str) else (entered or fallback)
        marker_label = f"{basis_title(basis) if entered else fallback_label} {marker.isoformat()}"
        start = min(v.effective_from for v in versions)
        closed_ends = [v.effective_to for v in versions if v.effective_to < OPEN_END]
        end = max([*closed_ends, max(v.effective_from for v in versions) + timedelta(days=365), marker + timedelta(days=90)])
        start = min(start, marker - timedelta(days=30))
        span = max((end - start).days, 1)
        applies = in_force_on(versions, marker)
        segments = []
        for v in versions:
            v_end = min(v.effective_to, end)
            window = Window.stored(v.effective_from, v.effective_to)
            left = _pct(v.effective_from, start, span)
            segments.append(Segment(
                version=v.version, window=window.format("arrow"), left=left,
                width=round(_pct(v_end, start, span) - left, 2), cited=(doc_id, v.version) in cited,
                applies=applies is not None and applies.version == v.version, open_ended=window.last is None,
            ))
        end_label = "open →" if any(s.open_ended for s in segments) else end.isoformat()
        out.append(Timeline(doc_id, versions[0].title, segments, _pct(marker, start, span), marker_label,
                            start.isoformat(), end_label))
    return out
