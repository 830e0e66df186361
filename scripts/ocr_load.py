"""A 40-page scanned bulletin synced while asks are answered: OCR pages/s, and ask latency during it.

    python scripts/make_scans.py corpus_manual /tmp/ocr/eval
    POLICYDESK_DATA_DIR=/tmp/ocr/load .venv/bin/python scripts/ocr_load.py /tmp/ocr/eval/corpus_manual --pages 40

Sets up a fresh database with corpus_manual (text layer) ingested, then builds a bulletin of
`--pages` scanned pages (the scanned copies' pages in order, repeated as needed) and syncs it the
way `serve` does, on the web process's sync worker thread (ingest/worker.py), while this thread
asks questions one after another through the same pipeline. Prints the asks' latencies before
and during the sync, the sync's wall time and its OCR rate (pages/s).
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import statistics
import sys
import time
from datetime import date
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
QUESTIONS = [
    "How long does a participating provider have to submit an initial claim under Harborline Choice?",
    "Who submits a prior authorization request?",
    "How long does a member have to file an appeal?",
]


def bulletin(scanned: Path, pages: int, out: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    sources = [PdfReader(str(p)) for p in sorted((scanned / "policies").glob("*.pdf"))]
    writer = PdfWriter()
    while len(writer.pages) < pages:
        for reader in sources:
            for page in reader.pages:
                if len(writer.pages) < pages:
                    writer.add_page(page)
    with out.open("wb") as fh:
        writer.write(fh)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scanned", type=Path, help="a scanned copy of corpus_manual (scripts/make_scans.py)")
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--before", type=int, default=6, help="asks timed before the sync starts")
    args = ap.parse_args(argv)

    from sqlalchemy.orm import Session

    from policydesk.accounts.users import add_user
    from policydesk.config import get_settings
    from policydesk.ingest import ingest_directory
    from policydesk.ingest.worker import Notice, SyncWorker
    from policydesk.ops.runtime import open_migrated
    from policydesk.pipeline import AskRequest, build_pipeline
    from policydesk.providers import embedding_for
    from policydesk.storage.engine import create_database

    settings = get_settings()
    embed_model = embedding_for(settings)
    name = f"policydesk_ocrload_{secrets.token_hex(3)}"
    create_database(settings, name)
    db = open_migrated(settings, name)
    folder = settings.DATA_DIR / "ocr_load" / name
    shutil.copytree(REPO / "corpus_manual", folder)
    ingest_directory(db, folder, embed_model, settings)
    with Session(db.owner) as s, s.begin():
        add_user(s, name="load_rep", role="rep", password=secrets.token_hex(8))
    pipeline = build_pipeline(db, settings, embed_model=embed_model, today=date(2026, 11, 2))

    def ask(i: int) -> float:
        start = time.perf_counter()
        result = pipeline.ask(AskRequest("load_rep", QUESTIONS[i % len(QUESTIONS)]))
        assert result.citations or result.abstained, result.refusal_message
        return time.perf_counter() - start

    ask(0)  # first-use costs (splitter, caches) are not the sync's
    before = [ask(i) for i in range(args.before)]
    bulletin(args.scanned, args.pages, folder / "policies" / "fax-bulletin.pdf")
    manifest = yaml.safe_load((folder / "manifest.yaml").read_text())
    manifest["sources"].append({
        "file": "policies/fax-bulletin.pdf", "id": "FAX-BULLETIN", "title": "Faxed bulletin", "type": "policy",
        "version": 1, "effective_from": "2026-01-01", "date_basis": "date_of_service", "access_level": "public",
        "sensitive": False, "owner": "Provider Relations"})
    (folder / "manifest.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))

    worker = SyncWorker(db, folder, embed_model, settings)
    during: list[float] = []
    start = time.perf_counter()
    worker.submit(Notice(paths=("policies/fax-bulletin.pdf",)))
    i = 0
    while not worker.wait_idle(0.01):
        during.append(ask(i))
        i += 1
    wall = time.perf_counter() - start
    result = worker.results[-1]
    db.dispose()
    out = {
        "pages": args.pages, "sync_wall_s": round(wall, 1), "pages_per_s": round(args.pages / wall, 3),
        "sync": result.summary() if not isinstance(result, Exception) else f"failed: {result}",
        "asks_before": len(before), "ask_before_median_s": round(statistics.median(before), 3),
        "ask_before_max_s": round(max(before), 3),
        "asks_during": len(during), "ask_during_median_s": round(statistics.median(during), 3) if during else None,
        "ask_during_max_s": round(max(during), 3) if during else None,
    }
    print(json.dumps(out, indent=2))
    return 0 if not isinstance(result, Exception) and during else 1


if __name__ == "__main__":
    sys.exit(main())
