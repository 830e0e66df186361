#!/usr/bin/env python3
"""Ingest rate on a corpus: fresh database per run, embedder loaded once, median of N runs.

Measures what `policydesk ingest` does end to end (read, chunk, screen, embed, write) minus the
model load, so two code versions can be compared in one process on the same machine:

    PYTHONPATH=/path/to/checkout .venv/bin/python scripts/ingest_rate.py --repeats 5

Prints one JSON object: wall seconds per run, their median, this process's CPU seconds per run,
sources/s and chunks/s (from the median wall time).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
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

    settings = get_settings()
    embed = offline_embedding(settings.EMBED_BATCH_SIZE, settings.EMBED_TORCH_THREADS)
    embed.get_query_embedding("warm up")
    runs, cpu, report = [], [], None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S")
    for i in range(args.repeats):
        name = f"policydesk_rate_{stamp}_{i}"
        create_database(settings, name)
        db = open_migrated(settings, name)
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            report = ingest_directory(db, args.corpus, embed, settings)
            runs.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        finally:
            db.dispose()
    median = statistics.median(runs)
    print(json.dumps({
        "code": str(Path(policydesk.__file__).resolve().parent.parent),
        "corpus": str(args.corpus),
        "sources": report.sources,
        "chunks": report.chunks_written,
        "runs_s": [round(r, 3) for r in runs],
        "median_s": round(median, 3),
        # CPU seconds of this process (reading, chunking, embedding; not Postgres): steadier than
        # wall time on a shared machine.
        "cpu_s": [round(c, 3) for c in cpu],
        "median_cpu_s": round(statistics.median(cpu), 3),
        "sources_per_s": round(report.sources / median, 2),
        "chunks_per_s": round(report.chunks_written / median, 1),
        "loadavg": os.getloadavg(),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
