#!/usr/bin/env python3
"""Which PDF library for ingest: pypdfium2 or pdfplumber, measured on the same heading rules.

Both libraries' lines (text, font size, bold, position) go through the same
`layout_from_lines` the ingest reader uses; the script compares the section titles each finds
with the titles the file was written with, and times line extraction. PyMuPDF is not a
candidate: it is AGPL-3.0 (or commercial), which a plan's internal service cannot take on.

    pip install pdfplumber   # not a PolicyDesk dependency; only this script uses it
    .venv/bin/python scripts/pdf_library_compare.py

Files: the demo-corpus PDFs (titles from scripts/corpus_source/) and the test fixtures of
tests/ingest_fixtures.py (bold unnumbered, numbered, ALL CAPS, no headings).
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from policydesk.ingest.outline import build_sections  # noqa: E402
from policydesk.ingest.readers import pdf as reader  # noqa: E402


def pdfium_lines(path: Path) -> tuple[list, int]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(str(path))
    lines = [ln for n in range(len(doc)) for ln in reader._page_lines(doc[n], n + 1)]
    pages = len(doc)
    doc.close()
    return lines, pages


def plumber_lines(path: Path) -> tuple[list, int]:
    import pdfplumber

    out = []
    with pdfplumber.open(str(path)) as pdf:
        for n, page in enumerate(pdf.pages, start=1):
            page_lines = []
            for ln in page.extract_text_lines(return_chars=True):
                chars = [c for c in ln["chars"] if c["text"].strip()]
                if not chars:
                    continue
                size = Counter(round(c["size"], 1) for c in chars).most_common(1)[0][0]
                bold = sum(bool(reader._BOLD_NAME.search(c["fontname"])) for c in chars) >= 0.8 * len(chars)
                page_lines.append(reader.Line(" ".join(ln["text"].split()), n, size, bold, ln["top"],
                                              float(page.height)))
            for prev, line in zip(page_lines, page_lines[1:]):
                line.gap_before = line.top - prev.top
            out += page_lines
        return out, len(pdf.pages)


def expected_titles() -> dict[Path, list[str]]:
    from build_corpus import load_source

    want = {ROOT / "corpus" / e["file"]: [t for t, _ in e["sections"]] for e in load_source()[1]
            if e["type"] == "policy" and e["file"].endswith(".pdf")}
    from tests import ingest_fixtures as fx

    tmp = Path(tempfile.mkdtemp())
    fx.build(tmp)
    want[tmp / "policies/imaging.pdf"] = ["Imaging Prior Authorization", "Decision timeframe", "Exceptions",
                                          "Exceptions", "Clinical criteria"]
    want[tmp / "policies/hearing.pdf"] = ["Purpose", "Replacement frequency"]
    want[tmp / "policies/ambulance.pdf"] = ["EMERGENCY TRANSPORT", "NON-EMERGENCY TRANSPORT"]
    want[tmp / "policies/vision.pdf"] = ["vision"]  # no headings: one section, named for the file here
    return want


def main() -> int:
    want = expected_titles()
    for name, extract in (("pypdfium2", pdfium_lines), ("pdfplumber", plumber_lines)):
        right, seconds, misses = 0, 0.0, []
        for path, titles in want.items():
            t0 = time.perf_counter()
            lines, pages = extract(path)
            seconds += time.perf_counter() - t0
            got = [s.title for s in build_sections(reader.layout_from_lines(lines, pages), path.stem).sections]
            if got == titles:
                right += 1
            else:
                misses.append(f"{path.name}: {got}")
        words = re.sub(r"\s+", " ", f"{name}: {right}/{len(want)} files with exactly the written sections; "
                                    f"line extraction {seconds:.2f} s")
        print(words)
        for m in misses:
            print("   ", m)
    return 0


if __name__ == "__main__":
    sys.exit(main())
