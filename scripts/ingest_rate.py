#!/usr/bin/env python3
"""Ingest rate on a corpus: cold, warm and one-file-changed, embedder loaded once, median of N.

Measures what `policydesk ingest` does end to end (read, chunk, screen, embed, write) minus the
model load. Per repeat, in one process and one fresh database:
- cold: empty database, empty embedding cache (the first load);
- warm: the indexed documents deleted, the embedding cache kept, the same corpus ingested again
  (a rebuild; every chunk is written, none needs embedding);
- one file changed: a copy of the corpus with one sentence of one wiki page edited, ingested on
  top of the warm database (only that page's version is rewritten).
Ratios are against cold in the same process, so machine load cancels out as far as it can.

    PYTHONPATH=/path/to/checkout .venv/bin/python scripts/ingest_rate.py --repeats 3

Prints one JSON object. A checkout before the cache (no `chunks_embedded`) runs cold only.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parent.parent / "corpus")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    import policydesk
    from policydesk.config import get_settings
    from policydesk.ingest import ingest_directory
    from policydesk.providers import offline_embedding
    from policydesk.runtime import open_migrated
    from policydesk.storage.engine import create_database
    from sqlalchemy import text

    settings = get_settings()
    embed = offline_embedding(settings.EMBED_BATCH_SIZE, settings.EMBED_TORCH_THREADS)
    embed.get_query_embedding("warm up")
    has_cache = _has_cache()
    edited = _edited_copy(args.corpus) if has_cache else None
    modes = ("cold", "warm", "one_file_changed") if has_cache else ("cold",)
    wall = {m: [] for m in modes}
    cpu = {m: [] for m in modes}
    reports = {}
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S")
    for i in range(args.repeats):
        name = f"policydesk_rate_{stamp}_{i}"
        create_database(settings, name)
        db = open_migrated(settings, name)
        try:
            for mode in modes:
                if mode == "warm":
                    with db.owner.begin() as conn:
                        for table in ("data_chunks", "document_versions", "documents"):
                            conn.execute(text(f"DELETE FROM {table}"))
                corpus = edited if mode == "one_file_changed" else args.corpus
                t0, c0 = time.perf_counter(), time.process_time()
                reports[mode] = ingest_directory(db, corpus, embed, settings)
                wall[mode].append(time.perf_counter() - t0)
                cpu[mode].append(time.process_time() - c0)
        finally:
            db.dispose()
    out = {"code": str(Path(policydesk.__file__).resolve().parent.parent), "corpus": str(args.corpus),
           "repeats": args.repeats, "sources": reports["cold"].sources}
    for mode in modes:
        r, median = reports[mode], statistics.median(wall[mode])
        out[mode] = {
            "chunks_written": r.chunks_written, "chunks_embedded": getattr(r, "chunks_embedded", None),
            "runs_s": [round(x, 3) for x in wall[mode]], "median_s": round(median, 3),
            # CPU seconds of this process (reading, chunking, embedding; not Postgres): steadier
            # than wall time on a shared machine.
            "median_cpu_s": round(statistics.median(cpu[mode]), 3),
            "chunks_per_s": round(r.chunks_written / median, 1),
            "speedup_vs_cold": round(statistics.median(wall["cold"]) / median, 2),
        }
    out["loadavg"] = os.getloadavg()
    print(json.dumps(out))
    return 0


def _has_cache() -> bool:
    from policydesk.ingest.ingest import IngestReport

    return hasattr(IngestReport(), "chunks_embedded")


def _edited_copy(corpus: Path) -> Path:
    """The corpus in a temporary directory with one sentence of one Markdown page changed."""
    dest = Path(tempfile.mkdtemp(prefix="ingest-rate-")) / "corpus"
    shutil.copytree(corpus, dest)
    import yaml

    listed = [s["file"] for s in yaml.safe_load((dest / "manifest.yaml").read_text())["sources"]]
    page = dest / next(f for f in listed if f.endswith(".md"))
    body = page.read_text()
    page.write_text(body.replace(".", ". This sentence was added to measure re-ingest.", 1))
    return dest


if __name__ == "__main__":
    sys.exit(main())
