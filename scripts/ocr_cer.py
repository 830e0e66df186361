"""OCR character error rate per page, against the original's text layer; and the flag threshold.

    python scripts/make_scans.py corpus_manual /tmp/ocr/cal/fax --noise 0.002
    python scripts/ocr_cer.py corpus_manual /tmp/ocr/cal/fax/corpus_manual [more scanned copies ...]

For every PDF page that has a text layer in the original and none in a scanned copy, the page is
read by PolicyDesk's OCR (readers/ocr.py, the settings' dpi) and compared with the original page's
text: CER = edit distance / reference length, both whitespace-normalized, reading order as each
reader gives it (lines joined by spaces; the fax lines OCR leaves out at the paper's edge are not
compared). Prints one line per page (file, page, confidence, CER), then, for each candidate
threshold, how many pages it would flag and the worst CER among pages it would not.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance, one numpy row per character of `a`."""
    if not a or not b:
        return len(a) or len(b)
    bb = np.frombuffer(b.encode("utf-32-le"), dtype=np.uint32)
    idx = np.arange(len(b) + 1)
    prev = idx.copy()
    for i, ch in enumerate(a, start=1):
        sub = prev[:-1] + (bb != ord(ch))
        cur = np.empty_like(prev)
        cur[0] = i
        cur[1:] = np.minimum(prev[1:] + 1, sub)
        # insertions run left to right: cur[j] = min_k<=j (cur[k] + j - k)
        cur = np.minimum.accumulate(cur - idx) + idx
        prev = cur
    return int(prev[-1])


def cer(hypothesis: str, reference: str) -> float:
    hyp, ref = " ".join(hypothesis.split()), " ".join(reference.split())
    return edit_distance(hyp, ref) / max(1, len(ref))


def page_pairs(original: Path, scanned: Path):
    """(file, page number, original page, scanned page) for pages with text only in the original."""
    import pypdfium2 as pdfium

    for src in sorted(original.rglob("*.pdf")):
        rel = src.relative_to(original)
        copy = scanned / rel
        if not copy.exists():
            continue
        a, b = pdfium.PdfDocument(str(src)), pdfium.PdfDocument(str(copy))
        for n in range(min(len(a), len(b))):
            if b[n].get_textpage().count_chars() == 0 and a[n].get_textpage().count_chars() > 0:
                yield rel.as_posix(), n + 1, a[n], b[n]


def measure(original: Path, scanned: Path, options, texts: bool = False) -> list[tuple]:
    """(file, page, confidence, CER, seconds) per scanned page, and with `texts` the OCR text and
    the reference text too."""
    from policydesk.ingest.readers.ocr import ocr_page, set_lines
    from policydesk.ingest.readers.pdf import Line, _page_lines

    rows = []
    for file, n, orig, scan in page_pairs(original, scanned):
        reference = " ".join(ln.text for ln in _page_lines(orig, n))
        start = time.perf_counter()
        page = ocr_page(scan, n, options, file)
        set_lines([page], [], Line)
        seconds = time.perf_counter() - start
        hypothesis = " ".join(ln.text for ln in page.lines)
        rows.append((f"{scanned.parent.name}/{file}", n, page.confidence, cer(hypothesis, reference), seconds)
                    + ((hypothesis, reference) if texts else ()))
        print(f"{rows[-1][0]:<48} page {n}  confidence {page.confidence:5.1f}  CER {rows[-1][3]:.3f}  "
              f"{seconds:.1f} s", flush=True)
    return rows


def thresholds(rows, acceptable: float) -> None:
    print(f"\n{len(rows)} pages; CER acceptable up to {acceptable:.2f}")
    bad = [r for r in rows if r[3] > acceptable]
    print(f"pages over it: {len(bad)}" + "".join(f"\n  {r[0]} p{r[1]} conf {r[2]:.1f} CER {r[3]:.3f}" for r in bad))
    print("threshold  flagged  worst CER not flagged  unacceptable pages not flagged")
    for t in range(60, 96, 1):
        flagged = [r for r in rows if r[2] < t]
        kept = [r for r in rows if r[2] >= t]
        worst = max((r[3] for r in kept), default=0.0)
        missed = sum(1 for r in kept if r[3] > acceptable)
        print(f"{t:>9}  {len(flagged):>7}  {worst:>21.3f}  {missed:>30}")


def main(argv: list[str] | None = None) -> int:
    from policydesk.config import Settings
    from policydesk.ingest.readers.ocr import ocr_options

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("original", type=Path)
    ap.add_argument("scanned", type=Path, nargs="+")
    ap.add_argument("--acceptable", type=float, default=0.05, help="largest acceptable CER")
    args = ap.parse_args(argv)
    options = ocr_options(Settings(_env_file=None))
    rows = [r for scanned in args.scanned for r in measure(args.original, scanned, options)]
    seconds = sum(r[4] for r in rows)
    print(f"\nOCR: {len(rows)} pages in {seconds:.1f} s ({len(rows) / max(seconds, 1e-9):.2f} pages/s, one process)")
    thresholds(rows, args.acceptable)
    return 0


if __name__ == "__main__":
    sys.exit(main())
