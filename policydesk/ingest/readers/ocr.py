"""OCR for PDF pages with no text layer (scans, faxes): tesseract's words, as the PDF reader's lines.

Why the tesseract CLI (Debian's tesseract-ocr 5.3, run as a subprocess) and not a binding:
its TSV output gives every word's box and confidence, which is all this needs; pytesseract only
wraps the same command, and tesserocr must be built against the installed library. Nothing is
downloaded: the English data ships with the Debian package.

A page is rendered at `OCR_DPI`, deskewed (the angle whose row profile is sharpest), despeckled
(3x3 median) and read as one block of text (`--psm 6`) with `OMP_THREAD_LIMIT=1`: one core per
page, so serving keeps the other, and the same file gives the same words. The words become `Line`s
like the text layer's, so the same heading, paragraph and running-header rules apply:

- size: from the median x-height of the line's lower-case words (the band of rows holding most of
  a word's ink, which specks and ascenders don't move), over 0.52 of the font size; sizes within
  6% of each other are one type size (measuring noise must not make a body line or one of several
  same-level headings look larger);
- bold: the median run of ink along a row (a vertical stroke's width) at least 1.3 times the body's
  (body size and stroke are the whole file's medians);
- top and gap: where the x-height band starts, so paragraph breaks come from line spacing as in a PDF.
  Tesseract 5 reports no font, so this is all the style a scan has: italics and colour are lost.

A line starting in the outer `EDGE_INCHES` of the page is outside any document's print margin:
it is the fax machine's transmission line or a scanner's imprint, left out and listed as a warning.
The page's confidence is the mean of its words' confidences (0-100).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from statistics import median

from policydesk.ingest.errors import IngestError

X_HEIGHT = 0.52  # x-height / font size in the usual sans faces (Helvetica 0.52, Arial 0.52)
SAME_SIZE = 0.06  # within this share of the body size, a line is body size (measuring noise)
BOLD_STROKE = 1.3  # a stroke this many times the body's marks a bold line
EDGE_INCHES = 0.4  # no document prints this close to the paper's edge
BLANK_INK = 0.002  # a page with less ink than this (share of dark pixels) is blank
DESPECKLE = 3  # median filter size: takes fax specks off before tesseract (CER 3-4% -> 0-0.2% on clean pages)
MAX_SKEW = 5.0  # degrees searched when deskewing
NOISE_CONFIDENCE = 60.0  # a punctuation-only word under this is a speck read as a character
# A word of up to 4 characters read under 50 on a page read at 80 or more is a scrap of a stamp
# crossing a line (the stamped page 1 of five fax-quality scans: mean CER 0.0051 -> 0.0019, none worse).
SCRAP_CHARS, SCRAP_CONFIDENCE, SCRAP_PAGE_CONFIDENCE = 4, 50.0, 80.0
FRAGMENT_WORDS = 4  # a line of fewer words, read with much less confidence than its page, is a stamp or mark
# Page segmentation: one uniform block of text. The automatic layout analysis (--psm 3) took the
# paragraph a stamp overlapped for a picture and returned no words for it; a policy page is one
# column, and a table is read row by row, as the text layer reads it.
PSM = "6"


@dataclass(frozen=True)
class OcrOptions:
    dpi: int = 300
    language: str = "eng"
    command: str = "tesseract"
    flag_below: float = 80.0  # a page under this mean word confidence is flagged
    unreadable_below: float = 35.0  # a page with ink and a confidence under this is refused
    timeout: float = 120.0


def ocr_options(settings) -> OcrOptions:
    return OcrOptions(dpi=settings.OCR_DPI, language=settings.OCR_LANGUAGE, command=settings.OCR_COMMAND,
                      flag_below=settings.OCR_FLAG_BELOW, unreadable_below=settings.OCR_UNREADABLE_BELOW,
                      timeout=settings.OCR_TIMEOUT_SECONDS)


@dataclass
class PageOcr:
    page: int
    confidence: float  # mean word confidence, 0-100; 0 for a page with no words
    words: int
    skew: float = 0.0
    height: float = 0.0  # points
    blank: bool = False
    measured: list[tuple[str, float, float, float]] = field(default_factory=list)  # text, top, size, stroke
    lines: list = field(default_factory=list)  # the PDF reader's Lines, from set_lines
    edge_lines: list[str] = field(default_factory=list)  # left out: outside the print margin
    fragments: list[str] = field(default_factory=list)  # left out: a few doubtful words (a stamp, a mark)


def _deskew(img, dpi: int):
    """The page turned upright: the angle (0.2 degree steps) whose row sums vary most."""
    import numpy as np
    from PIL import Image

    scale = 100 / dpi
    small = img.resize((max(1, int(img.width * scale)), max(1, int(img.height * scale))), Image.BILINEAR)
    ink = small.point(lambda v: 255 if v < 160 else 0)
    best, best_score = 0.0, -1.0
    for step in range(int(-MAX_SKEW * 5), int(MAX_SKEW * 5) + 1):
        angle = step / 5
        rows = np.asarray(ink.rotate(angle, resample=Image.NEAREST), dtype=np.float64).sum(axis=1)
        score = float(np.square(np.diff(rows)).sum())
        if score > best_score + 1e-6:
            best, best_score = angle, score
    if best == 0.0:
        return img, 0.0
    return img.rotate(best, resample=Image.BICUBIC, fillcolor=255), best


def _glyphs(box) -> tuple[float, float, float]:
    """(x-height, stroke width, x-height band's top row) of one word's ink, in pixels: the rows holding at least 60% of the
    busiest row's ink (the x-height band: specks and ascenders don't reach it), and the median run
    of dark pixels along a row (a vertical stroke's width: bold strokes are wider)."""
    import numpy as np

    if box.size == 0 or not box.any():
        return 0.0, 0.0, 0.0
    rows = box.sum(axis=1)
    band = np.flatnonzero(rows >= 0.6 * rows.max())
    padded = np.pad(box.astype(np.int8), ((0, 0), (1, 1)))
    edges = np.diff(padded, axis=1)
    starts, ends = np.nonzero(edges == 1), np.nonzero(edges == -1)
    runs = ends[1] - starts[1]  # row-major order pairs each run's start with its end
    return float(band[-1] - band[0] + 1), float(np.median(runs)) if runs.size else 0.0, float(band[0])


def _tesseract(png: bytes, options: OcrOptions, file: str, number: int) -> str:
    exe = shutil.which(options.command)
    if exe is None:
        raise IngestError(file, f"page {number}", (
            f"no text layer, and OCR is not available ({options.command!r} not found: install tesseract-ocr "
            "and tesseract-ocr-eng, or set POLICYDESK_OCR_COMMAND); or export a PDF with text"))
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run([exe, "stdin", "stdout", "--dpi", str(options.dpi), "--psm", PSM, "-l", options.language,
                               "tsv"],
                              input=png, capture_output=True, timeout=options.timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        raise IngestError(file, f"page {number}", f"OCR took over {options.timeout:g} s; split the file") from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise IngestError(file, f"page {number}", f"OCR failed (tesseract exit {done.returncode}: {why[0]})")
    return done.stdout.decode("utf-8", "replace")


def _words(tsv: str) -> dict[tuple[int, int, int], list[tuple[str, float, int, int, int, int]]]:
    """Words by (block, paragraph, line), in reading order: (text, conf, left, top, width, height)."""
    lines: dict[tuple[int, int, int], list] = {}
    for row in tsv.splitlines()[1:]:
        cols = row.split("\t")
        if len(cols) < 12 or cols[0] != "5":
            continue
        text, conf = cols[11].strip(), float(cols[10])
        if not text or conf < 0:
            continue
        left, top, width, height = (int(c) for c in cols[6:10])
        lines.setdefault((int(cols[2]), int(cols[3]), int(cols[4])), []).append((text, conf, left, top, width, height))
    return lines


def ocr_page(page, number: int, options: OcrOptions, file: str) -> PageOcr:
    """Render, deskew and read one PDF page (a pypdfium2 page); its lines are measured, and made
    `Line`s by `set_lines` once every page of the file is read."""
    import io

    import numpy as np

    img = page.render(scale=options.dpi / 72, grayscale=True).to_pil().convert("L")
    dark = np.asarray(img) < 128
    if dark.mean() < BLANK_INK:
        return PageOcr(number, 0.0, 0, blank=True)
    img, skew = _deskew(img, options.dpi)
    if DESPECKLE:
        from PIL import ImageFilter

        img = img.filter(ImageFilter.MedianFilter(DESPECKLE))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    found = _words(_tesseract(buf.getvalue(), options, file, number))
    dark = np.asarray(img) < 128
    pt = 72 / options.dpi
    edge = EDGE_INCHES * 72
    confs = [w[1] for words in found.values() for w in words]
    result = PageOcr(number, round(sum(confs) / len(confs), 1) if confs else 0.0, len(confs), skew=skew,
                     height=img.height * pt)
    for words in found.values():
        # A mark read as punctuation with little confidence is noise, not text; so is a scrap of a
        # few letters read with little confidence on a page read well (a stamp crossing a line).
        words = [w for w in words if (any(c.isalnum() for c in w[0]) or w[1] >= NOISE_CONFIDENCE) and not (
            len(w[0]) <= SCRAP_CHARS and w[1] < SCRAP_CONFIDENCE and result.confidence >= SCRAP_PAGE_CONFIDENCE)]
        if not words:
            continue
        top = min(w[3] for w in words) * pt
        bottom = max(w[3] + w[5] for w in words) * pt
        text = " ".join(w[0] for w in words)
        if top < edge or bottom > result.height - edge:
            result.edge_lines.append(text)
            continue
        alnum = [w[1] for w in words if any(c.isalnum() for c in w[0])]
        if len(alnum) < FRAGMENT_WORDS and median(alnum or [0.0]) < min(NOISE_CONFIDENCE + 20, result.confidence - 15):
            result.fragments.append(text)  # a few doubtful words on a page read well: a stamp or a mark
            continue
        # x-height from words mostly in lower case (digits and capitals stand taller), if the line has any
        lower = [w for w in words if len(w[0]) >= 2 and sum(c.islower() for c in w[0]) >= 0.6 * len(w[0])]
        marks = [(*_glyphs(dark[w[3]:w[3] + w[5], w[2]:w[2] + w[4]]), w[3])
                 for w in (lower or [w for w in words if len(w[0]) >= 2])]
        marks = [m for m in marks if m[0] > 0]
        if marks:  # the line's place: where its x-height band starts (specks don't move it)
            top = median(m[2] + m[3] for m in marks) * pt
        else:
            marks = [(max(w[5] for w in words) * X_HEIGHT, 0.0)]
        result.measured.append((text, top, median(m[0] for m in marks) * pt / X_HEIGHT, median(m[1] for m in marks)))
    result.measured.sort(key=lambda r: r[1])
    return result


def _size_classes(sizes: list[float], body: float) -> dict[float, float]:
    """Each measured size -> its class's: sizes within SAME_SIZE of the smallest in a run are one
    type size (measuring noise), set to the run's median; the body's run is set to the body size."""
    out: dict[float, float] = {}
    run: list[float] = []

    def close() -> None:
        value = body if run[0] <= body <= run[-1] else median(run)
        out.update({v: value for v in run})

    for size in sorted(sizes):
        if run and size > run[0] * (1 + SAME_SIZE):
            close()
            run = []
        run.append(size)
    close()
    return out


def set_lines(pages: list[PageOcr], text_lines: list, line_type) -> None:
    """Each OCR'd page's `Line`s, sized and weighted against the whole file's body text (a page
    with a table and two lines of prose has no body of its own). In a mixed PDF, OCR'd body text
    takes the text layer's body size, so the heading rules compare like with like across pages.
    `line_type`: the PDF reader's `Line` (passed in: the PDF reader imports this module)."""
    from collections import Counter

    measured = [m for p in pages for m in p.measured]
    if not measured:
        return
    body_size = median(m[2] for m in measured)
    body_stroke = median(m[3] for m in measured) or 1.0
    text_body = Counter(ln.size for ln in text_lines if not ln.bold).most_common(1)
    scale = text_body[0][0] / body_size if text_body else 1.0
    sized = _size_classes([m[2] for m in measured], body_size)
    for p in pages:
        p.lines = []
        for text, top, size, stroke in p.measured:
            size = sized[size]
            p.lines.append(line_type(text, p.page, round(size * scale * 2) / 2, stroke >= body_stroke * BOLD_STROKE,
                                top, p.height))
        for prev, line in zip(p.lines, p.lines[1:]):
            line.gap_before = line.top - prev.top


def check_readable(pages: list[PageOcr], options: OcrOptions, file: str) -> None:
    """A page with ink on it and no words, or nearly no confidence, is refused: indexing it would
    index nothing (or noise) while the page looked ingested."""
    for p in pages:
        if p.blank:
            continue
        if not p.words or p.confidence < options.unreadable_below or not p.measured:
            why = ("no words found" if not p.words else f"mean word confidence {p.confidence:.0f}"
                   if p.confidence < options.unreadable_below else "only stray marks read")
            raise IngestError(file, f"page {p.page}", (
                f"scanned page unreadable by OCR ({why}, under {options.unreadable_below:g}); "
                "rescan it at a higher quality or remove the page"))


def is_flagged(confidence: float, options: OcrOptions) -> bool:
    return confidence < options.flag_below


def ocr_warnings(pages: list[PageOcr], options: OcrOptions) -> list[str]:
    """Flagged (low-confidence) pages, blank pages, and lines left out at the paper's edge."""
    out = []
    for p in pages:
        if p.blank:
            out.append(f"page {p.page}: blank scanned page, nothing indexed from it")
        elif is_flagged(p.confidence, options):
            out.append(f"page {p.page}: read by OCR with low confidence {p.confidence:.1f} "
                       f"(under {options.flag_below:g}): indexed and flagged; check the text or rescan")
    edge = [(p.page, t) for p in pages for t in p.edge_lines]
    if edge:
        out.append(f"{len(edge)} line(s) at the paper's edge not indexed (fax or scanner imprint), "
                   f"first on page {edge[0][0]}: {edge[0][1][:60]!r}")
    marks = [(p.page, t) for p in pages for t in p.fragments]
    if marks:
        out.append(f"{len(marks)} short fragment(s) read with low confidence not indexed (a stamp or mark), "
                   f"first on page {marks[0][0]}: {marks[0][1][:60]!r}")
    return out


def _chunk_pages(chunk) -> tuple[int, int] | None:
    pages = getattr(chunk, "pages", None)
    if pages:
        return pages
    where = chunk.section.where.split()
    return (int(where[1]), int(where[1])) if len(where) == 2 and where[0] == "page" and where[1].isdigit() else None


def ocr_metadata(ocr_pages: dict[int, float], chunk, flag_below: float) -> dict:
    """Chunk metadata for a chunk with text from OCR'd pages: `ocr_confidence` (its weakest page's),
    `ocr_pages` (page -> confidence) and, when any is under `flag_below`, `ocr_flagged` (those
    pages, flagged at ingest); empty for any other chunk, whose row stays as it was."""
    span = _chunk_pages(chunk) if ocr_pages else None
    if span is None:
        return {}
    mine = {str(n): ocr_pages[n] for n in range(span[0], span[1] + 1) if n in ocr_pages}
    if not mine:
        return {}
    meta = {"ocr_confidence": min(mine.values()), "ocr_pages": mine}
    if flagged := [int(n) for n, c in mine.items() if c < flag_below]:
        meta["ocr_flagged"] = flagged
    return meta


def ocr_text_note(cited: list[tuple[str, str, dict]]) -> str | None:
    """The `ocr_text` warning's message for an answer citing chunks read by OCR, from each cited
    chunk's stored metadata: (doc id, section, metadata) per citation; None when none was."""
    parts = []
    for doc, section, meta in cited:
        if meta.get("ocr_confidence") is None:
            continue
        pages = ", ".join(sorted(meta.get("ocr_pages") or {}, key=int))
        low = ", flagged at ingest as low confidence" if meta.get("ocr_flagged") else ""
        parts.append(f"{doc} '{section}' (page {pages}, OCR confidence {float(meta['ocr_confidence']):.0f}{low})")
    if not parts:
        return None
    return ("Read by OCR from a scanned page, so a word or number may be misread: " + "; ".join(parts)
            + ". Check the wording against the document before relying on it.")


@dataclass
class Scanned:
    """The OCR'd pages of one PDF: their confidences and warnings go onto its Layout."""
    pages: list[PageOcr]
    options: OcrOptions

    def annotate(self, layout) -> None:
        layout.ocr_pages.update({p.page: p.confidence for p in self.pages if not p.blank})
        layout.warnings.extend(ocr_warnings(self.pages, self.options))


def read_scanned(pdf, by_page: list[list], options: OcrOptions, file: str, line_type) -> Scanned:
    """OCR every page of `pdf` with no lines in `by_page` (filled in place with the page's lines);
    pages with a text layer are kept as they are."""
    text_lines = [ln for lines in by_page for ln in lines]
    pages = [ocr_page(pdf[n], n + 1, options, file) for n, lines in enumerate(by_page) if not lines]
    check_readable(pages, options, file)
    if all(p.blank for p in pages) and not text_lines:
        raise IngestError(file, "file", "scanned PDF with no ink on any page: nothing to index")
    set_lines(pages, text_lines, line_type)
    for p in pages:
        by_page[p.page - 1] = p.lines
    return Scanned(pages, options)


def ocr_text_warnings(cited: list[tuple[str, str, dict]]) -> list:
    """[the `ocr_text` AnswerWarning] for an answer citing OCR'd chunks, else []."""
    from policydesk.contract.answer import AnswerWarning

    note = ocr_text_note(cited)
    return [AnswerWarning(kind="ocr_text", message=note)] if note else []
