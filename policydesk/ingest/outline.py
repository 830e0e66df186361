"""From a Layout to titled sections: the same rules for every format.

- The document title is the Layout's title, or a first heading that outranks every other
  heading (a Markdown `# Title` over `##` sections, a large first line in a PDF). It names the
  document; it is not part of any section path.
- Text before the first section heading (a purpose or scope preamble) is kept as its own
  section, titled with the document title. Lines there that are not prose (a version line,
  a document number, a date: no sentence in them) are the document's letterhead: they change
  with every version and answer nothing, so they are listed as `header_lines`, not indexed.
- Nesting is kept: a section's path is every heading above it ("Coordination", "Exceptions").
- A document with text but no headings is one section (the chunker then splits it by
  paragraphs), with the warning NO_HEADINGS.
- Section ids are the slug of the section's own title, made unique in document order
  (`exceptions`, `exceptions-2`), so renumbering or re-nesting a heading keeps its id and a
  re-read of an unchanged file yields the same ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from policydesk.ingest.layout import Block, Layout

NO_HEADINGS = "no headings found; split by paragraphs"
PATH_SEPARATOR = " \u203a "  # "Coordination › Exceptions"


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


@dataclass(frozen=True)
class Section:
    path: tuple[str, ...]
    section_id: str
    paragraphs: tuple[str, ...]
    where: str  # where its first text is in the file
    # Per paragraph, (word index, page) where each of its pages begins (Block.pages); empty for a
    # format without pages.
    pages: tuple[tuple[tuple[int, int], ...], ...] = ()

    @property
    def title(self) -> str:
        return self.path[-1]

    @property
    def heading(self) -> str:
        """The heading path as one line; the first line of every chunk of this section."""
        return PATH_SEPARATOR.join(self.path)

    @property
    def text(self) -> str:
        return f"{self.heading}\n{' '.join(' '.join(self.paragraphs).split())}"


def _document_title(layout: Layout) -> tuple[str | None, list[Block]]:
    blocks = layout.blocks
    if layout.title:
        if blocks and blocks[0].is_heading and blocks[0].text == layout.title:
            return layout.title, blocks[1:]
        return layout.title, blocks
    if blocks and blocks[0].is_heading:
        first = blocks[0].level
        if all(b.level > first for b in blocks[1:] if b.is_heading):
            return blocks[0].text, blocks[1:]
    return None, blocks


_SENTENCE_END = re.compile(r"[.!?]['\")\]]?(?:\s|$)")
MIN_PROSE_WORDS = 4


def is_prose(text: str) -> bool:
    return len(text.split()) >= MIN_PROSE_WORDS and _SENTENCE_END.search(text) is not None


@dataclass
class Outline:
    title: str
    sections: list[Section]  # empty means the file has no text
    warnings: list[str] = field(default_factory=list)
    header_lines: list[str] = field(default_factory=list)


def build_sections(layout: Layout, fallback_title: str) -> Outline:
    found, blocks = _document_title(layout)
    title = found or fallback_title
    outline = Outline(title, [], list(layout.warnings))
    has_headings = any(b.is_heading for b in blocks)
    if not has_headings and any(not b.is_heading for b in blocks):
        outline.warnings.append(NO_HEADINGS)
    raw: list[tuple[tuple[str, ...], list[str], str, list]] = []
    stack: list[tuple[int, str]] = []
    current: tuple[tuple[str, ...], list[str], str, list] | None = None
    for block in blocks:
        if block.is_heading:
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.text))
            current = (tuple(t for _, t in stack), [], block.where, [])
            raw.append(current)
            continue
        if current is None:
            if has_headings and not is_prose(block.text):
                outline.header_lines.append(block.text)
                continue
            current = ((title,), [], block.where, [])
            raw.append(current)
        current[1].append(block.text)
        current[3].append(block.pages)
    sections = outline.sections
    taken: set[str] = set()
    for path, paragraphs, where, pages in raw:
        if not paragraphs:
            continue  # a heading with only subsections under it lives on in their paths
        base = slug(path[-1]) or "section"
        section_id, n = base, 1
        while section_id in taken:
            n += 1
            section_id = f"{base}-{n}"
        taken.add(section_id)
        sections.append(Section(path, section_id, tuple(paragraphs), where, tuple(pages) if any(pages) else ()))
    return outline
