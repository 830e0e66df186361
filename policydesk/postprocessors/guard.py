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

Node metadata is never consulted: any component could have written it. `check()` returns what
one pass found (the nodes kept, the drops, what it verified); who produced a node, the counter
and the leak-attempt log are the pipeline's business (`policydesk.extensions.stack`), so this
postprocessor keeps nothing between calls. LlamaIndex's `postprocess_nodes()` returns the kept
nodes of the same check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from policydesk.storage.clearance import Clearance
from policydesk.storage.guard_read import stored_chunks

dispatcher = get_dispatcher(__name__)

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


@dataclass(frozen=True)
class GuardPass:
    """What one pass found: the nodes kept, those dropped and why, how many stored rows it read,
    and the (chunk id, text) pairs it verified, which a later pass may be handed so that only new
    or changed nodes cost a read."""

    nodes: list[NodeWithScore]
    drops: list[GuardDrop] = field(default_factory=list)
    checked: int = 0
    verified: dict[str, str] = field(default_factory=dict)


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

    @classmethod
    def class_name(cls) -> str:
        return "ClearanceGuard"

    @dispatcher.span
    def check(self, nodes: list[NodeWithScore], verified: Mapping[str, str] | None = None) -> GuardPass:
        """One pass over `nodes`. `verified`: chunk id -> text an earlier pass of the same request
        verified; a node with that id and that text is kept without another read."""
        verified = verified or {}
        todo = {n.node.node_id for n in nodes if verified.get(n.node.node_id) != n.node.get_content()}
        rows = stored_chunks(self.engine, chunk_ids=todo, clearance=self.clearance) if todo else {}
        kept, drops, newly = [], [], {}
        for item in nodes:
            chunk_id, text = item.node.node_id, item.node.get_content()
            if verified.get(chunk_id) == text or newly.get(chunk_id) == text:
                kept.append(item)
                continue
            reason = verdict(rows.get(chunk_id), text, self.clearance)
            if reason is None:
                newly[chunk_id] = text
                kept.append(item)
            else:
                drops.append(GuardDrop(chunk_id, reason))
        return GuardPass(kept, drops, len(todo), newly)

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return self.check(nodes).nodes
