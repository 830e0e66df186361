"""Follow a code named inside a context chunk to the section that defines it."""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field, field_validator
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from examples.policy_codes.codes import check_pattern, codes_in, matching_chunks, normalise
from policydesk.extensions import ComponentContext


class CrossReferencePostprocessor(BaseNodePostprocessor):
    """A chunk that says "see PA-104" brings in the chunk whose section heading is PA-104.

    Added chunks go after the ones in context, at most `max_added` of them, read through the
    request's context (so never one the caller may not read), and the clearance guard checks them
    again before the prompt. Nodes already in context are returned unchanged.
    """

    context: ComponentContext = Field(exclude=True, description="The request's scoped reads.")
    pattern: str = Field(description="Regex for one of the plan's codes.")
    max_added: int = Field(default=2, ge=0, le=8, description="At most this many referenced sections are added.")

    def __init__(self, context: ComponentContext, **data: Any) -> None:
        super().__init__(context=context, **data)

    @field_validator("pattern")
    @classmethod
    def _check_pattern(cls, value: str) -> str:
        return check_pattern(value)

    @classmethod
    def class_name(cls) -> str:
        return "CrossReferencePostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
                           ) -> list[NodeWithScore]:
        if not nodes or self.max_added == 0:
            return nodes
        defined = {c for n in nodes for c in codes_in(self.pattern, str(n.node.metadata.get("section") or ""))}
        wanted = [c for n in nodes for c in codes_in(self.pattern, n.node.get_content()) if c not in defined]
        wanted = list(dict.fromkeys(normalise(c) for c in wanted))
        if not wanted:
            return nodes
        present = {n.node.node_id for n in nodes}
        stmt = matching_chunks(wanted, self.context.where(), len(present) + self.max_added, headings_only=True)
        with self.context.session() as session:
            rows = session.execute(stmt).all()
        floor = min((n.score or 0.0) for n in nodes)
        added = [NodeWithScore(node=self.context.node(r.text, r.metadata_), score=floor) for r in rows]
        return nodes + [n for n in added if n.node.node_id not in present][: self.max_added]
