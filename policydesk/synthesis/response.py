"""A synthesis outcome as a LlamaIndex `Response`: the cited answer, the cited nodes, the record.

`source_nodes` are the nodes the claims cite, in the order first cited (then any additional
source nodes the caller passed, as LlamaIndex appends them); a response without an answer
cites nothing and carries no context node. Its text is then the reason no answer was given,
so an agent reading only the text still learns that nothing was stated. `metadata` holds what
the trace records: claims, each citation with the sha256 of the text the model was shown,
every attempt, and why there was no answer (`abstain_reason`, `failed_closed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.schema import NodeWithScore

from policydesk.storage.chunk_ids import sha256_text
from policydesk.synthesis.outcome import SynthesisOutcome
from policydesk.storage.chunk_ids import doc_id_of

NO_ANSWER_PREFIX = "No answer: "


def cited_nodes(outcome: SynthesisOutcome) -> list[NodeWithScore]:
    """The context nodes (as stored) the answer's claims quote, first quote first (none without an answer)."""
    if outcome.answer is None:
        return []
    by_id = {n.node.node_id: n for n in outcome.context}
    cited = dict.fromkeys(q.chunk_id for claim in outcome.answer.claims for q in claim.quotes)
    return [by_id[i] for i in cited if i in by_id]


def citation_record(node: NodeWithScore) -> dict[str, Any]:
    meta = node.node.metadata
    return {
        "chunk_id": node.node.node_id,
        "doc_id": doc_id_of(node.node),
        "title": meta.get("title"),
        "section": meta.get("section"),
        "version": meta.get("version"),
        "text_sha256": sha256_text(node.node.get_content()),
    }


def outcome_metadata(outcome: SynthesisOutcome, cited: Sequence[NodeWithScore]) -> dict[str, Any]:
    return {
        "answered": outcome.answered,
        "claims": [c.model_dump() for c in outcome.answer.contract_claims()] if outcome.answer else [],
        "condition": outcome.answer.condition if outcome.answer else None,
        "dropped": list(outcome.dropped),
        "citations": [citation_record(n) for n in cited],
        "attempts": [dict(a) for a in outcome.attempts],
        "abstain_reason": outcome.abstain_reason,
        "failed_closed": outcome.failed_closed,
        "model": outcome.model,
        "tokens_in": outcome.tokens_in,
        "tokens_out": outcome.tokens_out,
    }


def cited_response(outcome: SynthesisOutcome,
                   additional_source_nodes: Sequence[NodeWithScore] | None = None) -> Response:
    cited = cited_nodes(outcome)
    if outcome.answer is not None:
        text = outcome.answer.answer
    else:
        text = NO_ANSWER_PREFIX + (outcome.abstain_reason or "the sources do not contain the answer.")
    return Response(response=text, source_nodes=[*cited, *(additional_source_nodes or [])],
                    metadata=outcome_metadata(outcome, cited))
