"""What one ask came to: the step that decides returns one of these values, and nothing else does.

`AskResult` (answer.py) holds exactly one outcome and reads its answer, refusal, abstention
and error fields from it, so no two of those flags can disagree. This module imports nothing
from policydesk at run time, so answer.py can build on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from policydesk.answer import AnswerWarning, Citation, Claim, Passage


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
