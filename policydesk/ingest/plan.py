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
from policydesk.ingest.readers.ocr import ocr_options
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
    ocr_pages: dict[int, float] = field(default_factory=dict)  # pages read by OCR -> mean word confidence
    unread: bool = False  # the same bytes as the indexed version: hashed, not read

    @property
    def refused(self) -> bool:
        return self.problem is not None


HASH_BLOCK = 1 << 20


def file_sha256(path: Path, *, max_bytes: int | None = None, file: str | None = None) -> str:
    """The file's SHA-256, read in blocks of HASH_BLOCK bytes. With `max_bytes`, a file larger
    than that is refused (`IngestError` naming `file`) on its size before a byte is read, and
    again if it grows past the limit while being read: memory stays one block whatever the file."""
    label = file or path.name
    if max_bytes is not None:
        size = path.stat().st_size
        if size > max_bytes:
            raise IngestError(label, "file", f"file is {size} bytes; the limit is {max_bytes}")
    digest, read = hashlib.sha256(), 0
    with path.open("rb") as fh:
        while block := fh.read(HASH_BLOCK):
            read += len(block)
            if max_bytes is not None and read > max_bytes:
                raise IngestError(label, "file", f"file grew past the limit of {max_bytes} bytes while it was read")
            digest.update(block)
    return digest.hexdigest()


def plan_source(source: Source, settings, budget: TokenBudget, *, indexed_sha256: str | None = None) -> PlannedSource:
    """Read, screen and chunk one source. A bad file is returned with its problem, not raised,
    so every bad file of a corpus can be listed at once. `indexed_sha256`: the hash of the file
    this version was indexed from; a file with the same bytes is hashed only, never read again
    (no parse, no OCR): it writes nothing, so its `chunks` stay empty and `unread` says why."""
    try:
        sha256 = file_sha256(source.path, max_bytes=settings.MAX_SOURCE_BYTES, file=source.file)
    except IngestError as exc:  # too large: refused on its size, never read
        return PlannedSource(source, "", problem=exc)
    planned = PlannedSource(source, sha256)
    if sha256 == indexed_sha256:
        planned.unread = True
        return planned
    try:
        layout = read_layout(source.path, source.file, max_bytes=settings.MAX_SOURCE_BYTES,
                             max_pages=settings.MAX_PDF_PAGES, ocr=ocr_options(settings))
        planned.ocr_pages = layout.ocr_pages
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
