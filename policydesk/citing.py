"""Citations built from the stored node a claim cites, never from the model's output.

Text, section, version and window come from the database row the node was read from; the
window is stored with its inclusive last day (`Window.iso`), as every page shows it.
"""

from __future__ import annotations

from llama_index.core.schema import BaseNode

from policydesk.answer import Citation
from policydesk.storage.chunk_ids import doc_id_of
from policydesk.versions import Window


def citation_from_node(node: BaseNode) -> Citation:
    m = node.metadata
    return Citation(
        chunk_id=node.node_id, doc_id=doc_id_of(node), title=m["title"], section=m["section"],
        source_type=m["source_type"], version=int(m["version"]), effective_from=m["effective_from"],
        effective_to=Window.stored(m["effective_from"], m.get("effective_to")).iso()[1],
        text_sha256=m["text_sha256"], text=node.get_content(), line_of_business=m.get("line_of_business") or None,
    )
