"""The ask pipeline: the seven steps of docs/design.md, in order, in one place.

CLI, web, disputes replay and the eval harness all call `AskPipeline.ask`; nothing is
re-implemented elsewhere. The order is the design: nothing the caller is not cleared for is
ever ranked, reasoned over, or generated from.
"""

from __future__ import annotations

import dataclasses
import logging
from datetime import date

from llama_index.core.schema import QueryBundle
from sqlalchemy.orm import Session

from policydesk.ops import metrics
from policydesk.accounts.access import Clearance, UnknownRoleError, clearance_for
from policydesk.contract.answer import AnswerWarning, AskRequest, AskResult, Claim
from policydesk.contract.answer import Abstained, Answered, Compared, Failed, Outcome, Refused
from policydesk.proof.citations import citation_from_node
from policydesk.versions.dates import DateInputError, iso_dates_in
from policydesk.extensions.registry import Extensions
from policydesk.extensions.stack import RequestStack
from policydesk.ingest.readers.ocr import ocr_text_warnings
from policydesk.ingest.staleness import stale_source_warnings
from policydesk.proof.instrumentation import install_instrumentation
from policydesk.reading.question_dates import applied_dates
from policydesk.postprocessors import ConflictFlagger, VersionResolver
from policydesk.products import (
    UnknownLineOfBusiness,
    checked_product,
    cited_product_warning,
    variants_in_context,
)
from policydesk.screening.refusal import INTENT_DEGRADED_NOTE, REDACTION_NOTE, RefusalGate, Screening, gate_for
from policydesk.reading.language import names_a_note, names_source_in_context
from policydesk.providers.kinds import is_priced
from policydesk.providers.passages import PassageReader, reader_draft
from policydesk.providers.screening_models import screening_models
from policydesk.retrievers import chunk_vector_store
from policydesk.storage.guard_read import CallerChunks
from policydesk.synthesis.grounding import check
from policydesk.synthesis.postflight import check_draft, combine
from policydesk.synthesis.prompt import date_notes, product_notes
from policydesk.synthesis.synthesizer import CitedAnswerSynthesizer
from policydesk.screening.vocabulary import unknown_terms
from policydesk.ops.logs import bind_trace_id
from policydesk.ops.telemetry import Telemetry, telemetry_for
from policydesk.contract.steps import NOT_ANSWERED, Context, Retrieved, Steps
from policydesk.proof.tracing import TraceDraft, trace_row, write_trace
from policydesk.accounts.users import get_active_user
from policydesk.versions import (
    NoVersionInForce,
    NoVisibleVersion,
    VersionLookup,
    compare_versions,
    entered_dates,
    render_comparison,
)
from policydesk.screening.whatchanged import WhatChangedDetector, policy_to_compare

__all__ = ["AskPipeline", "AskError", "AskRequest", "AskResult", "build_pipeline"]

log = logging.getLogger(__name__)

POLICY_TEXT_NOTE = ("No model is configured: this is the policy text in force, with the sentence most likely to "
                    "answer marked. It is not a written answer; read the passage.")
NOT_ANSWERED_MESSAGE = (
    "The sources you may read don't say this: \u201c{question}\u201d. Nothing was stated; "
    "ask your supervisor or the policy's owner."
)


class AskError(Exception):
    """A request that can't proceed: unknown user, rejected input. Traced where a user is known."""

    def __init__(self, message: str, code: str = "unknown_user") -> None:
        super().__init__(message)
        self.code = code


class AskPipeline:
    def __init__(self, db, settings, embed_model, llm, *, today: date | None = None,
                 gate: RefusalGate | None = None, what_changed: WhatChangedDetector | None = None,
                 telemetry: Telemetry | None = None) -> None:
        """`llm`: the model that writes answers (any LlamaIndex LLM), or None to show the policy
        text in force (the offline reader). `telemetry`: where the request's spans go (default: nowhere)."""
        self.db = db
        self.settings = settings
        settings.abstain_threshold()  # refuse to start (UncalibratedThreshold) if the embedding model has none
        self.embed_model = embed_model
        self.llm = llm
        self._fixed_today = today  # tests and evals pin "today"; a server reads the clock per request
        # Retrieval and version reads: the read replica when one is configured (Database.reads).
        self.store = chunk_vector_store(db.reads)
        self.lookup = VersionLookup(db.reads)
        self.synthesizer = CitedAnswerSynthesizer(llm=llm) if llm is not None else None
        self.reader = PassageReader(embed_model) if llm is None else None
        local = screening_models(settings) if gate is None or what_changed is None else None
        self.gate = gate or gate_for(db.reads, settings, embed_model, intent=local.intent, local_model=local.model)
        self.what_changed = what_changed or local.what_changed
        self.extractive = llm is None  # no model: the policy text is shown, not a written answer
        self.extensions = Extensions.from_settings(settings)  # imported now: a bad factory stops start-up
        install_instrumentation()
        self.telemetry = telemetry or Telemetry.disabled()

    @property
    def today(self) -> date:
        # Read per request: a server started yesterday must resolve versions for today's date.
        return self._fixed_today or self.settings.today()

    # -- the whole request --------------------------------------------------------------------
    def ask(self, req: AskRequest) -> AskResult:
        limit = self.settings.MAX_QUESTION_CHARS
        if len(req.question or "") > limit:  # every entry point, the Python ones too: nothing of it is read
            req = dataclasses.replace(req, question="", rejected=f"the question is longer than {limit} characters")
        draft = TraceDraft()
        bind_trace_id(draft.id)  # this request's log lines name its trace
        steps = Steps(question=req.question)
        with self.telemetry.request(draft.id, req.kind) as request:
            outcome = self._outcome(req, steps, draft)
            result = steps.result(req.user_name, outcome, draft.id, list(draft.prompts))
            request.answered(result)
            # -- step 7: trace, refusals and failures included ----------------------------------
            self._record(req, result, steps.clearance, draft)
        return result

    def _outcome(self, req: AskRequest, steps: Steps, draft: TraceDraft) -> Outcome:
        try:
            return self._run(req, steps, draft)
        except (AskError, DateInputError, UnknownLineOfBusiness) as exc:
            return Failed(exc.code, str(exc), field=getattr(exc, "field", None))  # each input error names its code
        except Exception as exc:  # fail closed: no half answer, and the trace still lands
            log.exception("ask failed, trace %s", draft.id, extra={"event": "fail_closed"})
            metrics.FAIL_CLOSED.inc()
            return Failed(Failed.INSIDE,
                          f"PolicyDesk could not answer: {exc.__class__.__name__}. Nothing was stated; try again.")

    def _run(self, req: AskRequest, steps: Steps, draft: TraceDraft) -> Outcome:
        """Steps 1-6 of docs/design.md in order: each returns its value, recorded in `steps`, and
        the step that decides returns the outcome; `ask` builds the result from both and traces it."""
        # -- step 1: resolve role; the request's dates and product ---------------------------
        with self.telemetry.step("resolve_role"):
            with draft.stage("resolve_role"):
                steps.role, clearance = self._resolve_role(req)
            steps.clearance = clearance
            if req.rejected:
                raise AskError(req.rejected, "rejected")
            steps.dates = entered_dates(req.dates)
            # The product travels inside the clearance into every scoped read.
            steps.line_of_business = checked_product(self.db, clearance, req.line_of_business)
            steps.clearance = clearance = clearance.for_product(steps.line_of_business)

        # -- step 2: refuse early, before retrieval, with no model call ---------------------
        with self.telemetry.step("refuse_early") as step:
            with draft.stage("refusal_gate"):
                screening = self.gate.screen(req.question, clearance)
            # From here on only the redacted question is read: retrieval, the model, the trace.
            question = steps.question = screening.question
            steps.redactions = list(screening.redaction.kinds)
            if screening.redaction.changed:
                steps.warnings.append(AnswerWarning(kind="redacted", message=REDACTION_NOTE))
            if screening.degraded_reason is not None:  # this request only: the next one tries the classifier
                metrics.INTENT_CLASSIFIER_FAILURES.inc()
                steps.screening_degraded = True
                steps.warnings.append(AnswerWarning(kind="degraded", message=INTENT_DEGRADED_NOTE))
            if screening.refusal is not None:
                return step.decided(self._refused(screening.refusal.reason.value, screening.refusal.message))
            steps.dates, date_warnings = applied_dates(question, steps.dates, self.today)
            steps.warnings += date_warnings

        # -- steps 3-4: filter inside SQL, retrieve and rank ---------------------------------
        with self.telemetry.step("filter") as step:  # the clearance every read of this request carries
            stack = RequestStack(self.extensions, db=self.db.reads, store=self.store, embed_model=self.embed_model,
                                 settings=self.settings, clearance=step.record(clearance), dates=steps.dates,
                                 today=self.today, trace_id=draft.id)
            draft.stack = stack  # what it records goes in the trace, even if a later step fails
        with self.telemetry.step("retrieve") as step, draft.stage("retrieval"):
            steps.retrieved = retrieved = step.record(self._retrieve(stack, question, draft))
        draft.retrieved_ids = retrieved.retrieved_ids
        steps.warnings += retrieved.warnings

        # -- step 5: resolve versions, flag conflicts ----------------------------------------
        with self.telemetry.step("resolve_versions") as step:
            steps.context = context = step.record(
                self._resolve_versions(stack, retrieved, clearance, steps.dates, draft))
            steps.warnings += context.report.warnings
            held = context.report.held_back  # the top-ranked policy had no version in force on its date
            if held is not None and (not context.nodes or names_source_in_context(question, held.title, context.nodes)):
                return step.decided(self._refused("no_version_in_force", str(held)))  # it is about that policy

        # -- step 6: generate or abstain -----------------------------------------------------
        with self.telemetry.step("generate") as step:
            return step.decided(self._generate(steps, screening, clearance, draft))

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
            raise AskError(str(exc), "unknown_role") from None

    # -- steps 3-4 --------------------------------------------------------------------------
    def _retrieve(self, stack: RequestStack, question: str, draft: TraceDraft) -> Retrieved:
        # The result says whether retrieval ran degraded and how near the best source is. Extension
        # retrievers join the same fusion; the clearance guard re-checks every node it returns.
        retrieved = stack.retrieve(QueryBundle(question))
        if not retrieved.degraded:
            return Retrieved(retrieved.nodes, best_similarity=retrieved.best_similarity,
                             retrieved_ids=retrieved.retrieved_ids, query_vectors=retrieved.query_vectors)
        metrics.DEGRADED_ANSWERS.inc()
        log.warning("retrieval degraded to full text, trace %s: %s", draft.id, retrieved.degraded_reason,
                    extra={"event": "degraded"})
        return Retrieved(retrieved.nodes, degraded=True, best_similarity=retrieved.best_similarity,
                         retrieved_ids=retrieved.retrieved_ids, warnings=[
            AnswerWarning(kind="degraded", message=("Retrieval ran degraded: the embedding service failed, so only "
                                                    "keyword search was used. Check the answer against the cited text."))])

    # -- step 5 -----------------------------------------------------------------------------
    def _resolve_versions(self, stack: RequestStack, retrieved: Retrieved, clearance: Clearance,
                          dates: dict[str, date], draft: TraceDraft) -> Context:
        resolver = VersionResolver(lookup=self.lookup, clearance=clearance, dates=dates, today=self.today,
                                   recent_change_days=self.settings.RECENT_CHANGE_DAYS)
        with draft.stage("version_resolution"):
            resolved = resolver.resolve(retrieved.nodes)
            flagged = ConflictFlagger().flag(resolved.nodes)
        report = resolved.report.joined(flagged.report)
        # Extension postprocessors run last, and the guard once more before the prompt.
        nodes = stack.finish(flagged.nodes)
        return Context(nodes, report)

    # -- step 6 -----------------------------------------------------------------------------
    def _generate(self, steps: Steps, screening: Screening, clearance: Clearance, draft: TraceDraft) -> Outcome:
        question, nodes, report = steps.question, steps.context.nodes, steps.context.report
        held, product = report.held_back, steps.line_of_business
        if not nodes:
            return self._not_answered(question, "no source the caller may read was retrieved")
        variants = variants_in_context(nodes) if product is None else None
        if variants is not None:  # the rule has product editions and none was chosen: ask, never pick
            warning = variants.warning()
            return Abstained("line_of_business", warning.message, warnings=[warning])
        best = steps.retrieved.best_similarity
        if best is not None and best < self.settings.abstain_threshold():  # the active embedding model's
            return self._not_answered(question, f"the closest source matched too weakly (similarity {best:.2f})")
        # "What changed?" only behind the relevance check: a weak match abstained above. A question
        # naming a bulletin or page ("did bulletin HB-2026-02 change ...") is answered from what it
        # says, not by comparing some policy's versions.
        if self.what_changed.is_what_changed(question) and not names_a_note(question, nodes):
            return self._answer_what_changed(question, clearance, nodes, best, draft)
        chunks = CallerChunks(self.db.reads.app, clearance)
        if self.llm is None:
            with draft.stage("synthesis"):  # what the model step is timed as, so dashboards compare
                read = self._read_passages(question, nodes, chunks, held, steps.retrieved.query_vectors)
            if not isinstance(read, tuple):
                return read
            answer, context, passages = read
        else:
            notes = date_notes({b: d.isoformat() for b, d in steps.dates.items()}) + [
                w.message for w in report.conflict_warnings] + product_notes(product)
            with draft.stage("synthesis"):
                synthesis = self.synthesizer.synthesize_outcome(question, nodes, notes, chunks=chunks)
            steps.model = synthesis.model
            draft.prompts, draft.llm_calls = synthesis.prompts, len(synthesis.prompts)
            draft.attempts = synthesis.attempts
            draft.tokens_in, draft.tokens_out = synthesis.tokens_in, synthesis.tokens_out
            if synthesis.dropped:
                log.warning("synthesis dropped %d node(s) the caller may not read, trace %s", len(synthesis.dropped),
                            draft.id, extra={"event": "leak_attempt"})
            if synthesis.answer is None and synthesis.failed_closed:
                metrics.FAIL_CLOSED.inc()
                log.warning("answer failed closed after %d attempt(s), trace %s: %s", len(synthesis.attempts),
                            draft.id, synthesis.abstain_reason, extra={"event": "fail_closed"})
                return Abstained("failed_closed", synthesis.abstain_reason or "No answer survived validation.")
            if synthesis.answer is None:
                return self._withhold(question, held, synthesis.abstain_reason or "the model found no answer")
            answer, context, passages = synthesis.answer, synthesis.context, []
        if screening.topic_gated:  # after the same steps as any question, so it reads like one not covered
            return self._withhold(question, held, "topic above the caller's clearance")
        verdict = check_draft(answer, [n.node.get_content() for n in context])
        action = combine("allow", verdict.action)
        if action == "refuse":
            return self._refused("postflight", "The drafted answer was withheld: " + "; ".join(verdict.reasons))
        if action == "abstain":
            return Abstained("failed_check", "The drafted answer failed the post-generation check: "
                             + "; ".join(verdict.reasons))
        by_id = {n.node.node_id: n for n in context}
        claims = answer.contract_claims()
        cited = list(dict.fromkeys(cid for c in claims for cid in c.citations))
        citations = [citation_from_node(by_id[cid].node) for cid in cited]
        warnings = [AnswerWarning(kind="policy_text", message=POLICY_TEXT_NOTE)] if self.extractive else []
        warnings += stale_source_warnings(self.db, citations, clearance)
        if product is None and (warning := cited_product_warning(citations)):
            warnings.append(warning)
        warnings += ocr_text_warnings([(c.doc_id, c.section, by_id[c.chunk_id].node.metadata) for c in citations])
        return Answered(answer.answer, claims, citations, extractive=self.extractive, warnings=warnings,
                        passages=passages, condition=answer.condition if answer.answers == "conditional" else None)

    def _read_passages(self, question: str, nodes, chunks: CallerChunks, held, query_vectors) -> Outcome | tuple:
        """No model: the passages in force, their likely sentences marked, as a draft that passes
        the same checks as a model's. Declines only when the question names what no readable
        source mentions. `query_vectors`: retrieval's, so the question is embedded once."""
        vocabulary = self._vocabulary(chunks.clearance)
        if vocabulary is not None and (unknown := unknown_terms(question, vocabulary)):
            return self._withhold(question, held, f"the sources never mention: {', '.join(unknown)}")
        context, _ = chunks.reread(nodes)
        passages = self.reader.read(question, context, query_vectors)
        if not passages:
            return self._withhold(question, held, "no sentence in the sources in context")
        answer = reader_draft(passages)
        problem = check(answer, {n.node.node_id: n.node for n in context})
        if problem is not None:  # the reader quotes stored text: this would be a defect, so fail closed
            raise RuntimeError(f"the passage reader's draft failed its checks: {problem.summary}")
        return answer, context, passages

    def _answer_what_changed(self, question: str, clearance: Clearance, nodes, best_similarity,
                             draft: TraceDraft) -> Outcome:
        doc_id = policy_to_compare(question, nodes, best_similarity, self.settings.WHAT_CHANGED_MIN_SIMILARITY)
        if doc_id is None:
            return Abstained("nothing_to_compare", "This asks what changed, but no policy you are cleared to see "
                             "clearly matches it; name the policy.")
        # "between 2025-06-01 and 2026-06-01" in the question picks the two versions to compare.
        found = iso_dates_in(question)
        between = (found[0], found[1]) if len(found) == 2 else (None, None)
        with draft.stage("what_changed"):
            try:
                comparison = compare_versions(self.lookup, doc_id, clearance, between, today=self.today)
            except NoVisibleVersion:
                return Abstained("nothing_to_compare", "No version you are cleared to see can be compared.")
            except NoVersionInForce as exc:
                return self._refused("no_version_in_force", str(exc))
        text, cited_nodes = render_comparison(comparison)
        if comparison.old is None:  # one version, or both dates under the same one: nothing changed
            return Abstained("nothing_to_compare", text)
        citations = [citation_from_node(n) for n in cited_nodes]
        return Compared(text, [Claim(text=text, citations=[c.chunk_id for c in citations])], citations)

    def _refused(self, code: str, message: str) -> Refused:
        metrics.REFUSALS.labels(reason=code).inc()
        log.info("refused (%s)", code, extra={"event": "refused", "reason": code})  # the line carries its trace id
        return Refused(code, message)

    def _not_answered(self, question: str, why: str) -> Abstained:
        """The sources the caller may read don't answer: one message and code, whatever the cause,
        so an unanswerable question and one about a subject above the caller's clearance read alike."""
        log.info("not answered: %s", why)  # the line carries its trace id (ops/logs.bind_trace_id)
        return Abstained(NOT_ANSWERED, NOT_ANSWERED_MESSAGE.format(question=question.strip()))

    def _withhold(self, question: str, held, why: str) -> Outcome:
        """No answer from what is in force: refused for the not-in-force policy the question
        reached first, when there is one; otherwise not answered."""
        if held is not None:
            return self._refused("no_version_in_force", str(held))
        return self._not_answered(question, why)

    def _vocabulary(self, clearance: Clearance):
        topics = self.gate.topics
        return topics.vocabulary(clearance) if topics is not None and hasattr(topics, "vocabulary") else None

    # -- step 7: trace ----------------------------------------------------------------------
    def _record(self, req: AskRequest, result: AskResult, clearance: Clearance | None, draft: TraceDraft) -> None:
        row = trace_row(req, result, clearance, draft, self.settings, priced=is_priced(self.llm))
        with self.telemetry.step("trace"), draft.stage("trace_write"):
            try:
                write_trace(self.db, row)
            except Exception:
                log.exception("trace write failed")
                raise
        metrics.observe_stages(draft.stages())  # the trace write included
        log.info("trace %s kind=%s user=%s role=%s status=%s refused=%s abstained=%s degraded=%s",
                 draft.id, req.kind, row["user_name"], row["user_role"], row["status"], result.refused,
                 result.abstained, result.degraded)


def build_pipeline(db, settings, *, embed_model=None, llm=None, today: date | None = None,
                   gate: RefusalGate | None = None, telemetry: Telemetry | None = None) -> AskPipeline:
    """`llm`: None takes the configured model (`providers.llm_for`); with none configured the
    offline reader shows the policy text in force. `telemetry`: None exports as the settings say."""
    from policydesk.providers import embedding_for, llm_for

    embed_model = embed_model or embedding_for(settings)
    llm = llm if llm is not None else llm_for(settings)
    return AskPipeline(db, settings, embed_model, llm, today=today, gate=gate, telemetry=telemetry or telemetry_for(settings))
