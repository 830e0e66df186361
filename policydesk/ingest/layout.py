"""What every reader returns: a document as one flat run of headings and paragraphs.

Readers know their format (fonts, Word styles, Markdown syntax, HTML tags); nothing after them
does. `outline.build_sections` turns a Layout into titled sections, the same way for every format.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Block:
    """A heading (level >= 1, 1 outermost) or a paragraph of body text (level 0)."""

    text: str
    where: str  # how an operator finds it in the file: "line 12", "page 2", "paragraph 7"
    level: int = 0
    # (word index in `text`, page number) where each page of a paragraph begins, first word
    # first; empty for a format without pages. A citation opens its source at these pages.
    pages: tuple[tuple[int, int], ...] = ()

    @property
    def is_heading(self) -> bool:
        return self.level > 0


@dataclass
class Layout:
    blocks: list[Block]
    # The document's own title when the format says which line it is (a Word "Title" paragraph,
    # an HTML <title>, a text file's first line); None lets the outline decide from the headings.
    title: str | None = None
    warnings: list[str] = field(default_factory=list)
    # Pages read by OCR (no text layer): page number -> mean word confidence, 0-100 (readers/ocr.py).
    ocr_pages: dict[int, float] = field(default_factory=dict)
