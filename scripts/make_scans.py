"""Scanned copies of a corpus: every PDF re-made as page images at fax-like quality.

    python scripts/make_scans.py corpus_manual /tmp/ocr/scans            # -> /tmp/ocr/scans/corpus_manual/
    python scripts/make_scans.py corpus /tmp/ocr/scans --mixed policies/pol-hos-v1.pdf

Each page of each PDF is rendered at `--dpi` (200, fax "fine"), rotated by a skew of up to
`--skew` degrees, given a fax header line (sender, date, page) at the top, a rotated RECEIVED
stamp in the lower margin of page 1 and speckle noise, then made 1-bit (or kept grayscale with
`--gray`) and written back as an image-only PDF: no text layer, so ingest has to OCR it. Every
other file (manifest, wiki, call notes, Word) is copied as is, and the output folder keeps the
corpus folder's name, so `policydesk eval --corpus OUT/NAME` finds the corpus's golden set.

`--mixed FILE` keeps FILE's first page as the original text page and scans the rest (a mixed PDF).
Deterministic: the skew, noise and stamp of a page come from a seeded generator keyed by the
file, page and `--seed`; the PDF dates are fixed, so the same input gives the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import random
import shutil
import sys
import time
from pathlib import Path

FIXED_DATE = time.gmtime(1767225600)  # 2026-01-01 UTC: the PDF's dates, fixed


def _rng(seed: int, *parts: object) -> random.Random:
    key = hashlib.sha256("|".join(map(str, (seed, *parts))).encode()).digest()
    return random.Random(int.from_bytes(key[:8], "big"))


def _font(size: int):
    from PIL import ImageFont

    for name in ("DejaVuSans-Bold.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    return ImageFont.load_default(size)


def scan_image(image, rng: random.Random, *, dpi: int, page: int, pages: int, skew: float,
               noise: float, gray: bool, stamp: bool = True, header: str = "FROM: PROVIDER RELATIONS"):
    """One rendered page (grayscale PIL image at `dpi`) made to look faxed."""
    import numpy as np
    from PIL import Image, ImageDraw

    img = image.convert("L")
    draw = ImageDraw.Draw(img)
    small = _font(max(10, dpi // 9))
    # The fax machine's header line: the same on every page but the page number (a running header).
    draw.text((int(0.4 * dpi), int(0.15 * dpi)), f"{header}   12/03/2026 10:14   P.{page:03d}/{pages:03d}",
              fill=0, font=small)
    if stamp and page == 1:
        box = Image.new("L", (int(2.3 * dpi), int(0.75 * dpi)), 255)
        d = ImageDraw.Draw(box)
        d.rectangle([2, 2, box.width - 3, box.height - 3], outline=90, width=max(2, dpi // 60))
        d.text((int(0.12 * dpi), int(0.12 * dpi)), "RECEIVED\nDEC 03 2026", fill=90, font=_font(dpi // 6))
        box = box.rotate(rng.uniform(8, 18), expand=True, fillcolor=255)
        img.paste(box, (img.width - box.width - int(0.3 * dpi), img.height - box.height - int(0.05 * dpi)),
                  Image.eval(box, lambda v: 255 - v))
    img = img.rotate(rng.uniform(-skew, skew), resample=Image.BICUBIC, expand=False, fillcolor=255)
    arr = np.asarray(img, dtype=np.float32)
    gen = np.random.default_rng(rng.getrandbits(32))
    arr = arr + gen.normal(0, 18, arr.shape)  # scanner grain
    speck = gen.random(arr.shape)
    arr[speck < noise] = 0  # dust
    arr[speck > 1 - noise / 2] = 255  # dropouts
    arr = np.clip(arr, 0, 255).astype(np.uint8)
    out = Image.fromarray(arr, "L")
    return out if gray else out.point(lambda v: 255 if v > 150 else 0).convert("1")


def _pdf_bytes(images, dpi: int) -> bytes:
    buf = io.BytesIO()
    first, rest = images[0], images[1:]
    first.save(buf, "PDF", save_all=True, append_images=rest, resolution=float(dpi),
               creationDate=FIXED_DATE, modDate=FIXED_DATE, title="scan", producer="make_scans")
    return buf.getvalue()


def scan_pdf(src: Path, seed: int, *, dpi: int = 200, skew: float = 2.5, noise: float = 0.002,
             gray: bool = False, keep_text_pages: tuple[int, ...] = ()) -> bytes:
    """The PDF at `src`, as an image-only PDF (pages in `keep_text_pages`, 1-based, kept as they are)."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(src))
    pages = len(pdf)
    images = []
    for n in range(pages):
        rendered = pdf[n].render(scale=dpi / 72, grayscale=True).to_pil()
        images.append(scan_image(rendered, _rng(seed, src.name, n + 1), dpi=dpi, page=n + 1, pages=pages,
                                 skew=skew, noise=noise, gray=gray))
    scanned = _pdf_bytes(images, dpi)
    if not keep_text_pages:
        pdf.close()
        return scanned
    # Text pages from the original, image pages from the scan, in the original order.
    from pypdf import PdfReader, PdfWriter

    original, scan = PdfReader(str(src)), PdfReader(io.BytesIO(scanned))
    writer = PdfWriter()
    for n in range(pages):
        writer.add_page((original if n + 1 in keep_text_pages else scan).pages[n])
    writer.add_metadata({"/Producer": "make_scans"})
    writer._ID = None  # no random file id: the same input gives the same bytes
    buf = io.BytesIO()
    writer.write(buf)
    pdf.close()
    return buf.getvalue()


def scan_corpus(corpus: Path, out: Path, *, seed: int = 7, dpi: int = 200, skew: float = 2.5,
                noise: float = 0.002, gray: bool = False, mixed: tuple[str, ...] = (),
                only: tuple[str, ...] = ()) -> Path:
    """Copy `corpus` to out/<its name>/ with every PDF (or those in `only`) scanned."""
    target = out / corpus.resolve().name
    for path in sorted(corpus.rglob("*")):
        if path.is_dir():
            continue
        rel = path.relative_to(corpus)
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() == ".pdf" and (not only or rel.as_posix() in only):
            keep = (1,) if rel.as_posix() in mixed else ()
            dest.write_bytes(scan_pdf(path, seed, dpi=dpi, skew=skew, noise=noise, gray=gray, keep_text_pages=keep))
        else:
            shutil.copyfile(path, dest)
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dpi", type=int, default=200)
    ap.add_argument("--skew", type=float, default=2.5, help="largest skew, degrees (each page: uniform in +-skew)")
    ap.add_argument("--noise", type=float, default=0.002, help="share of pixels turned to dust")
    ap.add_argument("--gray", action="store_true", help="keep grayscale instead of 1-bit")
    ap.add_argument("--mixed", action="append", default=[], help="corpus-relative PDF: keep page 1 as text")
    ap.add_argument("--only", action="append", default=[], help="corpus-relative PDF to scan (default: all)")
    args = ap.parse_args(argv)
    target = scan_corpus(args.corpus, args.out, seed=args.seed, dpi=args.dpi, skew=args.skew, noise=args.noise,
                         gray=args.gray, mixed=tuple(args.mixed), only=tuple(args.only))
    print(f"scanned copy of {args.corpus} in {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
