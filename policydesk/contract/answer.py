"""The answer contract: what is asked, and what PolicyDesk returns, shows and stores.

Imported by the pipeline, postprocessors, synthesis, web, CLI, disputes and evals; it imports
nothing from policydesk, so every layer can depend on it without depending on each other.
`AskResult.to_json` is the `ask --json` contract of docs/design.md.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field


WarningKind = Literal[
    "recent_change", "scheduled_change", "conflict", "degraded", "extractive",  # extractive: older traces only
    "stale_source", "version_swapped",
    "redacted", "date_from_question", "date_in_question", "not_in_force", "line_of_business", "policy_text",
    "ocr_text",  # a cited chunk was read by OCR from a scanned page (ingest/readers/ocr.py)
]
# Warnings that describe one source: an answer keeps them only for the sources it cites.
SOURCE_WARNINGS = frozenset({"recent_change", "scheduled_change", "conflict", "version_swapped"})


class AnswerWarning(BaseModel):
    kind: WarningKind
    message: str
    # The documents the warning is about (empty: about the request). Not part of the JSON: it
    # only decides which warnings an answer keeps (`SOURCE_WARNINGS`).
    doc_ids: list[str] = Field(default_factory=list, exclude=True)


class Quote(BaseModel):
    """The words of one cited chunk a claim rests on, as the chunk has them."""

    chunk_id: str
    text: str


class Claim(BaseModel):
    text: str = Field(description="One statement of the answer.")
    citations: list[str] = Field(description="Ids of the source blocks (chunk ids) that support this statement.")
    quotes: list[Quote] = Field(default_factory=list, description="Verbatim quotes the statement rests on.")


class Passage(BaseModel):
    """Policy text in force shown as it stands (no model configured): a chunk, or a lettered
    subsection of it, with the sentence(s) most likely to answer marked as [start, end) offsets
    into `text` (`answer` holds the marked sentences)."""

    chunk_id: str
    doc_id: str
    title: str
    section: str
    version: int
    effective_from: str
    effective_to: str | None
    text: str
    marked: list[tuple[int, int]] = Field(default_factory=list)

    @property
    def marked_sentences(self) -> list[str]:
        return [self.text[a:b] for a, b in self.marked]

    @property
    def marked_text(self) -> str:
        return " ".join(self.marked_sentences)


class Citation(BaseModel):
    """A cited chunk as read from the database (never from the model's output)."""

    chunk_id: str
    doc_id: str
    title: str
    section: str
    source_type: str
    version: int
    effective_from: str
    effective_to: str | None  # the last day in force (inclusive); None while open-ended
    text_sha256: str
    text: str
    # The source's products (lines of business); None = it applies to every product.
    line_of_business: list[str] | None = None


# -- what one ask came to: the step that decides returns one of these values, and nothing else
# does. `AskResult` holds exactly one and reads its answer, refusal, abstention and error fields
# from it, so no two of those flags can disagree.

@dataclass(frozen=True)
class Answered:
    """Stated from the cited sources. `warnings` are the ones the answer itself adds (policy
    text rather than a written answer, a cited source changed since ingest, which products it
    applies to). `extractive`: no model wrote it; `passages` holds the policy text shown, with
    the sentence most likely to answer marked. `condition`: the model said the sources answer
    only under this condition."""

    answer: str
    claims: list[Claim]
    citations: list[Citation]
    extractive: bool = False
    warnings: list[AnswerWarning] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    condition: str | None = None


@dataclass(frozen=True)
class Compared(Answered):
    """"What changed?" answered by comparing a policy's versions in code, not by a model: the
    versions it cites are its whole context, and it states their windows itself."""

    model: ClassVar[str] = "computed-comparison"
    # Said by the comparison already; repeated beside it they would only echo it.
    restates: ClassVar[frozenset[str]] = frozenset({"recent_change", "scheduled_change"})


@dataclass(frozen=True)
class Refused:
    """Refused in code: nothing is stated. `code` is stable for reports and clients
    (a `RefusalReason`, `no_version_in_force`, `postflight`); `message` is shown."""

    code: str
    message: str


@dataclass(frozen=True)
class Abstained:
    """The sources the caller may read give no answer: nothing is stated. `code`:
    not_answered | line_of_business | failed_closed | failed_check | nothing_to_compare;
    `reason` is shown. `warnings` are the ones the abstention adds (the product editions)."""

    code: str
    reason: str
    warnings: list[AnswerWarning] = field(default_factory=list)


@dataclass(frozen=True)
class Failed:
    """The request could not run. `code` names bad input (unknown_user, unknown_role, rejected,
    invalid_date, unknown_line_of_business) or is `INSIDE`, a failure inside the pipeline (failed closed)."""

    code: str
    message: str
    field: str | None = None  # the request field at fault, for bad input

    INSIDE: ClassVar[str] = "error"

    @property
    def inside(self) -> bool:
        return self.code == self.INSIDE


Outcome = Answered | Refused | Abstained | Failed


@dataclass
class AskRequest:
    user_name: str
    question: str
    dates: dict[str, Any] = field(default_factory=dict)  # basis -> date | "YYYY-MM-DD" | None
    kind: str = "ask"  # ask | replay | eval
    replay_of: uuid.UUID | None = None
    as_role: str | None = None  # replay: the original role's clearance, not the replayer's
    rejected: str | None = None  # input the caller refused (API validation): traced as failed, not answered
    line_of_business: str | None = None  # the member's product, chosen by the asker, never inferred


@dataclass(frozen=True)
class AskResult:
    """Built once, by the pipeline, from what its steps returned; never changed after.

    The answer, refusal, abstention and error fields are read from `outcome`, the one value the
    deciding step returned, so they cannot disagree."""

    question: str
    user_name: str
    role: str | None
    outcome: Outcome
    warnings: list[AnswerWarning] = field(default_factory=list)
    redactions: list[str] = field(default_factory=list)  # identifier detectors that fired on the question
    degraded: bool = False
    dates: dict[str, str | None] = field(default_factory=dict)
    line_of_business: str | None = None  # the product applied (validated), or None
    versions_applied: list[dict] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)
    context_ids: list[str] = field(default_factory=list)
    model: str = ""
    trace_id: uuid.UUID | None = None
    prompts: list[str] = field(default_factory=list)  # in-process only (leak checks); never stored

    @property
    def answerable(self) -> bool:
        return isinstance(self.outcome, Answered)

    @property
    def answer(self) -> str:
        return self.outcome.answer if isinstance(self.outcome, Answered) else ""

    @property
    def claims(self) -> list[Claim]:
        return self.outcome.claims if isinstance(self.outcome, Answered) else []

    @property
    def citations(self) -> list[Citation]:
        return self.outcome.citations if isinstance(self.outcome, Answered) else []

    @property
    def passages(self) -> list[Passage]:
        return self.outcome.passages if isinstance(self.outcome, Answered) else []

    @property
    def condition(self) -> str | None:
        return self.outcome.condition if isinstance(self.outcome, Answered) else None

    @property
    def extractive(self) -> bool:
        return isinstance(self.outcome, Answered) and self.outcome.extractive

    @property
    def refused(self) -> bool:
        return isinstance(self.outcome, Refused)

    @property
    def refusal_code(self) -> str | None:
        return self.outcome.code if isinstance(self.outcome, Refused) else None

    @property
    def refusal_message(self) -> str | None:
        return self.outcome.message if isinstance(self.outcome, Refused) else None

    # A failure inside the pipeline has always read as an abstention too (code "error"), and a
    # request failed for its input has carried its error as the abstain reason: clients and
    # stored traces read these fields, so they keep that shape.
    @property
    def abstained(self) -> bool:
        o = self.outcome
        return isinstance(o, Abstained) or (isinstance(o, Failed) and o.inside)

    @property
    def abstain_reason(self) -> str | None:
        o = self.outcome
        return o.reason if isinstance(o, Abstained) else o.message if isinstance(o, Failed) else None

    @property
    def abstain_code(self) -> str | None:
        o = self.outcome
        return o.code if isinstance(o, Abstained) else Failed.INSIDE if isinstance(o, Failed) and o.inside else None

    @property
    def error(self) -> str | None:
        return self.outcome.message if isinstance(self.outcome, Failed) else None

    @property
    def error_code(self) -> str | None:
        """The machine-readable kind of `error` (`Failed.code`)."""
        return self.outcome.code if isinstance(self.outcome, Failed) else None

    @property
    def error_field(self) -> str | None:
        """The request field at fault, for bad input (`Failed.field`)."""
        return self.outcome.field if isinstance(self.outcome, Failed) else None

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "answerable": self.answerable,
            "claims": [c.model_dump() for c in self.claims],
            "citations": [c.model_dump(exclude={"text"}) for c in self.citations],
            "passages": [p.model_dump() for p in self.passages],
            "condition": self.condition,
            "refused": self.refused,
            "refusal_reason": self.refusal_message,
            "refusal_code": self.refusal_code,
            "abstained": self.abstained,
            "abstain_reason": self.abstain_reason,
            "abstain_code": self.abstain_code,
            "warnings": [w.model_dump() for w in self.warnings],
            "redactions": self.redactions,
            "degraded": self.degraded,
            "dates": self.dates,
            "line_of_business": self.line_of_business,
            "versions_applied": self.versions_applied,
            "conflicts": self.conflicts,
            "user": self.user_name,
            "role": self.role,
            "model": self.model,
            "trace_id": str(self.trace_id) if self.trace_id else None,
            "error": self.error,
        }
