"""Word (.docx) through python-docx: headings from paragraph styles, then from direct formatting.

Levels, outermost first: the "Title" style, "Heading 1".."Heading 9" (or any style based on
one, or carrying an outline level), then short paragraphs that are entirely bold, ALL CAPS or
numbered, as people who do not use heading styles write them. Tables are read row by row
("cell | cell"), in document order with the paragraphs.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from policydesk.ingest.errors import IngestError
from policydesk.ingest.headings import clean_title, is_all_caps, is_title_like, numbering, rank_levels
from policydesk.ingest.layout import Block, Layout

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_OLE_SIGNATURE = b"\xd0\xcf\x11\xe0"  # encrypted .docx and legacy .doc are OLE compound files


def _style_level(paragraph) -> int | None:
    """1 for Title, 2..10 for Heading 1..9 (directly, by inheritance or by outline level)."""
    style = paragraph.style
    while style is not None:
        name = (style.name or "").strip()
        if name.lower() == "title":
            return 1
        m = _HEADING_STYLE.match(name)
        if m:
            return int(m.group(1)) + 1
        ppr = style.element.pPr
        outline = ppr.find(f"{_W}outlineLvl") if ppr is not None else None
        if outline is not None and outline.get(f"{_W}val", "9").isdigit() and int(outline.get(f"{_W}val")) < 9:
            return int(outline.get(f"{_W}val")) + 2  # outline level 0 is a Heading 1
        style = style.base_style
    return None


def _all_bold(paragraph) -> bool:
    runs = [r for r in paragraph.runs if r.text.strip()]
    if not runs:
        return False

    def bold(run) -> bool:
        if run.bold is not None:
            return bool(run.bold)
        style = paragraph.style
        while style is not None:
            if style.font.bold is not None:
                return bool(style.font.bold)
            style = style.base_style
        return False

    return all(bold(r) for r in runs)


def _open(path: Path, file: str):
    from docx import Document
    from docx.opc.exceptions import PackageNotFoundError

    with path.open("rb") as fh:
        head = fh.read(4)
    if head == _OLE_SIGNATURE:
        raise IngestError(file, "file", "password-protected or legacy Word file; save an unprotected .docx")
    try:
        return Document(str(path))
    except (zipfile.BadZipFile, PackageNotFoundError, KeyError, ValueError) as exc:
        raise IngestError(file, "file", f"not a readable Word document ({exc.__class__.__name__})") from None
    except Exception as exc:  # lxml raises XMLSyntaxError for a damaged part
        if exc.__class__.__name__ == "XMLSyntaxError":
            raise IngestError(file, "file", "not a readable Word document (damaged XML)") from None
        raise


def read_docx(path: Path, file: str) -> Layout:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    doc = _open(path, file)
    items: list[tuple[str, str, tuple | None]] = []  # (text, where, heading style key)
    title = None
    n = 0
    for child in doc.element.body.iterchildren():
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "p":
            n += 1
            p = Paragraph(child, doc)
            text = " ".join(p.text.split())
            if not text:
                continue
            level = _style_level(p)
            if level == 1 and title is None and not items:
                title = clean_title(text)
                continue
            key = None
            if level is not None:
                key = (0, level, 0)
            elif is_title_like(text):
                depth, _ = numbering(text)
                caps, bold = is_all_caps(text), _all_bold(p)
                if bold or caps or depth:
                    key = (1, not bold, not caps, depth)
            items.append((text, f"paragraph {n}", key))
        elif tag == "tbl":
            n += 1
            for row in Table(child, doc).rows:
                cells = []
                for cell in row.cells:
                    t = " ".join(cell.text.split())
                    if t and t not in cells:  # merged cells repeat their text
                        cells.append(t)
                if cells:
                    items.append((" | ".join(cells), f"table at paragraph {n}", None))
    # Direct formatting counts only in a document without heading styles (as numbering alone
    # does in a PDF): a bold sentence inside a styled document is emphasis, not a section.
    if any(k and k[0] == 0 for _, _, k in items):
        items = [(t, w, k if k and k[0] == 0 else None) for t, w, k in items]
    keys = [k for _, _, k in items if k]
    ranks = iter(rank_levels(keys))
    blocks = [Block(clean_title(t), w, next(ranks)) if k else Block(t, w) for t, w, k in items]
    return Layout(blocks, title=title)
