"""Chunk ids and the document they belong to, derived in one place.

A chunk's id is `DOC:vN:KEY` (the source's id, its version, the section key that is unique within
the version). The document of a stored node is the `doc_id` PGVectorStore keeps in its metadata,
else its source relationship, else the part of its id before the first colon.
"""

from __future__ import annotations

import hashlib

from llama_index.core.schema import BaseNode


def sha256_text(text: str) -> str:
    """The SHA-256 of a chunk's text as stored: what a citation records and a re-read must match."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id(doc_id: str, version: int, key: str) -> str:
    """DOC:vN:section-id for a section's first (often only) chunk, DOC:vN:section-id:K after it."""
    return f"{doc_id}:v{version}:{key}"


def doc_id_of_chunk(chunk_id: str) -> str:
    """The document id a chunk id starts with."""
    return chunk_id.split(":", 1)[0]


def doc_id_of(node: BaseNode) -> str:
    """The document id of a node built from a stored chunk."""
    return str(node.metadata.get("doc_id") or node.ref_doc_id or doc_id_of_chunk(node.node_id))
