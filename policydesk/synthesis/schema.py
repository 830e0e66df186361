"""What the model must return: the JSON object whose schema is sent with every request.

The claims it contains are the answer contract's `Claim` (`policydesk.answer`), so a validated
reply carries straight into the `AskResult` without a copy.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from policydesk.answer import Claim


class ModelAnswer(BaseModel):
    """The JSON object the model is asked for (its JSON schema is sent with the request)."""

    answerable: bool = Field(description="False when the sources do not contain the answer.")
    answer: str = Field(description="The answer for the staff member, stating the rule and its value.")
    claims: list[Claim] = Field(default_factory=list)
    insufficient_evidence_reason: str | None = Field(default=None, description="Why not answerable, if so.")
