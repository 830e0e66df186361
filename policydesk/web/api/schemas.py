"""Request and response models of the JSON API, so /openapi.json documents every field.

The answer models mirror `AskResult.to_json()` (the JSON `policydesk ask --json` prints) field
for field; `tests/test_api.py` checks that every key of a real answer validates against them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from policydesk.contract.answer import Passage, WarningKind

DATE = {"format": "date", "examples": ["2025-11-03"]}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- requests -----------------------------------------------------------------------------------

class AskBody(_Strict):
    question: str = Field(min_length=1, description=(
        "The policy question, 1 to POLICYDESK_MAX_QUESTION_CHARS (default 1000) characters. "
        "No member identifiers: a question carrying one is refused."))
    date_of_service: str | None = Field(default=None, description="YYYY-MM-DD: resolve versions for this date of service.",
                                        json_schema_extra=DATE)
    denial_notice_date: str | None = Field(default=None, json_schema_extra=DATE, description=(
        "YYYY-MM-DD: the date on the denial notice, for policies whose date basis it is."))
    line_of_business: str | None = Field(default=None, description=(
        "The member's product (line of business), one of the names the corpus's sources use: only "
        "sources for that product or for every product are read. An unknown name is refused with "
        "problem type unknown_line_of_business listing the valid ones. Null: no product chosen."))


class CheckBody(_Strict):
    member_date: str = Field(description="YYYY-MM-DD: the member's date the cited versions are checked against.",
                             json_schema_extra=DATE)
    line_of_business: str | None = Field(default=None, description=(
        "The member's product: a cited source for other products only is a `wrong_product` verdict."))


class FeedbackBody(_Strict):
    trace_id: str = Field(description="The `trace_id` of one of your own answers.")
    verdict: Literal["helpful", "wrong"] = Field(description="`wrong` means wrong or unclear.")
    reason: Literal["wrong_version", "wrong_policy", "missing_information", "unclear_wording", "other"] | None = Field(
        default=None, description="Why, when the verdict is `wrong` (ignored for `helpful`).")
    note: str = Field(default="", max_length=1000, description=(
        "Optional. No member details: a note in which an identifier detector fires is refused and not stored."))


class FeedbackOut(BaseModel):
    trace_id: str
    verdict: str
    reason: str | None
    note: str
    recorded: bool = True


# -- the answer (AskResult.to_json) -------------------------------------------------------------

class QuoteOut(BaseModel):
    chunk_id: str
    text: str = Field(description="The words of that chunk the statement rests on, as the chunk has them.")


class ClaimOut(BaseModel):
    text: str = Field(description="One statement of the answer.")
    citations: list[str] = Field(description="Chunk ids of the citations that support it.")
    quotes: list[QuoteOut] = Field(default_factory=list, description="Verbatim quotes it rests on (checked in code).")


class CitationOut(BaseModel):
    chunk_id: str = Field(description="Id of the cited section; GET /api/v1/citations/{trace_id}/{chunk_id} shows its text.")
    doc_id: str
    title: str
    section: str
    source_type: str = Field(description="policy | wiki | call_note")
    version: int
    effective_from: str = Field(description="First day this version was in force (YYYY-MM-DD).")
    effective_to: str | None = Field(description="Last day in force (inclusive), or null while the version is current.")
    text_sha256: str = Field(description="SHA-256 of the cited text as indexed when answered.")
    line_of_business: list[str] | None = Field(default=None, description=(
        "The source's products (lines of business); null when it applies to every product."))


class WarningOut(BaseModel):
    kind: WarningKind
    message: str


class DatesOut(BaseModel):
    date_of_service: str | None = None
    denial_notice_date: str | None = None


class VersionAppliedOut(BaseModel):
    doc_id: str
    title: str
    version: int
    effective_from: str
    effective_to: str | None = Field(description="Stored exclusive end (YYYY-MM-DD), null when open-ended.")
    window: str = Field(description="The window in words, showing the last day in force.")
    date_basis: str
    applicable_date: str | None = Field(description="The date entered for this policy's date basis, if any.")


class ConflictOut(BaseModel):
    note_chunk_id: str
    note_title: str | None
    note_source_type: str
    note_values: list[str]
    policy_chunk_id: str
    policy_doc_id: str
    policy_title: str | None
    policy_version: int | None
    policy_values: list[str]
    unit: str
    message: str
    action: str | None = None


class AnswerOut(BaseModel):
    """Exactly the object `policydesk ask --json` prints."""

    answer: str = Field(description="The answer text; empty when refused, abstained or failed.")
    answerable: bool
    claims: list[ClaimOut]
    citations: list[CitationOut]
    passages: list[Passage] = Field(description="With no model configured: the policy text shown, its likely "
                                                   "sentence marked (`answer` holds the marked sentences).")
    condition: str | None = Field(default=None, description="The model said the sources answer only under this.")
    refused: bool
    refusal_reason: str | None = Field(description="The refusal message shown to the staff member.")
    refusal_code: str | None = Field(description="Machine-readable refusal reason, e.g. member_identifier.")
    abstained: bool = Field(description="True when the sources did not contain the answer.")
    abstain_reason: str | None
    abstain_code: str | None = Field(description="Why there is no answer, machine-readable (e.g. no_source, error).")
    warnings: list[WarningOut]
    redactions: list[str] = Field(description=(
        "Identifier detectors that fired on the question (e.g. member_id, email, id_shaped); those "
        "parts were removed before retrieval, any model call and the trace."))
    degraded: bool = Field(description="True when the request ran degraded: retrieval fell back to full text "
                                       "(embedding service down), or the refusal screen used its rules only "
                                       "(intent classifier failed); a `degraded` warning says which.")
    dates: DatesOut | dict[str, Any]
    line_of_business: str | None = Field(default=None, description="The product the answer was given for, or null.")
    versions_applied: list[VersionAppliedOut]
    conflicts: list[ConflictOut]
    user: str
    role: str | None = Field(description="The role the question was answered with (read from the database).")
    model: str
    trace_id: str | None = Field(description="The trace that records this answer.")
    error: str | None


# -- citations and versions ---------------------------------------------------------------------

class CitedTextOut(BaseModel):
    trace_id: str
    question: str = Field(description="The question the citation answered.")
    chunk_id: str
    doc_id: str
    title: str
    section: str
    version: int
    effective_from: str
    effective_to: str | None = Field(description="Last day in force (inclusive), or null while current.")
    text_sha256: str
    text: str = Field(description="The cited text exactly as it was shown with the answer.")


class VersionOut(BaseModel):
    version: int
    title: str
    effective_from: str
    effective_to: str | None = Field(description="Last day in force (inclusive), or null while current.")
    superseded_by: int | None
    status: Literal["past", "in_force", "scheduled"] = Field(description="Relative to the server's today.")


class TimelineOut(BaseModel):
    doc_id: str
    title: str = Field(description="Title of the latest version the caller may see.")
    date_basis: str = Field(description="Which date decides the version that applies.")
    today: str
    versions: list[VersionOut] = Field(description="The versions the caller may see, oldest first.")


# -- disputes -----------------------------------------------------------------------------------

class TraceHitOut(BaseModel):
    id: str
    created_at: datetime
    user_name: str
    user_role: str = Field(description="The asker's role when they asked.")
    question: str
    answer_text: str
    refused: bool
    abstained: bool
    dates: dict[str, str | None]
    line_of_business: str | None = Field(default=None, description="The product the answer was given for.")


class TraceSearchOut(BaseModel):
    traces: list[TraceHitOut] = Field(description="Asks only (no replays or eval runs), newest first, at most 50.")


class VerdictOut(BaseModel):
    chunk_id: str
    doc_id: str
    title: str
    section: str
    cited_version: int
    cited_window: str
    basis: str | None
    basis_label: str
    member_date: str
    verdict: Literal["right", "wrong_version", "edited", "section_missing", "none_in_force", "wrong_product"]
    ok: bool
    text: str = Field(description="The verdict in words, e.g. 'wrong policy version: version 1 applied, ...'.")
    applied_version: int | None
    applied_window: str | None


class CheckOut(BaseModel):
    trace_id: str
    member_date: str
    verdicts: list[VerdictOut]


# -- problems (RFC 9457) ------------------------------------------------------------------------

class FieldError(BaseModel):
    field: str = Field(description="The request field at fault, e.g. question, date_of_service, body.")
    message: str


class Problem(BaseModel):
    """application/problem+json. `type` is one of the stable values listed in docs/api.md; a
    refusal also carries every field of the answer object."""

    model_config = ConfigDict(extra="allow")
    type: str = Field(description="refused | invalid_date | unknown_line_of_business | invalid_request | "
                                  "unauthorized | forbidden | not_found | method_not_allowed | rate_limited | unavailable")
    title: str
    status: int
    detail: str
    instance: str | None = Field(default=None, description="The request path.")
    errors: list[FieldError] | None = None
    trace_id: str | None = None
