"""The ask pipeline: the seven steps of docs/design.md, in order, in one place.

CLI, web, disputes replay and the eval harness all call `AskPipeline.ask`; nothing is
re-implemented elsewhere. The order is the design: nothing the caller is not cleared for is
ever ranked, reasoned over, or generated from.
"""

from __future__ import annotations

import logging
from datetime import date

from llama_index.core.schema import QueryBundle
from sqlalchemy.orm import Session

from policydesk import metrics
from policydesk.access import Clearance, UnknownRoleError, clearance_for
from policydesk.answer import AnswerWarning, AskRequest, AskResult, Claim
from policydesk.citing import citation_from_node
from policydesk.dates import DateInputError, check_date_order, iso_dates_in
from policydesk.extensions.registry import Extensions
from policydesk.extensions.stack import RequestStack
from policydesk.ingest.staleness import stale_source_warnings
from policydesk.instrumentation import install_instrumentation
from policydesk.question_dates import QuestionDate, dates_by_basis, dates_in_question
from policydesk.postprocessors import ConflictFlagger, ContextReport, VersionResolver
from policydesk.products import (
    UnknownLineOfBusiness,
    checked_product,
    cited_product_warning,
    valid_products,
    variants_in_context,
)
from policydesk.refusal import INTENT_DEGRADED_NOTE, REDACTION_NOTE, RefusalGate, gate_for
from policydesk.providers.kinds import is_extractive, is_priced
from policydesk.providers.request_embedding import RequestEmbedding, request_vectors
from policydesk.retrievers import chunk_vector_store
from policydesk.answerability import names_source, program_names
from policydesk.synthesis.answered import NOT_ANSWERED_MESSAGE, check_answered
from policydesk.synthesis.postflight import check_draft, combine
from policydesk.synthesis.prompt import date_notes, program_notes
from policydesk.synthesis.synthesizer import CitedAnswerSynthesizer
from policydesk.logs import bind_trace_id
from policydesk.tracing import TraceDraft, active_trace, trace_row, write_trace
from policydesk.users import get_active_user
from policydesk.versions import (
    BASIS_KEYS,
    NoVersionInForce,
    NoVisibleVersion,
    VersionLookup,
    basis_label,
    compare_versions,
    entered_dates,
    render_comparison,
)
from policydesk.whatchanged import WhatChangedDetector, policy_to_compare, shared_detector

__all__ = ["AskPipeline", "AskError", "AskRequest", "AskResult", "build_pipeline"]

log = logging.getLogger(__name__)

EXTRACTIVE_NOTE = "Answered by the offline extractive answerer: quoted sentences from the cited sources, not a model."


def _quoted(d: QuestionDate) -> str:
    return f"\u201c{d.text}\u201d ({d.value.isoformat()})"


class AskError(Exception):
    """A request that can't proceed: unknown user, bad date. Traced where a user is known."""


class AskPipeline:
    def __init__(self, db, settings, embed_model, llm, *, today: date | None = None,
                 gate: RefusalGate | None = None, what_changed: WhatChangedDetector | None = None) -> None:
        self.db = db
        self.settings = settings
        settings.abstain_threshold()  # refuse to start (UncalibratedThreshold) if the embedding model has none
        self.embed_model = embed_model
        self.llm = llm
        self._fixed_today = today  # tests and evals pin "today"; a server reads the clock per request
        # Retrieval and version reads: the read replica when one is configured (Database.reads).
        self.store = chunk_vector_store(db.reads)
        self.lookup = VersionLookup(db.reads)
        self.synthesizer = CitedAnswerSynthesizer(llm=llm)
        # The gate fits its classifier on the model itself (a RequestEmbedding only adds per-request reuse).
        self.gate = gate or gate_for(
            db.reads, settings, embed_model.inner if isinstance(embed_model, RequestEmbedding) else embed_model)
        self.what_changed = what_changed or shared_detector()
        self.extractive = is_extractive(llm)
        self.extensions = Extensions.from_settings(settings)  # imported now: a bad factory stops start-up
        install_instrumentation()

    @property
    def today(self) -> date:
        # Read per request: a server started yesterday must resolve versions for today's date.
        return self._fixed_today or self.settings.today()

    # -- step 1 -----------------------------------------------------------------------------
    def _resolve_role(self, req: AskRequest) -> tuple[str, Clearance]:
        with Session(self.db.app) as session:
            user = get_active_user(session, name=req.user_name)
        if user is None:  # a disabled user is treated as unknown
            raise AskError(f"unknown user {req.user_name!r}")
        role = req.as_role or user.role
        try:
            return role, clearance_for(role)
        except UnknownRoleError as exc:
            raise AskError(str(exc)) from None

    def _question_dates(self, question: str, entered: dict[str, date], result: AskResult) -> dict[str, date]:
        """Entered dates win; with none entered, the dates written in the question apply, and say so."""
        found = dates_in_question(question, self.today)
        if not found or any(sum(d.basis == b for d in found) > 1 for b in BASIS_KEYS):
            return entered  # none, or a range ("between X and Y"), which only what-changed reads
        written = dates_by_basis(found)
        if entered:
            for d in written.values():
                if d.basis in entered and entered[d.basis] != d.value:
                    result.warnings.append(AnswerWarning(kind="date_in_question", message=(
                        f"The question mentions {_quoted(d)}, but the {basis_label(d.basis)} entered is "
                        f"{entered[d.basis].isoformat()}; versions were resolved for the entered date.")))
            return entered
        applied = {b: d.value for b, d in written.items()}
        try:
            check_date_order(applied.get("date_of_service"), applied.get("denial_notice_date"))
        except DateInputError as exc:
            result.warnings.append(AnswerWarning(kind="date_in_question", message=(
                f"The dates in the question were not used ({exc}); enter them in the date fields.")))
            return entered
        result.dates = {b: (applied[b].isoformat() if b in applied else None) for b in BASIS_KEYS}
        read = "; ".join(d.describe() for d in written.values())
        result.warnings.append(AnswerWarning(kind="date_from_question", message=(
            f"No date was entered, so PolicyDesk read {read} from the question and resolved versions for it. "
            "Enter the date in the date fields if that is not the date that applies.")))
        return applied

    # -- the whole request --------------------------------------------------------------------
    def ask(self, req: AskRequest) -> AskResult:
        draft = TraceDraft()
        bind_trace_id(draft.id)  # this request's log lines name its trace
        result = AskResult(question=req.question, user_name=req.user_name, role=None, trace_id=draft.id)
        with request_vectors():  # this request's query vectors (RequestEmbedding)
            self._ask(req, draft, result)
        return result

    def _ask(self, req: AskRequest, draft: TraceDraft, result: AskResult) -> None:
        clearance: Clearance | None = None
        with active_trace(draft):
            try:
                with draft.stage("resolve_role"):
                    result.role, clearance = self._resolve_role(req)
                if req.rejected:
                    raise AskError(req.rejected)
                dates = entered_dates(req.dates)
                result.dates = {b: (dates[b].isoformat() if b in dates else None) for b in BASIS_KEYS}
                # The product travels inside the clearance into every scoped read.
                result.line_of_business = checked_product(self.db, clearance, req.line_of_business)
                clearance = clearance.for_product(result.line_of_business)
                self._run(req, result, clearance, dates, draft)
            except (AskError, DateInputError, UnknownLineOfBusiness) as exc:
                result.error = str(exc)
                result.error_code, result.error_field = getattr(exc, "code", None), getattr(exc, "field", None)
                result.abstain_reason = str(exc)
            except Exception as exc:  # fail closed: no half answer, and the trace still lands
                log.exception("ask failed, trace %s", draft.id, extra={"event": "fail_closed"})
                metrics.FAIL_CLOSED.inc()
                result.error = f"PolicyDesk could not answer: {exc.__class__.__name__}. Nothing was stated; try again."
                result.abstain(result.error, "error")
            result.prompts = list(draft.prompts)
            self._record(req, result, clearance, draft)

    def _run(self, req: AskRequest, result: AskResult, clearance: Clearance, dates: dict[str, date], draft: TraceDraft) -> None:
        # -- step 2: refuse early, before retrieval, with no model call ---------------------
        with draft.stage("refusal_gate"):
            screening = self.gate.screen(req.question, clearance)
        # From here on only the redacted question is read: retrieval, the model, the trace.
        question = result.question = screening.question
        result.redactions = list(screening.redaction.kinds)
        if screening.redaction.changed:
            result.warnings.append(AnswerWarning(kind="redacted", message=REDACTION_NOTE))
        if screening.degraded_reason is not None:  # this request only: the next one tries the classifier
            result.degraded = True
            result.warnings.append(AnswerWarning(kind="degraded", message=INTENT_DEGRADED_NOTE))
        if screening.refusal is not None:
            self._refuse(result, screening.refusal.reason.value, screening.refusal.message)
            return
        dates = self._question_dates(question, dates, result)

        # -- steps 3-4: filter inside SQL, retrieve and rank ---------------------------------
        # The result says whether retrieval ran degraded and how near the best source is. Extension
        # retrievers join the same fusion; the clearance guard re-checks every node it returns.
        stack = RequestStack(self.extensions, db=self.db.reads, store=self.store, embed_model=self.embed_model,
                             settings=self.settings, clearance=clearance, dates=dates, today=self.today)
        retrieved = stack.retrieve(QueryBundle(question))
        if retrieved.degraded:
            result.degraded = True
            metrics.DEGRADED_ANSWERS.inc()
            log.warning("retrieval degraded to full text, trace %s: %s", draft.id, retrieved.degraded_reason,
                        extra={"event": "degraded"})
            result.warnings.append(AnswerWarning(kind="degraded", message=(
                "Retrieval ran degraded: the embedding service failed, so only keyword search was used. "
                "Check the answer against the cited text.")))

        # -- step 5: resolve versions, flag conflicts ----------------------------------------
        report = ContextReport()
        resolver = VersionResolver(lookup=self.lookup, clearance=clearance, dates=dates, today=self.today,
                                   recent_change_days=self.settings.RECENT_CHANGE_DAYS, report=report)
        flagger = ConflictFlagger(report=report)
        # Extension postprocessors run last, and the guard once more before the prompt.
        nodes = stack.finish(flagger.postprocess_nodes(resolver.postprocess_nodes(retrieved.nodes)))
        result.versions_applied = report.applied
        result.warnings += report.warnings
        result.conflicts = report.conflicts
        result.context_ids = [n.node.node_id for n in nodes]
        held = report.held_back  # the top-ranked policy had no version in force on its date
        if held is not None and (not nodes or names_source(question, held.title, _titles(nodes),
                                                            " ".join(n.node.get_content() for n in nodes))):
            self._refuse(result, "no_version_in_force", str(held))  # the question is about that policy
            return

        # -- step 6: generate or abstain -----------------------------------------------------
        if not nodes:
            self._not_answered(result, "no source the caller may read was retrieved")
            return
        variants = variants_in_context(nodes) if result.line_of_business is None else None
        if variants is not None:  # the rule has product editions and none was chosen: ask, never pick
            result.warnings.append(variants.warning())
            self._abstain(result, variants.warning().message, "line_of_business")
            return
        best = retrieved.best_similarity
        if best is not None and best < self.settings.abstain_threshold():  # the active embedding model's
            self._not_answered(result, f"the closest source matched too weakly (similarity {best:.2f})")
            return
        # "What changed?" only behind the relevance check: a weak match abstained above.
        # A question naming a bulletin or page ("did bulletin HB-2026-02 change ...") is answered
        # from what it says, not by comparing some policy's versions.
        if self.what_changed.is_what_changed(question) and not _names_a_note(question, nodes):
            self._answer_what_changed(result, clearance, nodes, best, draft)
            return
        vocabulary = self._vocabulary(clearance)
        products = valid_products(self.db, clearance)
        programs = program_names(vocabulary.labels, products) if vocabulary else dict.fromkeys(products, ())
        notes = date_notes({b: d.isoformat() for b, d in dates.items()}) + [
            w.message for w in report.conflict_warnings] + program_notes(programs, result.line_of_business)
        outcome = self.synthesizer.synthesize_outcome(question, nodes, notes)
        result.model = outcome.model
        draft.attempts = outcome.attempts
        draft.tokens_in, draft.tokens_out = outcome.tokens_in, outcome.tokens_out
        if outcome.answer is None:
            if outcome.failed_closed:
                metrics.FAIL_CLOSED.inc()
                log.warning("answer failed closed after %d attempt(s), trace %s: %s", len(outcome.attempts),
                            draft.id, outcome.abstain_reason, extra={"event": "fail_closed"})
                self._abstain(result, outcome.abstain_reason or "No answer survived validation.", "failed_closed")
            else:
                self._withhold(result, held, outcome.abstain_reason or "the answerer found no answer in the sources")
            return
        verdict = check_draft(outcome.answer, [n.node.get_content() for n in nodes])
        action = combine("allow", verdict.action)
        if action == "refuse":
            self._refuse(result, "postflight", "The drafted answer was withheld: " + "; ".join(verdict.reasons))
            return
        if action == "abstain":
            self._abstain(result, "The drafted answer failed the post-generation check: " + "; ".join(verdict.reasons),
                          "failed_check")
            return
        by_id = {n.node.node_id: n for n in nodes}
        answered = check_answered(question, outcome.answer, by_id, vocabulary=vocabulary,
                                  programs=programs, chosen_program=result.line_of_business,
                                  held_title=held.title if held is not None else None)
        if screening.topic_gated or not answered.answered:
            self._withhold(result, held, "topic above the caller's clearance" if screening.topic_gated
                           else "; ".join(answered.unmet))
            return
        result.answer = outcome.answer.answer
        result.claims = outcome.answer.claims
        result.answerable = True
        cited = list(dict.fromkeys(cid for c in outcome.answer.claims for cid in c.citations))
        result.citations = [citation_from_node(by_id[cid].node) for cid in cited]
        if self.extractive:
            result.extractive = True
            result.warnings.append(AnswerWarning(kind="extractive", message=EXTRACTIVE_NOTE))
        result.warnings += stale_source_warnings(self.db, result.citations, clearance)
        if result.line_of_business is None and (warning := cited_product_warning(result.citations)):
            result.warnings.append(warning)

    def _answer_what_changed(self, result, clearance, nodes, best_similarity, draft) -> None:
        doc_id = policy_to_compare(result.question, nodes, best_similarity,
                                   self.settings.WHAT_CHANGED_MIN_SIMILARITY)
        if doc_id is None:
            self._abstain(result, "This asks what changed, but no policy you are cleared to see clearly matches it; "
                          "name the policy.", "nothing_to_compare")
            return
        # "between 2025-06-01 and 2026-06-01" in the question picks the two versions to compare.
        found = iso_dates_in(result.question)
        between = (found[0], found[1]) if len(found) == 2 else (None, None)
        with draft.stage("what_changed"):
            try:
                comparison = compare_versions(self.lookup, doc_id, clearance, between, today=self.today)
            except NoVisibleVersion:
                self._abstain(result, "No version you are cleared to see can be compared.", "nothing_to_compare")
                return
            except NoVersionInForce as exc:
                self._refuse(result, "no_version_in_force", str(exc))
                return
        text, cited_nodes = render_comparison(comparison)
        if comparison.old is None:  # one version, or both dates under the same one: nothing changed
            self._abstain(result, text, "nothing_to_compare")
            return
        result.answer = text
        result.answerable = True
        result.citations = [citation_from_node(n) for n in cited_nodes]
        result.claims = [Claim(text=text, citations=[c.chunk_id for c in result.citations])]
        result.context_ids = [c.chunk_id for c in result.citations]
        result.model = "computed-comparison"
        result.warnings = [w for w in result.warnings if w.kind not in ("recent_change", "scheduled_change")]

    def _refuse(self, result: AskResult, code: str, message: str) -> None:
        result.refuse(code, message)
        metrics.REFUSALS.labels(reason=code).inc()
        log.info("refused (%s), trace %s", code, result.trace_id, extra={"event": "refused", "reason": code})

    def _abstain(self, result: AskResult, reason: str, code: str) -> None:
        result.abstain(reason, code)

    def _not_answered(self, result: AskResult, why: str) -> None:
        """The sources the caller may read don't answer: one message and code, whatever the cause,
        so an unanswerable question and one about a subject above the caller's clearance read alike."""
        log.info("not answered, trace %s: %s", result.trace_id, why)
        result.abstain(NOT_ANSWERED_MESSAGE.format(question=result.question.strip()), "not_answered")
        # Warnings about sources no answer rests on say nothing to the caller (and would tell apart
        # questions that differ only in what retrieval happened to read).
        result.warnings = [w for w in result.warnings if w.kind in REQUEST_WARNINGS]

    def _withhold(self, result: AskResult, held, why: str) -> None:
        """No answer from what is in force: refused for the not-in-force policy the question
        reached first, when there is one; otherwise not answered."""
        if held is not None:
            self._refuse(result, "no_version_in_force", str(held))
        else:
            self._not_answered(result, why)

    def _vocabulary(self, clearance: Clearance):
        topics = self.gate.topics
        return topics.vocabulary(clearance) if topics is not None and hasattr(topics, "vocabulary") else None

    # -- step 7: trace ----------------------------------------------------------------------
    def _record(self, req: AskRequest, result: AskResult, clearance: Clearance | None, draft: TraceDraft) -> None:
        row = trace_row(req, result, clearance, draft, self.settings, priced=is_priced(self.llm))
        with draft.stage("trace_write"):
            try:
                write_trace(self.db, row)
            except Exception:
                log.exception("trace write failed")
                result.trace_id = None
                raise
        metrics.observe_stages(draft.stage_ms)
        log.info("trace %s kind=%s user=%s role=%s status=%s refused=%s abstained=%s degraded=%s",
                 draft.id, req.kind, row["user_name"], row["user_role"], row["status"], result.refused,
                 result.abstained, result.degraded)


# Warnings about the request itself, kept when nothing is answered.
REQUEST_WARNINGS = frozenset({"redacted", "date_from_question", "date_in_question", "degraded"})


def _titles(nodes) -> list[str]:
    return list(dict.fromkeys(n.node.metadata.get("title") or "" for n in nodes))


def _names_a_note(question: str, nodes) -> bool:
    titles = _titles(nodes)
    return any(n.node.metadata.get("source_type") != "policy"
               and names_source(question, n.node.metadata.get("title") or "", [t for t in titles
                                                                               if t != n.node.metadata.get("title")])
               for n in nodes)


def build_pipeline(db, settings, *, embed_model=None, llm=None, today: date | None = None,
                   gate: RefusalGate | None = None) -> AskPipeline:
    from policydesk.providers import embedding_for, llm_for

    from policydesk.providers.local import local_embedding

    embed_model = embed_model or embedding_for(settings)
    if llm is None and not settings.GEMINI_API_KEY and embed_model is local_embedding(settings):
        # The offline answerer ranks sentences with the model retrieval used, through one
        # RequestEmbedding, so the question is embedded once per request, not twice.
        embed_model = RequestEmbedding(embed_model)
        llm = llm_for(settings, embed_model)
    return AskPipeline(db, settings, embed_model, llm or llm_for(settings), today=today, gate=gate)
