"""The answer contract: what PolicyDesk returns, shows and stores for a question.

Imported by the pipeline, postprocessors, synthesis, web, CLI and evals; it imports nothing
from policydesk, so every layer can depend on it without depending on each other.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

WarningKind = Literal[
    "recent_change", "scheduled_change", "conflict", "degraded", "extractive", "stale_source", "version_swapped"
]


class AnswerWarning(BaseModel):
    kind: WarningKind
    message: str
