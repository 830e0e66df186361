"""The PGVectorStore over `data_chunks`, on the application (RLS-bound) engines."""

from __future__ import annotations

from llama_index.core.schema import TextNode
from llama_index.vector_stores.postgres import PGVectorStore

from policydesk.storage.models import EMBED_DIM
from policydesk.versions.repository import row_to_node


def chunk_vector_store(db) -> PGVectorStore:
    # Alembic owns the table, the extension and the indexes: no setup from here.
    return PGVectorStore(
        engine=db.app,
        async_engine=db.app_async,
        table_name="chunks",
        hybrid_search=True,
        text_search_config="english",
        embed_dim=EMBED_DIM,
        use_jsonb=True,
        perform_setup=False,
    )


def node_from_row(node_id: str, text: str, metadata: dict, built: dict[str, TextNode] | None = None) -> TextNode:
    """A chunk row as a node (`row_to_node`), or a plain TextNode for a row written without
    LlamaIndex's node metadata, as PGVectorStore falls back. With `built`, a chunk both arms
    returned is parsed once (its metadata holds the node's JSON: most of the cost)."""
    if built is not None and node_id in built:
        return built[node_id]
    try:
        node = row_to_node(text, metadata)
    except Exception:  # rows written without LlamaIndex's node metadata
        node = TextNode(id_=node_id, text=text, metadata=metadata)
    if built is not None:
        built[node_id] = node
    return node
