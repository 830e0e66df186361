"""Read a source file into a Layout (headings and paragraphs), whatever its format.

| suffix            | reader                       | headings from                                  |
|-------------------|------------------------------|------------------------------------------------|
| .pdf              | pypdfium2 (readers/pdf.py)   | font size and weight, ALL CAPS, numbering      |
| .docx             | python-docx (readers/docx.py)| Title / Heading N styles, else bold/caps/numbers|
| .md .markdown     | markdown-it-py               | `#`..`######` and setext, any level            |
| .html .htm        | Beautiful Soup               | h1..h6                                         |
| .txt              | readers/text.py              | one-line ALL CAPS or numbered paragraphs       |

Every refusal is one IngestError naming the file and the reason.
"""

from __future__ import annotations

from pathlib import Path

from policydesk.ingest.errors import IngestError
from policydesk.ingest.layout import Layout

READABLE_SUFFIXES = (".pdf", ".docx", ".md", ".markdown", ".html", ".htm", ".txt")


def _text(path: Path, file: str) -> str:
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(
            file, "file", f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); re-save it as UTF-8"
        ) from None


def read_layout(path: Path, file: str, *, max_bytes: int, max_pages: int, ocr=None) -> Layout:
    """`ocr` (readers.ocr.OcrOptions): read PDF pages with no text layer by OCR; None refuses them."""
    size = path.stat().st_size
    if size == 0:
        raise IngestError(file, "file", "empty file (0 bytes)")
    if size > max_bytes:
        raise IngestError(file, "file", f"file is {size} bytes; the limit is {max_bytes}")
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        from policydesk.ingest.readers.pdf import read_pdf

        return read_pdf(path, file, max_pages=max_pages, ocr=ocr)
    if suffix == ".docx":
        from policydesk.ingest.readers.docx import read_docx

        return read_docx(path, file)
    if suffix in (".md", ".markdown", ".html", ".htm"):
        from policydesk.ingest.readers.markup import read_markup

        return read_markup(path, _text(path, file))
    if suffix == ".txt":
        from policydesk.ingest.readers.text import read_text

        return read_text(_text(path, file))
    raise IngestError(file, "file", f"unsupported file type {suffix or '(none)'} (readable: {', '.join(READABLE_SUFFIXES)})")
