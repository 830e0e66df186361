"""Build chunk nodes and their table rows in the layout PGVectorStore reads."""

from __future__ import annotations

from datetime import date

from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.utils import node_to_metadata_dict

from policydesk.ingest.chunking import ChunkSpec
from policydesk.ingest.manifest import Source
from policydesk.storage.chunk_ids import chunk_id, sha256_text


def chunk_metadata(source: Source, chunk: ChunkSpec, window: dict) -> dict:
    meta = {
        "chunk_id": chunk_id(source.doc_id, source.version, chunk.key),
        "title": source.title,
        "version": source.version,
        # The heading path ("Coordination › Exceptions"): what a citation names.
        "section": chunk.section.heading,
        # Unique per chunk within a version (`section-id`, then `section-id:2`, ...): the version
        # swap and the section comparison key on it. No other new keys: a chunk of a short
        # section is stored byte for byte as before chunking (row size moves HNSW neighbours).
        "section_id": chunk.key,
        "source_type": source.source_type,
        "effective_from": source.effective_from.isoformat(),
        "effective_to": window["effective_to"].isoformat(),
        "supersedes": window["supersedes"],
        "superseded_by": window["superseded_by"],
        "date_basis": source.date_basis,
        "access_level": source.access_level,
        "sensitive": source.sensitive,
        "owner": source.owner,
        "related_policies": list(source.related_policies),
        "source_file": source.file,
        "text_sha256": sha256_text(chunk.text),
    }
    # Only a product-specific source carries the key (absent = every product), so products leave
    # every other source's chunks byte for byte the same.
    if source.line_of_business:
        meta["line_of_business"] = list(source.line_of_business)
    # Only a chunk read from a paged format (PDF) carries its pages: where a citation opens it.
    if chunk.pages is not None:
        meta["page_start"], meta["page_end"] = chunk.pages
    return meta


def make_node(doc_id: str, text: str, metadata: dict, embedding: list[float] | None = None) -> TextNode:
    node = TextNode(
        id_=metadata["chunk_id"],
        text=text,
        metadata=metadata,
        embedding=embedding,
        # Metadata is shown to the model by our own source blocks, not glued onto the text.
        excluded_embed_metadata_keys=list(metadata),
        excluded_llm_metadata_keys=list(metadata),
    )
    # ref_doc_id becomes metadata_["doc_id"] / ["ref_doc_id"] in the stored row.
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc_id)
    return node


def row_metadata(node: TextNode) -> dict:
    return node_to_metadata_dict(node, remove_text=True, flat_metadata=False)


def windows_for(versions: list[tuple[int, date]], open_end: date) -> dict[int, dict]:
    """effective_to of each version is the next version's effective_from; the last is open."""
    ordered = sorted(versions)
    out: dict[int, dict] = {}
    for i, (version, _) in enumerate(ordered):
        nxt = ordered[i + 1] if i + 1 < len(ordered) else None
        prev = ordered[i - 1] if i > 0 else None
        out[version] = {
            "effective_to": nxt[1] if nxt else open_end,
            "superseded_by": nxt[0] if nxt else None,
            "supersedes": prev[0] if prev else None,
        }
    return out
