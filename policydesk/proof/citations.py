"""Citations: built from the stored node a claim cites (never from the model's output), and shown
again from the caller's own trace only while their CURRENT clearance may read that source version.

A citation's text, section, version and window come from the database row the node was read
from; the window is stored with its inclusive last day (`Window.iso`), as every page shows it.
Shown again, it is re-read: the cited-text page and the JSON API refuse in the same way, so a
lost clearance looks exactly like a citation that never existed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from llama_index.core.schema import BaseNode

from policydesk.accounts.access import Clearance
from policydesk.contract.answer import Citation
from policydesk.storage import sources
from policydesk.storage.chunk_ids import doc_id_of
from policydesk.storage.scope import scoped_session
from policydesk.storage.traces import own_trace_citations
from policydesk.versions import Window


@dataclass(frozen=True)
class CitedText:
    trace_id: uuid.UUID
    question: str
    citation: dict[str, Any]  # as stored in traces.citations, text included


def own_citation(db, *, user_name: str, clearance: Clearance, trace_id: str, chunk_id: str) -> CitedText | None:
    """None when the trace is not the caller's, the chunk was not cited, or the caller may no
    longer read the cited version."""
    try:
        tid = uuid.UUID(trace_id)
    except ValueError:
        return None
    with scoped_session(db.app, clearance, user_name=user_name) as session:
        row = own_trace_citations(session, trace_id=tid, user_name=user_name)
        cite = next((c for c in (row.citations if row else []) if c.get("chunk_id") == chunk_id), None)
        if cite is None or not sources.readable_versions(session, keys=[(cite["doc_id"], cite["version"])],
                                                         clearance=clearance):
            return None
    return CitedText(tid, row.question, cite)


def citation_from_node(node: BaseNode) -> Citation:
    m = node.metadata
    return Citation(
        chunk_id=node.node_id, doc_id=doc_id_of(node), title=m["title"], section=m["section"],
        source_type=m["source_type"], version=int(m["version"]), effective_from=m["effective_from"],
        effective_to=Window.stored(m["effective_from"], m.get("effective_to")).iso()[1],
        text_sha256=m["text_sha256"], text=node.get_content(), line_of_business=m.get("line_of_business") or None,
    )
