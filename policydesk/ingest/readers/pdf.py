"""PDF: lines with their font size and weight from PDFium (pypdfium2), then headings by style.

Why pypdfium2 (Apache-2.0 / BSD-3): it gives every character's font name, size and position,
and it reads lines with fonts several times faster than pdfplumber with the same headings found
(docs/ingest.md). PyMuPDF is AGPL.

A line is a heading when it is short, does not end like a sentence, stands apart from the
paragraph above it, and is set larger than body text, in bold, in ALL CAPS, or numbered
("2." / "2.1"). Heading styles are ranked (larger first, then bold, then caps, then numbering
depth) into levels. Lines repeated at the top or bottom of most pages (running headers,
"Page 3 of 9") are dropped.
"""

from __future__ import annotations

import ctypes
import re
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from policydesk.ingest.errors import IngestError
from policydesk.ingest.headings import clean_title, is_all_caps, is_title_like, numbering, rank_levels
from policydesk.ingest.layout import Block, Layout

_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demibold|demi\b", re.IGNORECASE)
_FORCE_BOLD = 1 << 18  # PDF font descriptor flag ForceBold (bit 19)
_LARGER = 1.08  # larger type alone marks a heading from one point up on 11-12 pt body text (12/11 = 1.09)
_PARAGRAPH_GAP = 1.35  # a line spacing this much above the usual one starts a paragraph
_MARGIN_BAND = 0.1  # running headers/footers live in the top and bottom tenth of a page
_ENDS_SENTENCE = re.compile(r"[.!?:]['\")\]]?$")
# PDFium reports a soft hyphen at a line end as U+0002; typeset ligatures are single characters.
_CHAR_FIXES = {"\x00": "", "\x02": "-", "\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl"}


@dataclass
class Line:
    text: str
    page: int
    size: float
    bold: bool
    top: float  # distance from the top of the page, points
    page_height: float
    gap_before: float = 0.0  # top - previous line's top on the same page; 0 at a page start


def _open(path: Path, file: str):
    import pypdfium2 as pdfium

    with path.open("rb") as fh:
        if fh.read(5) != b"%PDF-":
            raise IngestError(file, "file", "not a PDF (missing %PDF- header)")
    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise IngestError(file, "file", "PDF is password-protected; export an unprotected copy") from None
        raise IngestError(file, "file", f"not a readable PDF ({exc})") from None


def _page_chars(tp) -> Sequence[str]:
    """The page's characters, one per PDFium character index, read in one call.

    PDFium counts a character outside the BMP (an emoji) as two, its UTF-16 surrogates: the pair
    becomes the character at the first index and "" at the second, so text and styles stay
    aligned; a surrogate without its pair becomes U+FFFD (the tokenizer refuses lone surrogates)."""
    import pypdfium2.raw as pdfium_c

    count = pdfium_c.FPDFText_CountChars(tp)
    buf = ctypes.create_string_buffer(2 * (count + 1))
    if pdfium_c.FPDFText_GetText(tp, 0, count, ctypes.cast(buf, ctypes.POINTER(ctypes.c_ushort))) == count + 1:
        text = buf.raw[: 2 * count].decode("utf-16-le", "surrogatepass")
        if len(text) == count and _no_surrogates(text):
            return text
        codes = list(array("H", buf.raw[: 2 * count]))
    else:  # not one unit per character: ask for each one
        codes = [pdfium_c.FPDFText_GetUnicode(tp, i) for i in range(count)]
    chars = [chr(c) for c in codes]
    for i, c in enumerate(codes):
        if 0xD800 <= c < 0xDC00 and i + 1 < count and 0xDC00 <= codes[i + 1] < 0xE000:
            chars[i], chars[i + 1] = chr(0x10000 + ((c - 0xD800) << 10) + (codes[i + 1] - 0xDC00)), ""
        elif 0xD800 <= c < 0xE000 and chars[i]:
            chars[i] = "\ufffd"
    return chars


def _no_surrogates(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _page_lines(page, number: int) -> list[Line]:
    import pypdfium2.raw as pdfium_c

    textpage = page.get_textpage()
    tp = textpage.raw
    height = page.get_height()
    lines: list[Line] = []
    chars: list[str] = []
    sizes: list[float] = []
    bolds: list[bool] = []
    top = None
    name = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    left, right, bottom, upper = (ctypes.c_double() for _ in range(4))
    # Font size, name, flags and weight belong to the text object a character was drawn by, so
    # they are read once per object (a run of text, often a whole line), not once per character;
    # tests/test_ingest_formats.py checks the lines equal those read character by character.
    styles: dict[bytes, tuple[float, bool]] = {}

    def style(i: int) -> tuple[float, bool]:
        size = round(pdfium_c.FPDFText_GetFontSize(tp, i), 1)
        pdfium_c.FPDFText_GetFontInfo(tp, i, name, len(name), ctypes.byref(flags))
        weight = pdfium_c.FPDFText_GetFontWeight(tp, i)
        return size, bool(_BOLD_NAME.search(name.value.decode("latin-1")) or flags.value & _FORCE_BOLD or weight >= 600)

    def flush() -> None:
        text = " ".join("".join(chars).split())
        if text and sizes:
            size = Counter(sizes).most_common(1)[0][0]
            lines.append(Line(text, number, size, sum(bolds) >= 0.8 * len(bolds), top or 0.0, height))
        chars.clear(), sizes.clear(), bolds.clear()

    for i, ch in enumerate(_page_chars(tp)):
        ch = _CHAR_FIXES.get(ch, ch)
        if ch in ("\r", "\n"):
            if ch == "\n" or not chars:
                flush()
                top = None
            continue
        chars.append(ch)
        if ch.isspace() or not ch:
            continue
        if top is None:
            pdfium_c.FPDFText_GetCharBox(tp, i, left, right, bottom, upper)
            top = height - upper.value
        obj = pdfium_c.FPDFText_GetTextObject(tp, i)
        if not obj:  # a character PDFium generated: no object to share
            size, bold = style(i)
        elif (size_bold := styles.get(key := bytes(obj))) is not None:  # the object's address
            size, bold = size_bold
        else:
            size, bold = styles[key] = style(i)
        sizes.append(size)
        bolds.append(bold)
    flush()
    textpage.close()
    for prev, line in zip(lines, lines[1:]):
        line.gap_before = line.top - prev.top
    return lines


def _drop_running_lines(lines: list[Line], pages: int) -> list[Line]:
    """Remove running headers and footers: the same text (digits aside) near the page edge on most pages."""
    if pages < 2:
        return lines

    def key(line: Line) -> str | None:
        edge = line.top < line.page_height * _MARGIN_BAND or line.top > line.page_height * (1 - _MARGIN_BAND)
        return re.sub(r"\d+", "#", line.text.lower()) if edge else None

    seen = Counter(k for k in {(key(ln), ln.page) for ln in lines} if k[0] is not None)
    by_text = Counter(k for k, _ in seen)
    running = {k for k, n in by_text.items() if n >= max(2, pages // 2 + pages % 2)}
    return [ln for ln in lines if key(ln) not in running]


def _line_spacing(lines: list[Line]) -> float:
    """The usual distance between two lines of one paragraph: the lower quartile of all line
    spacings (paragraph and heading gaps are the larger ones)."""
    spacings = sorted(ln.gap_before for ln in lines if ln.gap_before > 0)
    return spacings[len(spacings) // 4] if spacings else 0.0


def _headings(lines: list[Line]) -> list[tuple | None]:
    """A style key per line for headings, None for body lines."""
    body_chars = Counter()
    for ln in lines:
        body_chars[(ln.size, ln.bold)] += len(ln.text)
    body_size, _ = body_chars.most_common(1)[0][0]
    usual = _line_spacing(lines)
    keys: list[tuple | None] = []
    styled: list[bool] = []
    for i, ln in enumerate(lines):
        prev = lines[i - 1] if i else None
        apart = prev is None or prev.page != ln.page or ln.gap_before > usual * _PARAGRAPH_GAP or (
            prev.size, prev.bold) != (ln.size, ln.bold) or _ENDS_SENTENCE.search(prev.text) is not None
        depth, _ = numbering(ln.text)
        caps = is_all_caps(ln.text)
        has_style = ln.size >= body_size * _LARGER or (ln.bold and ln.size >= body_size * 0.95) or caps
        heading = apart and is_title_like(ln.text) and (has_style or depth > 0)
        keys.append((-round(ln.size), not ln.bold, not caps, depth) if heading else None)
        styled.append(heading and has_style)
    # Numbering alone (body font, not caps) marks headings only in a document that has no styled
    # ones; otherwise "1. Call the member back" in a list would become a section.
    if any(styled):
        keys = [k if s else None for k, s in zip(keys, styled)]
    return keys


def read_pdf(path: Path, file: str, *, max_pages: int, ocr=None) -> Layout:
    """`ocr` (readers.ocr.OcrOptions): pages with no text layer are read by OCR; None refuses them."""
    pdf = _open(path, file)
    scanned = None
    try:
        pages = len(pdf)
        if pages > max_pages:
            raise IngestError(file, "file", f"PDF has {pages} pages; the limit is {max_pages}")
        by_page = [_page_lines(pdf[n], n + 1) for n in range(pages)]
        if ocr is not None and not all(by_page):
            from policydesk.ingest.readers.ocr import read_scanned

            scanned = read_scanned(pdf, by_page, ocr, file, Line)  # fills the pages with no text layer
        lines = [ln for page_lines in by_page for ln in page_lines]
    finally:
        pdf.close()
    if not lines:
        raise IngestError(file, "file", "PDF has no text layer (a scanned image?); run OCR and export a PDF with text")
    layout = layout_from_lines(lines, pages)
    if scanned is not None:
        scanned.annotate(layout)
    return layout


def layout_from_lines(lines: list[Line], pages: int) -> Layout:
    """Headings and paragraphs from styled lines (any PDF library's lines, so another reader can reuse the rules)."""
    lines = _drop_running_lines(lines, pages)
    keys = _headings(lines)
    levels = dict(zip([i for i, k in enumerate(keys) if k], rank_levels([k for k in keys if k])))
    blocks: list[Block] = []
    para: list[str] = []
    # (word index in the paragraph, page) where each of its pages begins: a citation opens there.
    pages: list[tuple[int, int]] = []
    words = 0
    where = ""
    usual = _line_spacing([ln for ln, k in zip(lines, keys) if k is None])

    def flush() -> None:
        nonlocal words
        if para:
            blocks.append(Block(" ".join(para), where, pages=tuple(pages)))
            para.clear()
        pages.clear()
        words = 0

    for i, (ln, key) in enumerate(zip(lines, keys)):
        if key is not None:
            flush()
            prev = blocks[-1] if blocks else None
            # A heading wrapped onto two lines: same level, right below the first part.
            if prev and prev.level == levels[i] and keys[i - 1] is not None and lines[i - 1].page == ln.page \
                    and ln.gap_before <= ln.size * 1.6:
                blocks[-1] = Block(clean_title(f"{prev.text} {ln.text}"), prev.where, prev.level)
            else:
                blocks.append(Block(clean_title(ln.text), f"page {ln.page}", levels[i]))
            continue
        if not para:
            new_para = True
        elif lines[i - 1].page != ln.page:  # a paragraph runs on over a page break mid-sentence
            new_para = _ENDS_SENTENCE.search(para[-1]) is not None
        else:
            new_para = usual > 0 and ln.gap_before > usual * _PARAGRAPH_GAP
        if new_para:
            flush()
            where = f"page {ln.page}"
        joined = bool(para) and para[-1].endswith("-") and ln.text[:1].islower()
        if not pages or pages[-1][1] != ln.page:
            pages.append((words - joined, ln.page))
        words += len(ln.text.split()) - joined
        if joined:
            para[-1] = para[-1][:-1] + ln.text  # a word hyphenated across lines
        else:
            para.append(ln.text)
    flush()
    return Layout(blocks)
