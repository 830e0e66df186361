"""The version repository: permission-scoped reads of versions and sections, as domain objects.

Used by version resolution, comparison, the disputes checks and the web timelines.

Every read runs on the application engine (`db.app`, no BYPASSRLS) in a session bound to the
caller's clearance, through the statements in `policydesk.storage.sources`, which carry the
access predicate in their own WHERE clause as well.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import NamedTuple

from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from policydesk.storage import sources
from policydesk.storage.clearance import Clearance
from policydesk.storage.models import OPEN_END
from policydesk.storage.pipelined import compiled, scoped_reads
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
    section_rows: dict[tuple[str, int, str], tuple[str, str]]  # -> (text, metadata as JSON text)

    def section(self, doc_id: str, version: int, section_id: str) -> TextNode | None:
        row = self.section_rows.get((doc_id, int(version), section_id))
        return row_to_node(row[0], json.loads(row[1])) if row is not None else None


class VersionRow(NamedTuple):
    doc_id: str
    version: int
    title: str
    effective_from: date
    effective_to: date
    date_basis: str
    superseded_by: int | None


@lru_cache(maxsize=256)
def _read_statements(dialect, clearance: Clearance) -> tuple[tuple[str, dict], tuple[str, dict]]:
    """The two statements of `VersionLookup.reads`, compiled once per clearance."""
    return (compiled(sources.versions_of_statement(clearance), dialect, keep=("doc_ids",)),
            compiled(sources.section_versions_statement(clearance), dialect, keep=("doc_ids", "section_ids")))


@lru_cache(maxsize=256)
def _sections_statement(dialect, clearance: Clearance) -> tuple[str, dict]:
    """`VersionLookup.sections_of`'s statement, compiled once per clearance."""
    return compiled(sources.version_sections_statement(clearance), dialect, keep=("doc_ids", "versions"))


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
        in one transaction and one round trip (`storage/pipelined.py`): version resolution's reads
        for a request, instead of a transaction per swapped chunk."""
        doc_ids, sections = sorted(set(doc_ids)), set(sections)
        if not doc_ids and not sections:
            return VersionReads({}, {})
        versions_sql, sections_sql = _read_statements(self._engine.dialect, clearance)
        version_rows, section_rows = scoped_reads(self._engine, clearance, [
            (versions_sql[0], versions_sql[1] | {"doc_ids": doc_ids}),
            (sections_sql[0], sections_sql[1] | {"doc_ids": sorted({d for d, _ in sections}),
                                                 "section_ids": sorted({s for _, s in sections})}),
        ])
        versions = _version_infos(VersionRow(*r) for r in version_rows)
        found = {(d, int(v), s): (t, m) for d, v, s, t, m in section_rows if (d, s) in sections}
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
        """`sections(doc_id, version)` for each (doc_id, version) key, in one round trip."""
        wanted = {(d, int(v)) for d, v in keys}
        out: dict[tuple[str, int], list[TextNode]] = {k: [] for k in wanted}
        if not wanted:
            return out
        sql, params = _sections_statement(self._engine.dialect, clearance)
        [rows] = scoped_reads(self._engine, clearance, [(sql, params | {
            "doc_ids": sorted({d for d, _ in wanted}), "versions": sorted({v for _, v in wanted})})])
        for doc_id, version, text_value, metadata in rows:
            if (doc_id, int(version)) in wanted:
                out[(doc_id, int(version))].append(row_to_node(text_value, metadata))
        return out
