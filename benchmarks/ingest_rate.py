#!/usr/bin/env python3
"""Ingest rate on a corpus: cold, warm and one-file-changed, embedder loaded once, median of N.

Measures what `policydesk ingest` does end to end (read, chunk, screen, embed, write) minus the
model load and the sentence splitter's one-time import (both reported apart). Per repeat, in one process and one fresh database:
- cold: empty database, empty embedding cache (the first load);
- warm: the indexed documents deleted, the embedding cache kept, the same corpus ingested again
  (a rebuild; every chunk is written, none needs embedding);
- one file changed: a copy of the corpus with one sentence of one wiki page edited, ingested on
  top of the warm database (only that page's version is rewritten).
Ratios are against cold in the same process, so machine load cancels out as far as it can.

    PYTHONPATH=/path/to/checkout .venv/bin/python benchmarks/ingest_rate.py --repeats 3
    .venv/bin/python benchmarks/ingest_rate.py --repeats 3 --engines torch,onnx,onnx-int8

With several engines (settings.EMBED_ENGINE values) each repeat runs every engine in turn, in one
process, so their ratios share the machine's load; each engine gets its own JSON object under
"engines" and its cold time as a ratio of the first engine's. Model loads (and an ONNX engine's
one-time export) are done before timing and reported apart. Prints one JSON object and saves it as ingest_rate_STAMP.json
under --out (default DATA_DIR/results/benchmarks, benchmarks/saved.py). A checkout
before the cache (no `chunks_embedded`) runs cold only; one before engines runs its only engine.
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

from saved import results_path  # noqa: E402  (benchmarks/saved.py, beside this script)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parent.parent / "corpus")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--profile", action="store_true",
                    help="after the timed runs, one more cold ingest per engine under cProfile: where its time went")
    ap.add_argument("--engines", default="", help="comma-separated ENGINE or ENGINE:THREADS (torch threads or "
                    "ONNX batch threads); default: the configured engine")
    ap.add_argument("--out", type=Path, default=None, help="directory for the JSON (default: DATA_DIR/results/benchmarks)")
    args = ap.parse_args(argv)

    import policydesk
    from policydesk.config import get_settings
    from policydesk.ingest import ingest_directory
    from policydesk.ops.runtime import open_migrated
    from policydesk.storage.engine import create_database
    from sqlalchemy import text

    settings = get_settings()
    engines = [e for e in args.engines.split(",") if e] or [getattr(settings, "EMBED_ENGINE", "torch")]
    embedders, load_s = {}, {}
    for engine in engines:
        t0 = time.perf_counter()
        embedders[engine] = _embedder(settings, engine)
        embedders[engine].get_query_embedding("warm up")
        load_s[engine] = round(time.perf_counter() - t0, 2)
    # The sentence splitter's first use imports nltk (~0.9 s once per process): paid here, apart,
    # like the model load, so the first cold load is timed on the same terms as the others.
    t0 = time.perf_counter()
    try:
        from policydesk.ingest.chunking import load_sentence_splitter
    except ImportError:  # a checkout from before the helper
        from llama_index.core.node_parser import SentenceSplitter

        def load_sentence_splitter():
            SentenceSplitter(chunk_size=8, chunk_overlap=0, tokenizer=str.split).split_text(
                "One two three four five. Six seven eight nine ten. Eleven twelve thirteen.")
    load_sentence_splitter()
    splitter_load_s = round(time.perf_counter() - t0, 2)
    has_cache = _has_cache()
    edited = _edited_copy(args.corpus) if has_cache else None
    modes = ("cold", "warm", "one_file_changed") if has_cache else ("cold",)
    wall = {e: {m: [] for m in modes} for e in engines}
    cpu = {e: {m: [] for m in modes} for e in engines}
    reports = {e: {} for e in engines}
    sql = {e: {} for e in engines}
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d%H%M%S")
    loads = [os.getloadavg()]
    for i in range(args.repeats):
        for engine in engines:
            name = f"policydesk_rate_{stamp}_{i}_{engines.index(engine)}"
            create_database(settings, name)
            db = open_migrated(settings, name)
            statements = _count_statements(db.owner)
            try:
                for mode in modes:
                    if mode == "warm":
                        with db.owner.begin() as conn:
                            for table in ("data_chunks", "document_versions", "documents"):
                                conn.execute(text(f"DELETE FROM {table}"))
                    corpus = edited if mode == "one_file_changed" else args.corpus
                    statements.clear()
                    t0, c0 = time.perf_counter(), time.process_time()
                    reports[engine][mode] = ingest_directory(db, corpus, embedders[engine], settings)
                    wall[engine][mode].append(time.perf_counter() - t0)
                    cpu[engine][mode].append(time.process_time() - c0)
                    sql[engine][mode] = len(statements)
            finally:
                db.dispose()
        loads.append(os.getloadavg())
    first = engines[0]
    out = {"code": str(Path(policydesk.__file__).resolve().parent.parent), "corpus": str(args.corpus),
           "repeats": args.repeats, "sources": reports[first]["cold"].sources,
           "sentence_splitter_load_s": splitter_load_s, "engines": {}}
    for engine in engines:
        res = {"embedder": type(embedders[engine]).__name__, "model_load_s": load_s[engine]}
        for mode in modes:
            r, median = reports[engine][mode], statistics.median(wall[engine][mode])
            res[mode] = {
                "chunks_written": r.chunks_written, "chunks_embedded": getattr(r, "chunks_embedded", None),
                "runs_s": [round(x, 3) for x in wall[engine][mode]], "median_s": round(median, 3),
                # CPU seconds of this process (reading, chunking, embedding; not Postgres): steadier
                # than wall time on a shared machine.
                "median_cpu_s": round(statistics.median(cpu[engine][mode]), 3),
                "chunks_per_s": round(r.chunks_written / median, 1),
                "speedup_vs_cold": round(statistics.median(wall[engine]["cold"]) / median, 2),
                "sql_statements": sql[engine][mode],  # sent by the ingest, last repeat
            }
        # Same repeat, same load: this engine's cold ingest against the first engine's.
        res["cold_speedup_vs_" + first] = round(statistics.median(
            [a / b for a, b in zip(wall[first]["cold"], wall[engine]["cold"])]), 2)
        res["cold_cpu_ratio_vs_" + first] = round(statistics.median(
            [a / b for a, b in zip(cpu[first]["cold"], cpu[engine]["cold"])]), 2)
        if args.profile:
            name = f"policydesk_rate_{stamp}_profile_{engines.index(engine)}"
            create_database(settings, name)
            db = open_migrated(settings, name)
            try:
                res["cold_profile_s"] = _profile(lambda: ingest_directory(db, args.corpus, embedders[engine], settings))
            finally:
                db.dispose()
        out["engines"][engine] = res
    if len(engines) == 1:
        out.update(out.pop("engines")[first])
    out["loadavg"] = loads
    print(json.dumps(out))
    path = results_path("ingest_rate", out=args.out)
    path.write_text(json.dumps(out, indent=2))
    print(f"saved {path}")
    return 0


def _profile(run) -> dict:
    """Seconds (cumulative, under the profiler) of what `ingest_directory` calls directly, grouped:
    reading, screening and chunking; embedding (cache look-ups and inserts, and waiting for the
    model); ORM flushes (the writes); other statements (deletes, ANALYZE); the rest. Since the
    embedding queue (ingest/embedcache.py) the model runs on background threads, which the profiler
    does not see: "embed" is then what the ingest's own thread spent on it, waiting included, and
    "embed_model" (the model alone, in a checkout before the queue) is absent; and the chunk rows
    go in as a bulk INSERT, not an ORM flush, so they count under "other_statements"."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.runcall(run)
    stats = pstats.Stats(profiler).stats
    top = next(k for k in stats if k[2] == "ingest_directory" and k[0].endswith("ingest/ingest.py"))
    groups = {"total": stats[top][3], "read_chunk": 0.0, "embed": 0.0, "orm_flush": 0.0, "other_statements": 0.0}
    queue = {"add", "finish", "ready", "wait", "vectors"}
    for (path, _, func), (_, _, _, _, callers) in stats.items():
        if top in callers:
            ct = callers[top][3]
            group = {"plan_directory": "read_chunk", "plan_source": "read_chunk", "load_manifest": "read_chunk",
                     "_embed": "embed", "flush": "orm_flush", "execute": "other_statements"}.get(func)
            if func in queue and path.endswith("ingest/embedcache.py"):
                group = "embed"
            if group and (group != "orm_flush" or path.endswith("orm/session.py")):
                groups[group] += ct
        # The model, in a checkout before the queue: what the cache layer calls in the embedding
        # object (LlamaIndex's instrumented wrapper around get_text_embedding_batch, or the method).
        for caller, c in callers.items():
            if caller[2] == "embed_cached" and ("llama_index" in path or func == "get_text_embedding_batch"):
                groups["embed_model"] = groups.get("embed_model", 0.0) + c[3]
    groups["rest"] = groups["total"] - sum(groups[g] for g in ("read_chunk", "embed", "orm_flush", "other_statements"))
    return {k: round(v, 3) for k, v in groups.items()}


def _count_statements(engine) -> list:
    """Statements sent through `engine` (the ingest's owner login), appended as they execute."""
    from sqlalchemy import event

    seen: list = []
    event.listen(engine, "before_cursor_execute", lambda *args: seen.append(1))
    return seen


def _embedder(settings, spec):
    """The offline embedder for `spec`, ENGINE or ENGINE:THREADS (torch: torch threads; ONNX: batch
    worker threads). A checkout before engines has its only one."""
    from policydesk import providers

    engine, _, threads = spec.partition(":")
    if not hasattr(providers, "local_embedding"):
        return providers.offline_embedding(settings.EMBED_BATCH_SIZE, int(threads or settings.EMBED_TORCH_THREADS))
    update = {"EMBED_ENGINE": engine}
    if threads:
        update["EMBED_TORCH_THREADS" if engine == "torch" else "EMBED_BATCH_THREADS"] = int(threads)
    return providers.local_embedding(settings.model_copy(update=update))


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
