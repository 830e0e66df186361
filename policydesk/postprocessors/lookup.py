"""Permission-scoped reads of versions and sections, for version resolution and comparison.

Every statement runs on the application engine (`db.app`, no BYPASSRLS) inside
`permitted_scope`, so row-level security binds it, and carries the access predicate in its
own WHERE clause as well: a version the caller can't see is never fetched, and a missing
scope can't widen what is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.utils import metadata_dict_to_node
from sqlalchemy import text

from policydesk.storage.models import OPEN_END
from policydesk.storage.scope import permitted_scope

_VERSIONS_SQL = text(
    """
    SELECT doc_id, version, title, effective_from, effective_to, date_basis, superseded_by
    FROM document_versions
    WHERE doc_id = ANY(:ids)
      AND access_level = ANY(:levels)
      AND (:sensitive OR NOT sensitive)
    ORDER BY doc_id, effective_from, version
    """
)

# Plain columns (migration 0003), not metadata_->>: under RLS only leakproof comparisons
# can use the (doc_id, version, section_id) index.
_CHUNK_PREDICATE = (
    "doc_id = :doc_id AND version = :version "
    "AND access_level = ANY(:levels) "
    "AND (:sensitive OR NOT sensitive)"
)
_SECTION_SQL = text(
    f"SELECT text, metadata_ FROM data_chunks WHERE {_CHUNK_PREDICATE} AND section_id = :section_id"
)
_SECTIONS_SQL = text(f"SELECT text, metadata_ FROM data_chunks WHERE {_CHUNK_PREDICATE} ORDER BY id")


@dataclass(frozen=True)
class VersionInfo:
    doc_id: str
    version: int
    title: str
    effective_from: date
    effective_to: date  # exclusive end; OPEN_END for the current version
    date_basis: str
    superseded_by: int | None = None

    @property
    def is_open(self) -> bool:
        return self.effective_to >= OPEN_END


def row_to_node(text_value: str, metadata: dict) -> TextNode:
    """Rebuild a node from a stored row exactly the way PGVectorStore does."""
    node = metadata_dict_to_node(dict(metadata))
    node.set_content(str(text_value))
    node.metadata.pop("custom_fields", None)
    return node


class VersionLookup:
    def __init__(self, db) -> None:
        self._engine = db.app

    def versions(self, doc_ids, levels, sensitive: bool) -> dict[str, list[VersionInfo]]:
        """Visible versions of each document, oldest first."""
        ids = sorted(set(doc_ids))
        if not ids:
            return {}
        params = {"ids": ids, "levels": list(levels), "sensitive": bool(sensitive)}
        with permitted_scope(levels, sensitive), self._engine.connect() as conn:
            rows = conn.execute(_VERSIONS_SQL, params).all()
        out: dict[str, list[VersionInfo]] = {}
        for r in rows:
            out.setdefault(r.doc_id, []).append(
                VersionInfo(r.doc_id, r.version, r.title, r.effective_from, r.effective_to, r.date_basis,
                            r.superseded_by)
            )
        return out

    def section(self, doc_id: str, version: int, section_id: str, levels, sensitive: bool) -> TextNode | None:
        params = self._chunk_params(doc_id, version, levels, sensitive) | {"section_id": section_id}
        with permitted_scope(levels, sensitive), self._engine.connect() as conn:
            row = conn.execute(_SECTION_SQL, params).first()
        return row_to_node(row.text, row.metadata_) if row else None

    def sections(self, doc_id: str, version: int, levels, sensitive: bool) -> list[TextNode]:
        """All sections of one version, in document order (ingest inserts them in order)."""
        params = self._chunk_params(doc_id, version, levels, sensitive)
        with permitted_scope(levels, sensitive), self._engine.connect() as conn:
            rows = conn.execute(_SECTIONS_SQL, params).all()
        return [row_to_node(r.text, r.metadata_) for r in rows]

    @staticmethod
    def _chunk_params(doc_id: str, version: int, levels, sensitive: bool) -> dict:
        return {"doc_id": doc_id, "version": int(version), "levels": list(levels), "sensitive": bool(sensitive)}
