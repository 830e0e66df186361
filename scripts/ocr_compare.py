"""PolicyDesk's OCR (readers/ocr.py: the tesseract CLI's TSV) against ocrmypdf, on the same scans.

    python scripts/make_scans.py corpus_manual /tmp/ocr/cmp --noise 0.002
    apt-get install -y ocrmypdf        # Debian's; only this measurement needs it
    python scripts/ocr_compare.py corpus_manual /tmp/ocr/cmp/corpus_manual --files 6

For each scanned PDF (the first --files, sorted), every page with a text layer only in the
original is read both ways and compared with that layer: character error rate (scripts/ocr_cer.py)
and the share of the reference's words read (order-blind, so ocrmypdf's reading order of its text
layer and the fax header line it keeps do not count against it), and seconds per page, one process
each (ocrmypdf --jobs 1, --force-ocr, its text layer read back with pypdfium2). Both run the same
tesseract; what differs is the image clean-up and what comes back.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ocr_cer import cer, measure  # noqa: E402


def words_read(hypothesis: str, reference: str) -> float:
    """The share of the reference's words (with their counts) found in the hypothesis."""
    ref, hyp = Counter(reference.lower().split()), Counter(hypothesis.lower().split())
    return sum((ref & hyp).values()) / max(1, sum(ref.values()))


def ocrmypdf_pages(scan: Path, workdir: Path, extra: list[str]) -> tuple[list[str], float]:
    """Each page's text from ocrmypdf's output, and the seconds the file took."""
    import pypdfium2 as pdfium

    out = workdir / scan.name
    start = time.perf_counter()
    subprocess.run(["ocrmypdf", "--force-ocr", "--jobs", "1", "-l", "eng", "--output-type", "pdf",
                    "--optimize", "0", "--quiet", *extra, str(scan), str(out)], check=True)
    seconds = time.perf_counter() - start
    doc = pdfium.PdfDocument(str(out))
    return [doc[n].get_textpage().get_text_range() for n in range(len(doc))], seconds


def main(argv: list[str] | None = None) -> int:
    from policydesk.config import Settings
    from policydesk.ingest.readers.ocr import ocr_options
    from policydesk.ingest.readers.pdf import _page_lines

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("original", type=Path)
    ap.add_argument("scanned", type=Path)
    ap.add_argument("--files", type=int, default=6)
    ap.add_argument("--deskew", action="store_true", help="ocrmypdf --deskew (its own straightening)")
    args = ap.parse_args(argv)
    import pypdfium2 as pdfium

    files = sorted(args.scanned.rglob("*.pdf"))[: args.files]
    ours, theirs, our_s, their_s = [], [], 0.0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for i, scan in enumerate(files):
            rel = scan.relative_to(args.scanned)
            one = Path(tmp) / f"one-{i}"  # this file alone, where measure() looks for it
            (one / rel.parent).mkdir(parents=True, exist_ok=True)
            (one / rel).write_bytes(scan.read_bytes())
            rows = measure(args.original, one, ocr_options(Settings(_env_file=None)), texts=True)
            ours += [(r[3], words_read(r[5], r[6])) for r in rows]
            our_s += sum(r[4] for r in rows)
            texts, seconds = ocrmypdf_pages(scan, Path(tmp), ["--deskew"] if args.deskew else [])
            their_s += seconds
            original = pdfium.PdfDocument(str(args.original / rel))
            for n in (r[1] for r in rows):
                reference = " ".join(ln.text for ln in _page_lines(original[n - 1], n))
                theirs.append((cer(texts[n - 1], reference), words_read(texts[n - 1], reference)))
                print(f"{rel}  page {n}  ocrmypdf CER {theirs[-1][0]:.3f}  words read {theirs[-1][1]:.3f}", flush=True)
    n = len(ours)
    print(f"\n{n} pages from {len(files)} files")
    for name, got, seconds in (("PolicyDesk (tesseract CLI, TSV)", ours, our_s), ("ocrmypdf --force-ocr" + (" --deskew" if args.deskew else ""), theirs, their_s)):
        print(f"{name:<32} mean CER {sum(c for c, _ in got) / n:.4f} (max {max(c for c, _ in got):.3f}), "
              f"words read {sum(w for _, w in got) / n:.4f} (min {min(w for _, w in got):.3f}), {seconds / n:.2f} s/page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
