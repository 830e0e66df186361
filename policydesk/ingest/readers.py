"""Read a source file into titled sections. One section becomes one chunk."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from policydesk.ingest.errors import IngestError

PDF_HEADING = re.compile(r"^\d{1,2}\. ([A-Z][A-Za-z0-9 ,/&()'-]{2,70})$")
MD_HEADING = re.compile(r"^##\s+(.+?)\s*$")
HTML_TAG = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class Section:
    title: str
    text: str


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _pdf_text(path: Path, file: str, max_pages: int) -> str:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    with path.open("rb") as fh:
        if fh.read(5) != b"%PDF-":
            raise IngestError(file, "file", "not a PDF (missing %PDF- header)")
    try:
        reader = PdfReader(str(path))
        if len(reader.pages) > max_pages:
            raise IngestError(file, "file", f"PDF has {len(reader.pages)} pages; the limit is {max_pages}")
        return "\n".join(page.extract_text() or "" for page in reader.pages)
    except (PdfReadError, ValueError, KeyError, OSError) as exc:
        if isinstance(exc, IngestError):
            raise
        raise IngestError(file, "file", f"not a readable PDF ({exc.__class__.__name__}: {exc})") from None


def _split(lines: list[str], heading: re.Pattern) -> list[Section]:
    sections: list[Section] = []
    title, body = None, []
    for line in lines + [None]:
        match = heading.match(line) if line is not None else None
        if line is None or match:
            if title is not None:
                text = " ".join(" ".join(body).split())
                if text:
                    sections.append(Section(title, f"{title}\n{text}"))
            if match:
                title, body = match.group(1).strip(), []
        elif title is not None:
            body.append(line)
    return sections


def read_sections(path: Path, file: str, source_type: str, *, max_bytes: int, max_pages: int) -> list[Section]:
    size = path.stat().st_size
    if size > max_bytes:
        raise IngestError(file, "file", f"file is {size} bytes; the limit is {max_bytes}")
    if source_type == "policy":
        lines = [ln.strip() for ln in _pdf_text(path, file, max_pages).splitlines()]
        sections = _split(lines, PDF_HEADING)
    else:
        try:
            raw = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise IngestError(file, "file", "not UTF-8 text") from None
        if path.suffix.lower() in (".html", ".htm"):
            raw = re.sub(r"<h2[^>]*>(.*?)</h2>", r"\n## \1\n", raw, flags=re.I | re.S)
            raw = HTML_TAG.sub(" ", raw)
        lines = [ln.strip() for ln in raw.splitlines()]
        if source_type == "wiki":
            sections = _split(lines, MD_HEADING)
        else:
            nonblank = [ln for ln in lines if ln]
            text = " ".join(" ".join(nonblank[1:]).split()) if nonblank else ""
            sections = [Section(nonblank[0], f"{nonblank[0]}\n{text}")] if text else []
    if not sections:
        raise IngestError(file, "file", "empty document: no sections with text were found")
    seen: set[str] = set()
    for s in sections:
        if slug(s.title) in seen:
            raise IngestError(file, "file", f"section title {s.title!r} appears twice")
        seen.add(slug(s.title))
    return sections
