"""The retrieval stages and filtered recall@10 under several retrieval settings, in one run.

On a database kept by `policydesk bench --scale N --keep`, each variant (a set of POLICYDESK_*
settings, e.g. `ef100:HNSW_EF_SEARCH=100`) opens the database with those settings, as a process
configured with them would, and runs the bench's stages (`policydesk/bench/stages.py`: retrieval,
its arms, the naive retriever) and its filtered checks (`policydesk/bench/recall.py`: recall@10
against an exact scan for every role's filter). Variants take turns, one pass over the questions
each per round, so the machine's load falls on all of them alike; ratios are within one run.

    POLICYDESK_DATA_DIR=/tmp/scale/data .venv/bin/python benchmarks/dense_settings.py DBNAME \
        current ef100:HNSW_EF_SEARCH=100 exact:DENSE_EXACT_BELOW_ROWS=20000 --rounds 3

Prints one markdown row per variant and saves the JSON under --out (default DATA_DIR/bench).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from policydesk.bench import stages
from policydesk.bench.recall import filtered_checks
from policydesk.config import get_settings
from policydesk.providers import llm_for, local_embedding
from policydesk.storage.engine import open_database
from policydesk.storage.prewarm import warm_dense_index


def _variant(spec: str, settings) -> tuple[str, dict]:
    """`name` or `name:KEY=VALUE,KEY=VALUE` -> (name, settings update), values parsed as the settings field's type."""
    name, _, body = spec.partition(":")
    update = {}
    for pair in filter(None, body.split(",")):
        key, _, value = pair.partition("=")
        current = getattr(settings, key)  # an unknown setting fails here, loudly
        update[key] = type(current)(value) if not isinstance(current, bool) else value.lower() in ("1", "true", "on")
    return name, update


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 2)


def run(argv=None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("database")
    ap.add_argument("variants", nargs="+", help="name[:KEY=VALUE,...] (settings fields)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--no-ask", action="store_true", help="leave out the end-to-end ask stage (a retrieval-only "
                    "run: the ask adds the refusal gate, the answerer and a trace write per question)")
    ap.add_argument("--no-recall", action="store_true", help="leave out the filtered recall checks (a latency-only "
                    "run: they take an exact scan per question and filter, minutes per variant at 10^6)")
    settings = get_settings().model_copy(update={"GEMINI_API_KEY": None})
    ap.add_argument("--first-round-apart", action="store_true", help="report the first round (each question's "
                    "first read, pages not yet in shared buffers) apart from the later rounds (the same pages read "
                    "again: a server whose cache holds what the questions touch); needs --rounds 2 or more")
    ap.add_argument("--prewarm", action="store_true", help="before timing, run the warm-up `serve` runs at start "
                    "(storage/prewarm.py): a server whose cache holds the index; needs shared_buffers above "
                    "the index and the table (POLICYDESK_EMBEDDED_SHARED_BUFFERS)")
    ap.add_argument("--out", type=Path, default=settings.DATA_DIR / "bench")
    args = ap.parse_args(argv)
    if args.first_round_apart and args.rounds < 2:
        ap.error("--first-round-apart needs --rounds 2 or more")

    embed = local_embedding(settings)
    llm = llm_for(settings)
    questions, today = stages.load_questions(args.queries)
    variants = [_variant(v, settings) for v in args.variants]
    times = {name: stages.StageTimes() for name, _ in variants}
    first_round = {name: stages.StageTimes() for name, _ in variants}
    out = {"database": args.database, "queries": len(questions), "rounds": args.rounds,
           "variants": {n: u for n, u in variants}, "loadavg_start": os.getloadavg()}
    db = open_database(settings, args.database)
    with db.owner.connect() as conn:
        out["shared_buffers"] = conn.exec_driver_sql("SHOW shared_buffers").scalar_one()
        out["huge_pages_status"] = conn.exec_driver_sql(
            "SELECT current_setting('huge_pages_status', true)").scalar_one()
    if args.prewarm:
        warm = warm_dense_index(db.owner)
        if warm.outcome != "read":
            raise SystemExit(f"--prewarm: the warm-up did not read the index: {warm}")
        out["prewarm"] = asdict(warm)
    db.dispose()
    if not args.no_ask:  # a database of its own, as a fresh process's first ask has
        db = open_database(settings, args.database)
        out["first_ask_ms"] = round(stages.first_ask_ms(db, settings, embed, llm, questions[0], today), 1)
        db.dispose()
    for r in range(args.rounds):
        for name, update in variants:
            configured = settings.model_copy(update=update)
            db = open_database(configured, args.database)
            t = stages.run_stages(db, configured, embed, llm, questions, repetitions=1, today=today, warmup=r == 0,
                                 ask=not args.no_ask)
            into = first_round[name] if args.first_round_apart and r == 0 else times[name]
            for stage, ms in t.ms.items():
                into.ms[stage] += ms
            into.ratios += t.ratios
            db.dispose()
    results = {}
    for name, update in variants:
        db = open_database(settings.model_copy(update=update), args.database)
        checks = [] if args.no_recall else filtered_checks(db, embed, [q.text for q in questions],
                                                           args.out / "explain" / name, name)
        db.dispose()
        dense = [c for c in checks if "recall_at_10_mean" in c]
        s = times[name].ms
        results[name] = {
            "retrieval_p50": _pct(s["retrieval"], 50), "retrieval_p95": _pct(s["retrieval"], 95),
            "naive_p50": _pct(s["naive"], 50), "naive_p95": _pct(s["naive"], 95),
            "dense_p50": _pct(s["dense"], 50), "dense_p95": _pct(s["dense"], 95),
            "text_p50": _pct(s["text"], 50), "text_p95": _pct(s["text"], 95),
            "versions_p95": _pct(s["versions"], 95),
            "ask_p50": _pct(s["ask_e2e"], 50) if s.get("ask_e2e") else None,
            "ask_p95": _pct(s["ask_e2e"], 95) if s.get("ask_e2e") else None,
            "p95_ratio": round(float(np.percentile(s["retrieval"], 95) / np.percentile(s["naive"], 95)), 2),
            "recall_mean_lowest": round(min(c["recall_at_10_by_distance_mean"] for c in dense), 3) if dense else None,
            "recall_min_lowest": round(min(c["recall_at_10_by_distance_min"] for c in dense), 2) if dense else None,
            "short_results": sum(c["short_results"] for c in dense),
            "cases": {c["case"]: {k: c[k] for k in ("recall_at_10_by_distance_mean", "recall_at_10_by_distance_min",
                                                    "recall_at_10_mean", "short_results", "uses_hnsw", "p50_ms",
                                                    "p95_ms")} for c in dense}}
        if args.first_round_apart:
            f = first_round[name].ms
            results[name]["first_round"] = {f"{stage}_p{q}": _pct(f[stage], q) for stage in
                                            ("retrieval", "naive", "dense", "text", "versions") for q in (50, 95)}
    out["results"] = results
    out["loadavg_end"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"dense_settings_{datetime.now(timezone.utc):%Y%m%dT%H%M%S}.json"
    path.write_text(json.dumps(out, indent=1))
    print("| variant | retrieval p50 / p95 ms | naive p50 / p95 ms | p95 ratio | dense p50 / p95 | text p50 / p95 "
          "| lowest recall@10 mean / min | short results |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['retrieval_p50']} / {r['retrieval_p95']} | {r['naive_p50']} / {r['naive_p95']} | "
              f"{r['p95_ratio']} | {r['dense_p50']} / {r['dense_p95']} | {r['text_p50']} / {r['text_p95']} | "
              f"{r['recall_mean_lowest']} / {r['recall_min_lowest']} | {r['short_results']} |")
        if "first_round" in r:
            f = r["first_round"]
            print(f"| {name}, first round (first reads) | {f['retrieval_p50']} / {f['retrieval_p95']} | "
                  f"{f['naive_p50']} / {f['naive_p95']} | | {f['dense_p50']} / {f['dense_p95']} | "
                  f"{f['text_p50']} / {f['text_p95']} | | |")
        if r["ask_p50"] is not None:
            print(f"| {name}: end-to-end ask (gate, retrieval, answerer, trace) p50 / p95 ms | {r['ask_p50']} / {r['ask_p95']} |")
    if "first_ask_ms" in out:
        print(f"first ask of a fresh pipeline: {out['first_ask_ms']} ms")
    print(f"shared_buffers {out['shared_buffers']} (huge pages {out['huge_pages_status']}), "
          f"prewarm {out.get('prewarm')}; load average {out['loadavg_start']} -> {out['loadavg_end']}; "
          f"saved {path}")
    return path


if __name__ == "__main__":
    run(sys.argv[1:])
    raise SystemExit(0)
