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


@dataclass
class VersionReads:
    """What version resolution reads for one request, fetched together: the visible versions of
    each document, and every visible version of the sections in context (so a swap to the
    version that applied needs no further read). Nodes are built only for rows asked for."""

    versions: dict[str, list[VersionInfo]]
    section_rows: dict[tuple[str, int, str], tuple[str, dict]]

    def section(self, doc_id: str, version: int, section_id: str) -> TextNode | None:
        row = self.section_rows.get((doc_id, int(version), section_id))
        return row_to_node(*row) if row is not None else None


def _version_infos(rows) -> dict[str, list[VersionInfo]]:
    out: dict[str, list[VersionInfo]] = {}
    for r in rows:
        out.setdefault(r.doc_id, []).append(
            VersionInfo(r.doc_id, r.version, r.title, r.effective_from, r.effective_to, r.date_basis, r.superseded_by))
    return out


class VersionLookup:
    def __init__(self, db) -> None:
        self._engine = db.app

    def versions(self, doc_ids, clearance: Clearance) -> dict[str, list[VersionInfo]]:
        """Visible versions of each document, oldest first."""
        with scoped_session(self._engine, clearance) as session:
            rows = sources.version_rows(session, doc_ids=doc_ids, clearance=clearance)
        return _version_infos(rows)

    def reads(self, doc_ids, sections, clearance: Clearance) -> VersionReads:
        """`versions(doc_ids)` and every visible version of the (doc_id, section_id) `sections`,
        in one transaction: version resolution's reads for a request, in two statements instead
        of one transaction per swapped chunk."""
        doc_ids, sections = set(doc_ids), set(sections)
        if not doc_ids and not sections:
            return VersionReads({}, {})
        with scoped_session(self._engine, clearance) as session:
            versions = _version_infos(sources.version_rows(session, doc_ids=doc_ids, clearance=clearance))
            rows = session.execute(sources.section_versions_statement(sections, clearance)).all() if sections else []
        found = {(r.doc_id, int(r.version), r.section_id): (r.text, r.metadata_) for r in rows
                 if (r.doc_id, r.section_id) in sections}
        return VersionReads(versions, found)

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

    def sections_of(self, keys, clearance: Clearance) -> dict[tuple[str, int], list[TextNode]]:
        """`sections(doc_id, version)` for each (doc_id, version) key, in one read."""
        wanted = {(d, int(v)) for d, v in keys}
        out: dict[tuple[str, int], list[TextNode]] = {k: [] for k in wanted}
        if not wanted:
            return out
        with scoped_session(self._engine, clearance) as session:
            rows = session.execute(sources.version_sections_statement(wanted, clearance)).all()
        for r in rows:
            key = (r.doc_id, int(r.version))
            if key in wanted:
                out[key].append(row_to_node(r.text, r.metadata_))
        return out
