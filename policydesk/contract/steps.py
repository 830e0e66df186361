"""What the ask pipeline's steps returned, and the answer contract built once from them.

`AskPipeline._run` records each step's value here as the step returns it; a request that ends
early (refused, abstained, failed) leaves the later ones unset, and a failure inside a step
keeps what the steps before it established. `Steps.result` is the one place an `AskResult` is
built.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from policydesk.contract.answer import SOURCE_WARNINGS, AnswerWarning, AskResult
from policydesk.contract.answer import Abstained, Answered, Compared, Outcome
from policydesk.storage.chunk_ids import doc_id_of_chunk
from policydesk.versions.bases import BASIS_KEYS

if TYPE_CHECKING:
    from llama_index.core.schema import NodeWithScore

    from policydesk.contract.report import ContextReport
    from policydesk.storage.clearance import Clearance

NOT_ANSWERED = "not_answered"
# Warnings about the request itself, kept when nothing is answered: warnings about sources no
# answer rests on say nothing to the caller (and would tell apart questions that differ only in
# what retrieval happened to read).
REQUEST_WARNINGS = frozenset({"redacted", "date_from_question", "date_in_question", "degraded"})


@dataclass(frozen=True)
class Retrieved:
    """Steps 3-4: the ranked nodes, whether retrieval ran degraded, the best dense match, every
    chunk id a retriever returned (the trace's `retrieved_ids`, guard drops included), and the
    question parts' query vectors (step 6's offline reader ranks with them, not embedding again)."""

    nodes: list[NodeWithScore]
    degraded: bool = False
    best_similarity: float | None = None
    warnings: list[AnswerWarning] = field(default_factory=list)
    retrieved_ids: list[str] = field(default_factory=list)
    query_vectors: dict[str, list[float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Context:
    """Step 5: the nodes an answer may rest on, and how the versions and conflicts were resolved."""

    nodes: list[NodeWithScore]
    report: ContextReport

    @property
    def ids(self) -> list[str]:
        return [n.node.node_id for n in self.nodes]


@dataclass
class Steps:
    question: str  # as asked; once step 2 has screened it, the redacted text every later step reads
    role: str | None = None
    clearance: Clearance | None = None
    dates: dict[str, date] | None = None  # entered, or read from the question; None before they were parsed
    line_of_business: str | None = None
    redactions: list[str] = field(default_factory=list)
    warnings: list[AnswerWarning] = field(default_factory=list)  # each step's, in step order
    retrieved: Retrieved | None = None
    context: Context | None = None
    model: str = ""  # the answerer that ran (set once synthesis returned, answered or not)
    screening_degraded: bool = False  # the refusal gate screened this request with rules only

    def result(self, user_name: str, outcome: Outcome, trace_id: uuid.UUID, prompts: list[str]) -> AskResult:
        warnings = self.warnings + list(getattr(outcome, "warnings", []))
        context_ids, model = self.context.ids if self.context else [], self.model
        if isinstance(outcome, Abstained) and outcome.code == NOT_ANSWERED:
            warnings = [w for w in warnings if w.kind in REQUEST_WARNINGS]
        if isinstance(outcome, Compared):
            warnings = [w for w in warnings if w.kind not in Compared.restates]
            context_ids, model = [c.chunk_id for c in outcome.citations], Compared.model
        dates = {} if self.dates is None else {
            b: (self.dates[b].isoformat() if b in self.dates else None) for b in BASIS_KEYS}
        report = self.context.report if self.context else None
        applied, conflicts = (report.applied, report.conflicts) if report else ([], [])
        if isinstance(outcome, Answered):  # what the answer shows is about what it cites
            cited = {c.doc_id for c in outcome.citations}
            applied = [v for v in applied if v["doc_id"] in cited]
            conflicts = [c for c in conflicts
                         if c["policy_doc_id"] in cited or doc_id_of_chunk(c["note_chunk_id"]) in cited]
            warnings = [w for w in warnings if w.kind not in SOURCE_WARNINGS or not w.doc_ids
                        or cited & set(w.doc_ids)]
        return AskResult(
            question=self.question, user_name=user_name, role=self.role, outcome=outcome, warnings=warnings,
            redactions=list(self.redactions), degraded=self.screening_degraded or bool(self.retrieved and self.retrieved.degraded),
            dates=dates, line_of_business=self.line_of_business,
            versions_applied=applied, conflicts=conflicts,
            context_ids=context_ids, model=model, trace_id=trace_id, prompts=prompts)
