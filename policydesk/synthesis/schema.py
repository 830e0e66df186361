"""What the model must return: the JSON object whose schema is sent with every request.

The model says whether the sources answer (yes, no, or only under a condition it states), the
answer, and for each claim the verbatim quotes it rests on, each naming its source block. Code
then proves the quotes and values (`grounding.py`); `claims()` turns them into the answer
contract's `Claim`, whose citations are the quoted chunks.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from policydesk.contract.answer import Claim, Quote


class ModelQuote(BaseModel):
    chunk_id: str = Field(description="The id of the source block quoted.")
    text: str = Field(description="Words copied exactly from that source block.")


class ModelClaim(BaseModel):
    text: str = Field(description="One statement of the answer.")
    quotes: list[ModelQuote] = Field(default_factory=list, description="The verbatim quotes the statement rests on.")


class ModelAnswer(BaseModel):
    """The JSON object the model is asked for (its JSON schema is sent with the request)."""

    answers: Literal["yes", "no", "conditional"] = Field(
        description="yes: the sources answer; no: they do not; conditional: only under a condition they state.")
    condition: str | None = Field(default=None, description="The condition, when answers is conditional.")
    answer: str = Field(default="", description="The answer for the staff member, stating the rule and its value.")
    claims: list[ModelClaim] = Field(default_factory=list)
    reason: str | None = Field(default=None, description="Why the sources do not answer, when answers is no.")

    @property
    def answerable(self) -> bool:
        return self.answers != "no"

    def contract_claims(self) -> list[Claim]:
        return [Claim(text=c.text, citations=list(dict.fromkeys(q.chunk_id for q in c.quotes)),
                      quotes=[Quote(chunk_id=q.chunk_id, text=q.text) for q in c.quotes]) for c in self.claims]
