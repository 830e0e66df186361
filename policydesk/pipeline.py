"""The ask pipeline: the seven steps of DESIGN.md, in order, in one place.

CLI, web, disputes replay and the eval harness all call `AskPipeline.ask`; nothing is
re-implemented elsewhere. The order is the design: nothing the caller is not cleared for is
ever ranked, reasoned over, or generated from.
"""

from __future__ import annotations

import logging
import re
import uuid
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from policydesk import metrics
from policydesk.access import Clearance, UnknownRoleError, clearance_for
from policydesk.dates import DateInputError, check_date_order, parse_input_date
from policydesk.postprocessors import ConflictFlagger, VersionResolver
from policydesk.refusal import screen_question
from policydesk.retrievers import HybridRetriever, chunk_vector_store
from policydesk.synthesis.postflight import check_draft, combine
from policydesk.answer import AnswerWarning
from policydesk.synthesis.schema import Citation, Claim
from policydesk.synthesis.synthesizer import CitedAnswerSynthesizer
from policydesk.tracing import TraceDraft, active_trace, install_trace_collector, write_trace
from policydesk.versions import (
    BASIS_KEYS,
    NoVersionInForce,
    NoVisibleVersion,
    VersionLookup,
    Window,
    basis_label,
    compare_versions,
    is_what_changed_question,
    render_comparison,
)
from policydesk.storage import sources
from policydesk.storage.models import User
from policydesk.storage.scope import scoped_session

log = logging.getLogger(__name__)

EXTRACTIVE_NOTE = "Answered by the offline extractive answerer: quoted sentences from the cited sources, not a model."


@dataclass
class AskRequest:
    user_name: str
    question: str
    dates: dict[str, Any] = field(default_factory=dict)  # basis -> date | "YYYY-MM-DD" | None
    kind: str = "ask"  # ask | replay | eval
    replay_of: uuid.UUID | None = None
    as_role: str | None = None  # replay: the original role's clearance, not the replayer's
    rejected: str | None = None  # input the caller refused (API validation): traced as failed, not answered


@dataclass
class AskResult:
    question: str
    user_name: str
    role: str | None
    answer: str = ""
    claims: list[Claim] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    answerable: bool = False
    refused: bool = False
    refusal_reason: str | None = None
    refusal_message: str | None = None
    abstained: bool = False
    abstain_reason: str | None = None
    # Why there was no answer, as a stable code for reports: no_source | weak_match |
    # not_in_sources | failed_closed | failed_check | error
    abstain_code: str | None = None
    warnings: list[AnswerWarning] = field(default_factory=list)
    degraded: bool = False
    dates: dict[str, str | None] = field(default_factory=dict)
    versions_applied: list[dict] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)
    context_ids: list[str] = field(default_factory=list)
    model: str = ""
    extractive: bool = False
    trace_id: uuid.UUID | None = None
    error: str | None = None
    prompts: list[str] = field(default_factory=list)  # in-process only (leak checks); never stored

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "answerable": self.answerable,
            "claims": [c.model_dump() for c in self.claims],
            "citations": [c.model_dump(exclude={"text"}) for c in self.citations],
            "refused": self.refused,
            "refusal_reason": self.refusal_message if self.refused else None,
            "refusal_code": self.refusal_reason,
            "abstained": self.abstained,
            "abstain_reason": self.abstain_reason,
            "abstain_code": self.abstain_code,
            "warnings": [w.model_dump() for w in self.warnings],
            "degraded": self.degraded,
            "dates": self.dates,
            "versions_applied": self.versions_applied,
            "conflicts": self.conflicts,
            "user": self.user_name,
            "role": self.role,
            "model": self.model,
            "trace_id": str(self.trace_id) if self.trace_id else None,
            "error": self.error,
        }

    def render_text(self) -> str:
        if self.refused:
            return f"REFUSED: {self.refusal_message}"
        if self.abstained or self.error:
            return f"NO ANSWER: {self.abstain_reason or self.error}"
        lines = [self.answer, ""]
        for c in self.citations:
            window = Window.cited(c.effective_from, c.effective_to).format("ascii")
            lines.append(f"  [{c.chunk_id}] {c.title} - {c.section} - version {c.version} - {window}")
        lines += [f"  ! {w.kind}: {w.message}" for w in self.warnings]
        return "\n".join(lines)


class AskError(Exception):
    """A request that can't proceed: unknown user, bad date. Traced where a user is known."""


def date_notes(dates: dict[str, date | str | None]) -> list[str]:
    """The context notes that tell the model which dates versions were resolved for."""
    return [f"The staff member entered a {basis_label(b)} of {d}; versions were resolved for it."
            for b, d in dates.items() if d]


class AskPipeline:
    def __init__(self, db, settings, embed_model, llm, *, today: date | None = None) -> None:
        self.db = db
        self.settings = settings
        self.embed_model = embed_model
        self.llm = llm
        self._fixed_today = today  # tests and evals pin "today"; a server reads the clock per request
        self.store = chunk_vector_store(db)
        self.lookup = VersionLookup(db)
        self.synthesizer = CitedAnswerSynthesizer(llm=llm)
        self.extractive = getattr(llm, "metadata", None) is not None and "extractive" in llm.metadata.model_name
        install_trace_collector()

    @property
    def today(self) -> date:
        # Read per request: a server started yesterday must resolve versions for today's date.
        return self._fixed_today or self.settings.today()

    # -- step 1 -----------------------------------------------------------------------------
    def _resolve_role(self, req: AskRequest) -> tuple[str, Clearance]:
        with Session(self.db.app) as session:
            user = session.scalar(select(User).where(User.name == req.user_name))
        if user is None or user.disabled_at is not None:  # a disabled user is treated as unknown
            raise AskError(f"unknown user {req.user_name!r}")
        role = req.as_role or user.role
        try:
            return role, clearance_for(role)
        except UnknownRoleError as exc:
            raise AskError(str(exc)) from None

    def _parse_dates(self, req: AskRequest) -> dict[str, date]:
        unknown = set(req.dates) - set(BASIS_KEYS)
        if unknown:
            raise DateInputError(f"unknown date field(s): {', '.join(sorted(unknown))}")
        dates = {b: parse_input_date(req.dates.get(b), basis_label(b)) for b in BASIS_KEYS}
        check_date_order(dates["date_of_service"], dates["denial_notice_date"])
        return {b: d for b, d in dates.items() if d is not None}

    # -- the whole request --------------------------------------------------------------------
    def ask(self, req: AskRequest) -> AskResult:
        draft = TraceDraft()
        result = AskResult(question=req.question, user_name=req.user_name, role=None, trace_id=draft.id)
        clearance: Clearance | None = None
        with active_trace(draft):
            try:
                with draft.stage("resolve_role"):
                    result.role, clearance = self._resolve_role(req)
                if req.rejected:
                    raise AskError(req.rejected)
                dates = self._parse_dates(req)
                result.dates = {b: (dates[b].isoformat() if b in dates else None) for b in BASIS_KEYS}
                self._run(req, result, clearance, dates, draft)
            except (AskError, DateInputError) as exc:
                result.error = str(exc)
                result.abstain_reason = str(exc)
            except Exception as exc:  # fail closed: no half answer, and the trace still lands
                log.exception("ask failed, trace %s", draft.id)
                metrics.FAIL_CLOSED.inc()
                result.error = f"PolicyDesk could not answer: {exc.__class__.__name__}. Nothing was stated; try again."
                result.abstained = True
                result.abstain_reason = result.error
                result.abstain_code = "error"
                result.answer, result.claims, result.citations = "", [], []
            result.prompts = list(draft.prompts)
            self._record(req, result, clearance, draft)
        return result

    def _run(self, req: AskRequest, result: AskResult, clearance: Clearance, dates: dict[str, date], draft: TraceDraft) -> None:
        # -- step 2: refuse early, before retrieval, with no model call ---------------------
        with draft.stage("refusal_gate"):
            refusal = screen_question(req.question, clearance, max_chars=self.settings.MAX_QUESTION_CHARS)
        if refusal is not None:
            self._refuse(result, refusal.reason.value, refusal.message)
            return

        # -- steps 3-4: filter inside SQL, retrieve and rank ---------------------------------
        retriever = HybridRetriever(self.store, self.embed_model, clearance=clearance, top_k=self.settings.TOP_K)
        with draft.stage("retrieval"):
            retrieved = retriever.search(req.question)
        result.degraded = retrieved.degraded
        if retrieved.degraded:
            metrics.DEGRADED_ANSWERS.inc()
            log.warning("retrieval degraded to full text, trace %s: %s", draft.id, retrieved.degraded_reason)
            result.warnings.append(AnswerWarning(kind="degraded", message=(
                "Retrieval ran degraded: the embedding service failed, so only keyword search was used. "
                "Check the answer against the cited text.")))

        # -- step 5: resolve versions, flag conflicts ----------------------------------------
        resolver = VersionResolver(lookup=self.lookup, clearance=clearance, dates=dates, today=self.today, recent_change_days=self.settings.RECENT_CHANGE_DAYS)
        flagger = ConflictFlagger()
        try:
            with draft.stage("version_resolution"):
                nodes = resolver.postprocess_nodes(retrieved.nodes)
                nodes = flagger.postprocess_nodes(nodes)
        except NoVersionInForce as exc:
            self._refuse(result, "no_version_in_force", str(exc))
            return
        result.versions_applied = resolver.report.applied
        result.warnings += resolver.report.warnings + flagger.warnings
        result.conflicts = flagger.conflicts
        result.context_ids = [n.node.node_id for n in nodes]

        if is_what_changed_question(req.question):
            if self._answer_what_changed(result, clearance, nodes, dates, draft):
                return

        # -- step 6: generate or abstain -----------------------------------------------------
        if not nodes:
            self._abstain(result, "No source you are cleared to see answers this question.", "no_source")
            return
        best = retrieved.best_similarity
        if best is not None and best < self.settings.ABSTAIN_MIN_SIMILARITY:
            self._abstain(result, f"The closest source matched too weakly (similarity {best:.2f}) to answer from.",
                          "weak_match")
            return
        notes = self._notes(dates, resolver, flagger)
        with draft.stage("synthesis"):
            outcome = self.synthesizer.synthesize(req.question, nodes, notes)
        result.model = outcome.model
        draft.row["attempts"] = outcome.attempts
        draft.tokens_in = max(draft.tokens_in, outcome.tokens_in)
        draft.tokens_out = max(draft.tokens_out, outcome.tokens_out)
        if outcome.answer is None:
            if outcome.failed_closed:
                metrics.FAIL_CLOSED.inc()
                log.warning("answer failed closed after %d attempt(s), trace %s: %s", len(outcome.attempts),
                            draft.id, outcome.abstain_reason)
            self._abstain(result, outcome.abstain_reason or "The sources do not contain the answer.",
                          "failed_closed" if outcome.failed_closed else "not_in_sources")
            return
        verdict = check_draft(outcome.answer, result.context_ids)
        action = combine("allow", verdict.action)
        if action == "refuse":
            self._refuse(result, "postflight", "The drafted answer was withheld: " + "; ".join(verdict.reasons))
            return
        if action == "abstain":
            self._abstain(result, "The drafted answer failed the post-generation check: " + "; ".join(verdict.reasons),
                          "failed_check")
            return
        by_id = {n.node.node_id: n for n in nodes}
        result.answer = outcome.answer.answer
        result.claims = outcome.answer.claims
        result.answerable = True
        cited = list(dict.fromkeys(cid for c in outcome.answer.claims for cid in c.citations))
        result.citations = [self._citation(by_id[cid]) for cid in cited]
        if self.extractive:
            result.extractive = True
            result.warnings.append(AnswerWarning(kind="extractive", message=EXTRACTIVE_NOTE))
        result.warnings += self._staleness_warnings(result.citations, clearance)

    def _answer_what_changed(self, result, clearance, nodes, dates, draft) -> bool:
        policy_ids = list(dict.fromkeys(n.node.metadata.get("doc_id") or n.node.ref_doc_id
                                        for n in nodes if n.node.metadata.get("source_type") == "policy"))
        # "between 2025-06-01 and 2026-06-01" in the question picks the two versions to compare.
        found = [date.fromisoformat(d) for d in re.findall(r"\b(\d{4}-\d{2}-\d{2})\b", result.question)[:2]]
        between = (found[0], found[1]) if len(found) == 2 else (None, None)
        for doc_id in policy_ids:
            with draft.stage("what_changed"):
                try:
                    comparison = compare_versions(self.lookup, doc_id, clearance, between, today=self.today)
                except NoVisibleVersion:
                    continue
            if comparison.old is None:
                continue
            text, cited_nodes = render_comparison(comparison)
            result.answer = text
            result.answerable = True
            result.citations = [self._citation_from_node(n) for n in cited_nodes]
            result.claims = [Claim(text=text, citations=[c.chunk_id for c in result.citations])]
            result.context_ids = [c.chunk_id for c in result.citations]
            result.model = "computed-comparison"
            result.warnings = [w for w in result.warnings if w.kind not in ("recent_change", "scheduled_change")]
            return True
        return False

    def _notes(self, dates, resolver, flagger) -> list[str]:
        return date_notes({b: d.isoformat() for b, d in dates.items()}) + [w.message for w in flagger.warnings]

    def _citation(self, scored) -> Citation:
        return self._citation_from_node(scored.node)

    def _citation_from_node(self, node) -> Citation:
        # Text and section come from the database row the node was read from, never from the model.
        m = node.metadata
        return Citation(
            chunk_id=node.node_id, doc_id=m.get("doc_id") or node.ref_doc_id, title=m["title"], section=m["section"],
            source_type=m["source_type"], version=int(m["version"]), effective_from=m["effective_from"],
            effective_to=Window.stored(m["effective_from"], m.get("effective_to")).iso()[1],
            text_sha256=m["text_sha256"], text=node.get_content(),
        )

    def _staleness_warnings(self, citations: list[Citation], clearance: Clearance) -> list[AnswerWarning]:
        keys = {(c.doc_id, c.version) for c in citations}
        if not keys:
            return []
        with scoped_session(self.db.app, clearance) as session:
            stale = sources.changed_on_disk(session, keys=keys, clearance=clearance)
        if stale:
            log.warning("answer cites source(s) changed since ingest: %s",
                        ", ".join(f"{s['doc_id']} v{s['version']}" for s in stale))
        return [AnswerWarning(kind="stale_source", message=(
                    f"{s['title']} version {s['version']} changed on disk since it was indexed; "
                    "the cited text may be out of date."))
                for s in stale]

    def _refuse(self, result: AskResult, code: str, message: str) -> None:
        result.refused = True
        result.refusal_reason = code
        result.refusal_message = message
        result.answer, result.claims, result.citations = "", [], []
        metrics.REFUSALS.labels(reason=code).inc()
        log.info("refused (%s), trace %s", code, result.trace_id)

    def _abstain(self, result: AskResult, reason: str, code: str) -> None:
        result.abstained = True
        result.abstain_reason = reason
        result.abstain_code = code
        result.answer, result.claims, result.citations = "", [], []

    # -- step 7: trace ----------------------------------------------------------------------
    def _record(self, req: AskRequest, result: AskResult, clearance: Clearance | None, draft: TraceDraft) -> None:
        row = dict(
            id=draft.id, kind=req.kind, replay_of=req.replay_of, user_name=req.user_name[:64],
            user_role=result.role or "unknown", permitted_levels=list(clearance.levels) if clearance else [],
            sensitive_cleared=bool(clearance and clearance.sensitive), question=req.question,
            dates=result.dates, versions_applied=result.versions_applied, chunk_ids=result.context_ids,
            answer=result.to_json(), answer_text=result.answer,
            citations=[c.model_dump() for c in result.citations],
            warnings=[w.model_dump() for w in result.warnings], refused=result.refused,
            refusal_reason=result.refusal_message, abstained=result.abstained, degraded=result.degraded,
            status="failed" if result.error else "ok", error=result.error, attempts=draft.row.get("attempts", []),
            stage_ms=draft.stage_ms, latency_ms=draft.elapsed_ms(), model=result.model,
            tokens_in=draft.tokens_in, tokens_out=draft.tokens_out,
            cost_usd=self._cost(draft.tokens_in, draft.tokens_out, result.model),
        )
        with draft.stage("trace_write"):
            try:
                write_trace(self.db, row)
            except Exception:
                log.exception("trace write failed")
                result.trace_id = None
                raise
        log.info("trace %s kind=%s user=%s role=%s status=%s refused=%s abstained=%s degraded=%s",
                 draft.id, req.kind, row["user_name"], row["user_role"], row["status"], result.refused,
                 result.abstained, result.degraded)

    def _cost(self, tokens_in: int, tokens_out: int, model: str) -> float:
        if not model.startswith("gemini"):
            return 0.0
        s = self.settings
        return round(tokens_in / 1e6 * s.PRICE_INPUT_PER_MTOK + tokens_out / 1e6 * s.PRICE_OUTPUT_PER_MTOK, 8)


def build_pipeline(db, settings, *, embed_model=None, llm=None, today: date | None = None) -> AskPipeline:
    from policydesk.providers import embedding_for, llm_for

    return AskPipeline(db, settings, embed_model or embedding_for(settings), llm or llm_for(settings), today=today)
