"""The version repository: permission-scoped reads of versions and sections, as domain objects.

Used by version resolution, comparison, the disputes checks and the web timelines.

Every read runs on the application engine (`db.app`, no BYPASSRLS) in a session bound to the
caller's clearance, through the statements in `policydesk.storage.sources`, which carry the
access predicate in their own WHERE clause as well.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from policydesk.storage import sources
from policydesk.storage.clearance import Clearance
from policydesk.storage.models import OPEN_END
from policydesk.storage.scope import scoped_session


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

    def versions(self, doc_ids, clearance: Clearance) -> dict[str, list[VersionInfo]]:
        """Visible versions of each document, oldest first."""
        with scoped_session(self._engine, clearance) as session:
            rows = sources.version_rows(session, doc_ids=doc_ids, clearance=clearance)
        out: dict[str, list[VersionInfo]] = {}
        for r in rows:
            out.setdefault(r.doc_id, []).append(
                VersionInfo(r.doc_id, r.version, r.title, r.effective_from, r.effective_to, r.date_basis,
                            r.superseded_by)
            )
        return out

    def section(self, doc_id: str, version: int, section_id: str, clearance: Clearance) -> TextNode | None:
        with scoped_session(self._engine, clearance) as session:
            rows = sources.section_rows(session, doc_id=doc_id, version=version, clearance=clearance,
                                        section_id=section_id)
        return row_to_node(rows[0].text, rows[0].metadata_) if rows else None

    def sections(self, doc_id: str, version: int, clearance: Clearance) -> list[TextNode]:
        """All sections of one version, in document order."""
        with scoped_session(self._engine, clearance) as session:
            rows = sources.section_rows(session, doc_id=doc_id, version=version, clearance=clearance)
        return [row_to_node(r.text, r.metadata_) for r in rows]
