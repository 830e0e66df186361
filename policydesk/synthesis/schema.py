"""The answer schema: what the model must return, and what PolicyDesk shows and stores."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Claim(BaseModel):
    text: str = Field(description="One statement of the answer.")
    citations: list[str] = Field(description="Ids of the source blocks (chunk ids) that support this statement.")


class ModelAnswer(BaseModel):
    """The JSON object the model is asked for (its JSON schema is sent with the request)."""

    answerable: bool = Field(description="False when the sources do not contain the answer.")
    answer: str = Field(description="The answer for the staff member, stating the rule and its value.")
    claims: list[Claim] = Field(default_factory=list)
    insufficient_evidence_reason: str | None = Field(default=None, description="Why not answerable, if so.")


class Citation(BaseModel):
    """A cited chunk as read from the database (never from the model's output)."""

    chunk_id: str
    doc_id: str
    title: str
    section: str
    source_type: str
    version: int
    effective_from: str
    effective_to: str | None  # None when the version is still open-ended
    text_sha256: str
    text: str

