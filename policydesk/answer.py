"""The answer contract: what is asked, and what PolicyDesk returns, shows and stores.

Imported by the pipeline, postprocessors, synthesis, web, CLI, disputes and evals; it imports
nothing from policydesk, so every layer can depend on it without depending on each other.
`AskResult.to_json` is the `ask --json` contract of docs/design.md.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

WarningKind = Literal[
    "recent_change", "scheduled_change", "conflict", "degraded", "extractive", "stale_source", "version_swapped",
    "redacted", "date_from_question", "date_in_question", "not_in_force", "line_of_business",
]


class AnswerWarning(BaseModel):
    kind: WarningKind
    message: str


class Claim(BaseModel):
    text: str = Field(description="One statement of the answer.")
    citations: list[str] = Field(description="Ids of the source blocks (chunk ids) that support this statement.")


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
    # not_in_sources | failed_closed | failed_check | line_of_business | error
    abstain_code: str | None = None
    warnings: list[AnswerWarning] = field(default_factory=list)
    redactions: list[str] = field(default_factory=list)  # identifier detectors that fired on the question
    degraded: bool = False
    dates: dict[str, str | None] = field(default_factory=dict)
    line_of_business: str | None = None  # the product applied (validated), or None
    versions_applied: list[dict] = field(default_factory=list)
    conflicts: list[dict] = field(default_factory=list)
    context_ids: list[str] = field(default_factory=list)
    model: str = ""
    extractive: bool = False
    trace_id: uuid.UUID | None = None
    error: str | None = None
    error_code: str | None = None  # machine-readable kind of `error` where one is known (invalid_date, unknown_line_of_business)
    error_field: str | None = None  # the request field at fault, with those codes
    prompts: list[str] = field(default_factory=list)  # in-process only (leak checks); never stored

    def refuse(self, code: str, message: str) -> None:
        """Refused: nothing is stated, and the reason says why."""
        self.refused, self.refusal_reason, self.refusal_message = True, code, message
        self.answer, self.claims, self.citations = "", [], []

    def abstain(self, reason: str, code: str) -> None:
        """No answer from the sources: nothing is stated, and the reason (and its code) say why."""
        self.abstained, self.abstain_reason, self.abstain_code = True, reason, code
        self.answer, self.claims, self.citations = "", [], []

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
