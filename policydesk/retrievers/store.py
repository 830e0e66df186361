"""The PGVectorStore over `data_chunks`, on the application (RLS-bound) engines, and chunk rows as nodes."""

from __future__ import annotations

from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.vector_stores.postgres import PGVectorStore
from pydantic import PrivateAttr

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


def node_from_row(node_id: str, text: str, metadata: dict) -> TextNode:
    """A chunk row as a node (`row_to_node`), or a plain TextNode for a row written without
    LlamaIndex's node metadata, as PGVectorStore falls back."""
    try:
        return row_to_node(text, metadata)
    except Exception:  # rows written without LlamaIndex's node metadata
        return TextNode(id_=node_id, text=text, metadata=metadata)


# What fusion and the cut to the top k read of a node: its source type (the tie-break), its
# section and its document (one version per section).
_RANKED_BY = ("source_type", "section_id")


class RankingNode(TextNode):
    """A chunk row as fusion ranks it: its id and the few metadata keys ranking reads, with the
    row's text and metadata kept to build the stored node (`node_from_row`, most of a row's cost:
    its JSON is parsed twice) only for a row that stays. The arms return 20 rows each and a
    request keeps 8."""

    _row: tuple[str, dict] = PrivateAttr()

    @classmethod
    def of(cls, node_id: str, text: str, metadata: dict) -> "RankingNode":
        keys = {k: metadata[k] for k in _RANKED_BY if k in metadata}
        # The stored node's document (`doc_id_of`): PGVectorStore writes its ref_doc_id to the
        # row's "doc_id", as the string "None" when it has none.
        if metadata.get("doc_id") not in (None, "None"):
            keys["doc_id"] = metadata["doc_id"]
        node = cls(id_=node_id, metadata=keys)
        node._row = (text, metadata)
        return node

    def stored(self) -> TextNode:
        return node_from_row(self.node_id, *self._row)


def stored_nodes(nodes: list[NodeWithScore]) -> list[NodeWithScore]:
    """The same ranked list with each `RankingNode` replaced by the node it stands for."""
    return [NodeWithScore(node=n.node.stored(), score=n.score) if isinstance(n.node, RankingNode) else n
            for n in nodes]
