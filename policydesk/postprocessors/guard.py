"""The clearance guard: every node re-checked against the caller's clearance from stored columns.

The built-in retrievers put the access predicate in their own SQL, and row-level security sits
behind it; an extension component (docs/extending.md) may not. So between retrieval and version
resolution, and again before the prompt, the pipeline hands every node to this guard, which
re-reads its chunk id from Postgres (`storage.guard_read.stored_chunks`: the predicate in the
WHERE, under row-level security, in one round trip) and keeps the node only if

- a chunk with that id exists and the caller may read it,
- its stored `access_level` and `sensitive` columns pass `Clearance.permits` (a third check on
  the stored values, behind the predicate and RLS),
- its stored line of business is in the clearance's product scope (`Clearance.applies_to`: a
  row for every product, or a clearance with no product chosen, always is),
- the node's text is the text stored under that id (a node cannot borrow a permitted id for
  text the caller may not read).

Node metadata is never consulted: any component could have written it. What failed goes into
the caller's `GuardReport`; who produced the node, the counter and the leak-attempt log are the
pipeline's business (`policydesk.extensions.stack`), so this postprocessor stays stateless.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from policydesk.storage.clearance import Clearance
from policydesk.storage.guard_read import stored_chunks

# Why a node was dropped; the values are the counter's `reason` label.
NOT_READABLE = "not_readable"  # no chunk with this id that the caller may read (or none at all)
ABOVE_CLEARANCE = "above_clearance"  # the stored columns fail the clearance (predicate and RLS both missed)
LINE_OF_BUSINESS = "line_of_business"  # stored for other products than the caller's
TEXT_MISMATCH = "text_mismatch"  # the node's text is not the text stored under its id
REASONS = (NOT_READABLE, ABOVE_CLEARANCE, LINE_OF_BUSINESS, TEXT_MISMATCH)


@dataclass(frozen=True)
class GuardDrop:
    chunk_id: str
    reason: str


@dataclass
class GuardReport:
    """What the guard found over one request (every pass). `verified` lets a later pass skip a
    node whose id and text were already checked, so only new or changed nodes cost a read."""

    checked: int = 0
    passes: int = 0
    drops: list[GuardDrop] = field(default_factory=list)
    verified: dict[str, str] = field(default_factory=dict)  # chunk id -> the text that passed


def verdict(row: Any | None, text: str, clearance: Clearance) -> str | None:
    """None if the node may pass, else the reason it may not."""
    if row is None:
        return NOT_READABLE
    if not clearance.permits(row.access_level, bool(row.sensitive)):
        return ABOVE_CLEARANCE
    # Asked apart from `permits` so a product mismatch keeps its own reason.
    if not clearance.applies_to(row.line_of_business):
        return LINE_OF_BUSINESS
    if text != row.text:
        return TEXT_MISMATCH
    return None


class ClearanceGuard(BaseNodePostprocessor):
    """Drop every node the caller's clearance does not admit, judged on the stored row."""

    engine: Any = Field(description="The application engine (no BYPASSRLS): reads run under the caller's scope.")
    clearance: Clearance = Field(description="What the caller may read.")
    report: GuardReport | None = Field(
        default=None, exclude=True, description="Where drops go; None keeps no record (the nodes are still dropped).")

    @classmethod
    def class_name(cls) -> str:
        return "ClearanceGuard"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        report = self.report if self.report is not None else GuardReport()
        report.passes += 1
        todo = {n.node.node_id for n in nodes if report.verified.get(n.node.node_id) != n.node.get_content()}
        rows = stored_chunks(self.engine, chunk_ids=todo, clearance=self.clearance) if todo else {}
        report.checked += len(todo)
        kept = []
        for item in nodes:
            chunk_id, text = item.node.node_id, item.node.get_content()
            if report.verified.get(chunk_id) == text:
                kept.append(item)
                continue
            reason = verdict(rows.get(chunk_id), text, self.clearance)
            if reason is None:
                report.verified[chunk_id] = text
                kept.append(item)
            else:
                report.drops.append(GuardDrop(chunk_id, reason))
        return kept
