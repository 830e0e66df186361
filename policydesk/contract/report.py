"""What version resolution and conflict flagging found for one request, beyond the nodes.

The postprocessors keep no per-call state and share nothing. Findings about a node travel in
its metadata (`applicable_date`, `date_basis`, `swapped_from`, `conflicts_with`); findings about
the request (the versions applied, warnings, conflicts, and why chunks were dropped, which no
surviving node can carry) are returned by each call: `VersionResolver.resolve` and
`ConflictFlagger.flag` give back their nodes and a `ContextReport` of their own, and the caller
joins the two (`ContextReport.joined`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from llama_index.core.schema import NodeWithScore

from policydesk.contract.answer import AnswerWarning
from policydesk.versions import NoVersionInForce


@dataclass
class ContextReport:
    applied: list[dict] = field(default_factory=list)  # one record per policy version applied
    warnings: list[AnswerWarning] = field(default_factory=list)  # resolver's first, then conflicts
    swaps: list[tuple[str, str]] = field(default_factory=list)  # (retrieved chunk id, applied chunk id)
    dropped: list[dict] = field(default_factory=list)  # {"chunk_id": ..., "reason": ...}
    conflicts: list[dict] = field(default_factory=list)
    # The first policy the ranking reached, before any policy in force, that had no version in
    # force on its applicable date. It was dropped like the rest; whether the request is refused
    # for it depends on whether the question is about it (the pipeline decides).
    held_back: NoVersionInForce | None = None

    def joined(self, other: "ContextReport") -> "ContextReport":
        """This call's findings followed by another's (the resolver's, then the flagger's)."""
        return ContextReport(applied=[*self.applied, *other.applied], warnings=[*self.warnings, *other.warnings],
                             swaps=[*self.swaps, *other.swaps], dropped=[*self.dropped, *other.dropped],
                             conflicts=[*self.conflicts, *other.conflicts],
                             held_back=self.held_back or other.held_back)

    @property
    def conflict_warnings(self) -> list[AnswerWarning]:
        return [w for w in self.warnings if w.kind == "conflict"]


class Processed(NamedTuple):
    """What one postprocessor call returns: the nodes, and what it found about the request."""

    nodes: list[NodeWithScore]
    report: ContextReport
