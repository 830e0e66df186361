"""`policydesk bench`: stage latencies on a fresh database, optionally with synthetic filler.

Register with `app.command("bench")(bench_command)`. Results are printed and saved as JSON in
the output directory (--out; default DATA_DIR/bench/), with the EXPLAIN dumps of a --scale run
in its explain/ folder: a run writes nothing inside the repository.
"""

from __future__ import annotations

import json
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import typer

TARGETS = {
    "retrieval_p95_ms_1e4": 20.0,
    "retrieval_p95_ms_1e5": 100.0,
    "ask_e2e_p50_ms_demo": 100.0,
    "embed_p95_ms": 30.0,
    "ingest_chunks_per_s": 150.0,
    "ratio_vs_naive": 1.5,
    "guard_p95_ms_top8": 1.0,  # the clearance guard at top-k 8
}


def _versions(db) -> dict[str, str]:
    from sqlalchemy import text

    with db.owner.connect() as conn:
        pg = conn.execute(text("SHOW server_version")).scalar_one()
        vec = conn.execute(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")).scalar_one()
        cache = conn.execute(text("SHOW shared_buffers")).scalar_one()
    return {"postgres": pg, "pgvector": vec, "shared_buffers": cache, "python": platform.python_version(),
            "nproc": str(os.cpu_count()), "machine": platform.platform()}


def _progress(done: int, total: int) -> None:
    typer.echo(f"filler embedding: {done}/{total}", err=True)


def bench_command(
    scale: int = typer.Option(0, help="Synthetic filler chunks to add (e.g. 10000, 100000); 0 = demo corpus only."),
    queries: int = typer.Option(30, help="Golden questions to time (the first 50 are the original golden set, in its order)."),
    repetitions: int = typer.Option(3, help="Passes over the questions."),
    keep: bool = typer.Option(False, help="Keep the benchmark database (it is dropped otherwise)."),
    torch_threads: int = typer.Option(0, help="torch.set_num_threads for the local embedder on the torch engine; "
                                      "0 = torch default."),
    filler: str = typer.Option("noisy", help="Filler kind with --scale: 'noisy' (copies of demo chunks with noisy "
                               "vectors) or 'realistic' (templated policy-like text embedded by the local model; "
                               "vectors cached under the data dir, bench_filler/)."),
    embed_limit: int = typer.Option(0, help="With --filler realistic: embed at most this many distinct texts and "
                                    "derive the other vectors from them (policydesk/bench/derived.py); 0 = embed all."),
    hnsw_m: int = typer.Option(0, help="Rebuild the HNSW index after the filler with this m; 0 = its own."),
    hnsw_ef_construction: int = typer.Option(0, help="... and this ef_construction; 0 = its own."),
    maintenance_work_mem: str = typer.Option("512MB", help="maintenance_work_mem for the index rebuild."),
    parallel_workers: int = typer.Option(-1, help="max_parallel_maintenance_workers for the rebuild; -1 = server's."),
    topic_terms: bool = typer.Option(True, help="With --scale: count the topic gate's terms for the filler, as "
                                     "ingest does. --no-topic-terms gives a retrieval-only run: the end-to-end "
                                     "ask is left out, since the gate is not ready with an uncounted queue."),
    out: Path | None = typer.Option(None, help="Directory for the JSON and EXPLAIN dumps; default DATA_DIR/bench."),
) -> None:
    """Per-stage p50/p95 of the ask path, and filtered top-k recall at scale."""
    if filler not in ("noisy", "realistic"):
        raise typer.BadParameter(f"--filler must be 'noisy' or 'realistic', not {filler!r}")
    # Imported here, not at the top: `policydesk` registers this command at start-up, and
    # `policydesk ask --server` must not pay for loading the retrieval stack.
    from policydesk.bench import stages
    from policydesk.bench.memory import process_peak_rss_bytes
    from policydesk.config import get_settings
    from policydesk.providers import llm_for, offline_embedding
    from policydesk.ops.runtime import open_migrated
    from policydesk.storage.engine import create_database, owner_url

    settings = get_settings()
    if settings.GEMINI_API_KEY:
        settings = settings.model_copy(update={"GEMINI_API_KEY": None})  # offline figures only
    name = f"policydesk_bench_{datetime.now(timezone.utc):%Y%m%d%H%M%S}"
    out_dir = Path(out) if out is not None else settings.DATA_DIR / "bench"
    create_database(settings, name)
    db = open_migrated(settings, name)
    result: dict = {"database": name, "scale": scale, "filler_mode": filler if scale else None, "queries": queries, "repetitions": repetitions,
                 "loadavg_start": os.getloadavg()}
    try:
        result["env"] = _versions(db)
        t0 = time.perf_counter()
        # The configured engine (settings.EMBED_ENGINE). For torch, 0 keeps torch's own default
        # thread count; otherwise the embedder pins this many threads.
        embed_model = offline_embedding(settings.EMBED_BATCH_SIZE, torch_threads, settings.EMBED_ENGINE,
                                        settings.embed_models_dir, settings.EMBED_BATCH_THREADS)
        result["embed_engine"] = getattr(embed_model, "engine", None) or "torch"
        if result["embed_engine"] == "torch":
            import torch

            result["torch_threads"] = torch.get_num_threads()
        else:
            result["embed_batch_threads"] = embed_model.threads
        embed_model.get_query_embedding("warm up")
        result["model_load_s"] = time.perf_counter() - t0
        from policydesk.ingest.chunking import load_sentence_splitter

        t0 = time.perf_counter()
        load_sentence_splitter()
        result["sentence_splitter_load_s"] = time.perf_counter() - t0
        result["ingest"] = stages.time_ingest(db, embed_model, settings)
        typer.echo(f"ingest: {result['ingest']['chunks']} chunks in {result['ingest']['seconds']:.2f}s = "
                   f"{result['ingest']['chunks_per_s']:.1f} chunks/s (model load {result['model_load_s']:.1f}s and sentence "
                   f"splitter load {result['sentence_splitter_load_s']:.1f}s excluded)")
        from sqlalchemy import text

        with db.owner.connect() as conn:
            texts = list(conn.execute(text("SELECT text FROM data_chunks")).scalars())
        result["embed_batch"] = stages.time_embedding_batch(embed_model, texts)
        typer.echo(f"embedding alone: {result['embed_batch']['texts_per_s']:.1f} texts/s")

        if scale:
            from policydesk.bench.scale import IndexBuild, insert_filler

            build = IndexBuild(m=hnsw_m or None, ef_construction=hnsw_ef_construction or None,
                               maintenance_work_mem=maintenance_work_mem,
                               parallel_workers=None if parallel_workers < 0 else parallel_workers)
            result["filler"] = insert_filler(db, scale, filler=filler, embed_model=embed_model,
                                             cache_dir=settings.DATA_DIR / "bench_filler", progress=_progress,
                                             embed_limit=embed_limit or None, build=build,
                                             count_terms=topic_terms)
            typer.echo(f"filler: {json.dumps(result['filler'])}")

        questions, today = stages.load_questions(queries)
        llm = llm_for(settings)
        times = stages.run_stages(db, settings, embed_model, llm, questions, repetitions=repetitions, today=today,
                                   ask=topic_terms or not scale)
        summary = times.summary()
        result["stages"] = summary
        import numpy as np

        ratios = np.array(times.ratios)
        result["retrieval_mode"] = {"concurrent_arms": settings.CONCURRENT_ARMS, "text_candidates": settings.TEXT_CANDIDATES}
        result["ratio_vs_naive"] = {"p50_of_ratios": float(np.percentile(ratios, 50)),
                                 "p50_of_ratios_one_connection": float(np.percentile(times.ratios_one, 50)),
                                 "p50_of_ratios_two_connections": float(np.percentile(times.ratios_two, 50)),
                                 "p50_of_ratios_separate_reads": float(np.percentile(times.ratios_separate, 50)),
                                 "p95_ratio": summary["retrieval"]["p95"] / summary["naive"]["p95"],
                                 "p50_ratio": summary["retrieval"]["p50"] / summary["naive"]["p50"]}
        typer.echo(stages.format_table(summary))
        guard = summary.get("guard")
        if guard:
            verdict = "met" if guard["p95"] < TARGETS["guard_p95_ms_top8"] else "MISSED"
            nan = {"p50": float("nan"), "p95": float("nan")}
            noop, alone = summary.get("scoped_noop", nan), summary.get("guard_alone", nan)
            typer.echo(f"clearance guard at top-k {settings.TOP_K}: p50 {guard['p50']:.3f} ms, "
                       f"p95 {guard['p95']:.3f} ms (target p95 < {TARGETS['guard_p95_ms_top8']:.0f} ms: {verdict}); "
                       f"back to back: p50 {alone['p50']:.3f} ms, p95 {alone['p95']:.3f} ms; a scoped SELECT 1 in the "
                       f"same run: p50 {noop['p50']:.3f} ms, p95 {noop['p95']:.3f} ms")
        mode = "on two connections" if settings.CONCURRENT_ARMS else "on one connection"
        typer.echo(f"retrieval (dense+text+fusion+versions, arms {mode} as configured, text cap "
                   f"{settings.TEXT_CANDIDATES}) vs naive VectorStoreIndex top-8: "
                   f"p50 {result['ratio_vs_naive']['p50_ratio']:.2f}x, p95 {result['ratio_vs_naive']['p95_ratio']:.2f}x; "
                   f"p50 of per-question ratios {result['ratio_vs_naive']['p50_of_ratios']:.2f}x "
                   f"({result['ratio_vs_naive']['p50_of_ratios_one_connection']:.2f}x one connection, "
                   f"{result['ratio_vs_naive']['p50_of_ratios_two_connections']:.2f}x two connections, "
                   f"{result['ratio_vs_naive']['p50_of_ratios_separate_reads']:.2f}x each arm its own read)")

        if scale:
            from policydesk.bench.recall import filtered_checks

            result["filtered"] = filtered_checks(db, embed_model, [q.text for q in questions], out_dir / "explain",
                                                 f"scale{scale}{'_realistic' if filler == 'realistic' else ''}")
            for r in result["filtered"]:
                typer.echo(json.dumps(r))
    finally:
        db.dispose()
        if not keep:
            from sqlalchemy import create_engine

            eng = create_engine(owner_url(settings.database_url, settings.DATA_DIR, "postgres"),
                                isolation_level="AUTOCOMMIT")
            with eng.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            eng.dispose()
    result["loadavg_end"] = os.getloadavg()
    threads = (f"torch threads {result['torch_threads']}" if "torch_threads" in result
               else f"batch threads {result.get('embed_batch_threads')}")
    typer.echo(f"load average start {result['loadavg_start']} end {result['loadavg_end']}; embedding engine "
               f"{result.get('embed_engine')}, {threads}")
    result["process_peak_rss_bytes"] = process_peak_rss_bytes()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}_scale{scale}{'_realistic' if scale and filler == 'realistic' else ''}.json"
    path.write_text(json.dumps(result, indent=2, default=str))
    typer.echo(f"saved {path}")


def main() -> None:  # `python -m policydesk.bench.cli`, until it is registered on the main CLI
    typer.run(bench_command)


if __name__ == "__main__":
    main()
