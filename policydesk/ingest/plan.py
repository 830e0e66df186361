"""One source file, read, screened and chunked: what ingest would write for it. No database.

`ingest_directory` writes these; `policydesk ingest --dry-run` and `policydesk inspect` print them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from policydesk.ingest.chunking import ChunkSpec, chunk_sections
from policydesk.ingest.errors import IngestError
from policydesk.ingest.layout import Block
from policydesk.ingest.manifest import Source
from policydesk.ingest.outline import NO_HEADINGS, build_sections
from policydesk.ingest.readers import read_layout
from policydesk.ingest.screening import screen_blocks
from policydesk.ingest.tokens import TokenBudget


@dataclass
class PlannedSource:
    source: Source
    sha256: str
    doc_title: str = ""
    chunks: list[ChunkSpec] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    header_lines: list[str] = field(default_factory=list)  # letterhead before the first heading, not indexed
    problem: IngestError | None = None  # set when the file is refused

    @property
    def refused(self) -> bool:
        return self.problem is not None


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def plan_source(source: Source, settings, budget: TokenBudget) -> PlannedSource:
    """Read, screen and chunk one source. A bad file is returned with its problem, not raised,
    so every bad file of a corpus can be listed at once."""
    planned = PlannedSource(source, file_sha256(source.path))
    try:
        layout = read_layout(source.path, source.file, max_bytes=settings.MAX_SOURCE_BYTES,
                             max_pages=settings.MAX_PDF_PAGES)
        screened = list(layout.blocks)
        if layout.title:
            screened.insert(0, Block(layout.title, "title"))
        findings = screen_blocks(screened, source.source_type)
        if findings:
            raise IngestError(
                source.file, "file",
                "contains what looks like member PHI - " + "; ".join(f.describe() for f in findings)
                + " - PHI stays out of the index: de-identify and re-export",
            )
        outline = build_sections(layout, source.title)
        if not outline.sections:
            raise IngestError(source.file, "file", "empty document: no text to index")
        warnings = outline.warnings
        if source.source_type == "call_note":
            # Notes are written without headings; saying so for each one is noise.
            warnings = [w for w in warnings if w != NO_HEADINGS]
        planned.doc_title = outline.title
        planned.warnings = warnings
        planned.header_lines = outline.header_lines
        planned.chunks = chunk_sections(source.title, outline.sections, budget)
    except IngestError as exc:
        planned.problem = exc
    return planned
