"""Filtered dense recall@10 against an exact scan, for HNSW build parameters x search settings.

On a database kept by `policydesk bench --scale N --keep` (either filler), for each
(m, ef_construction), `--builds` times: the HNSW index on data_chunks is rebuilt (build time and
size recorded), then for each search setting (ef_search x hnsw.iterative_scan x
hnsw.max_scan_tuples) the production dense arm (`PermissionScopedRetriever` on the application
login, under RLS, with the scope hook installing that setting, as POLICYDESK_HNSW_* would) runs
every query for every filter of the bench (policydesk/bench/recall.py `bench_cases`: the
selectivity cases and each role's filter, with and without a product). Recall@10 is against an
exact scan of the same predicate (owner login, index scans off), by id and by distance
(`scale.recall_at_k`: ties count). The plan each filter took (HNSW or an exact scan) is
recorded: a high ef_search raises the HNSW path's cost estimate until the planner prefers an
exact scan. Latency: p50/p95 of the arm, and of the same statement with index scans off (the
exact path, through the same arm, timed right after each build in the same process), with the
load average.

Queries: the golden questions (demo topics) and questions templated on the filler's topics
(`policy_text.questions`), reported apart and together.

The exact reference takes minutes at 10^5 rows: --reference keeps it in a file and reuses it
while the database, its row count and the queries are the same. The index is rebuilt as it was
found at the end (unless --leave-index). Prints one line per setting and saves one JSON object
in --out (default DATA_DIR/results/benchmarks; rewritten after every setting); `hnsw_sweep.py table FILE` prints
it as the markdown table docs/performance.md shows.

    POLICYDESK_DATA_DIR=/tmp/pdbench/data .venv/bin/python benchmarks/hnsw_sweep.py DBNAME \
        --configs 16:64,32:400 --builds 2 --ef 40,100,200 --iterative relaxed_order,strict_order \
        --max-scan-tuples 20000,40000 --reference /tmp/ref.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from llama_index.core.schema import QueryBundle
from sqlalchemy import event, text

from policydesk.bench import policy_text, stages
from policydesk.bench.explain import Capture, explain
from policydesk.bench.memory import PeakRSS
from policydesk.bench.recall import bench_cases, exact_top_k, matching_rows, recall_at_k
from policydesk.config import get_settings
from policydesk.providers import local_embedding
from policydesk.retrievers import chunk_vector_store
from policydesk.retrievers.scoped import ArmConfig, PermissionScopedRetriever
from policydesk.storage.engine import open_database

sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/saved.py, also when loaded from a file
from saved import results_path  # noqa: E402

INDEX = "data_chunks_embedding_hnsw"


def _rebuild(db, m: int, efc: int, maintenance_work_mem: str = "1GB", workers: int | None = None) -> dict:
    """Drop and rebuild the production HNSW index: build time, size and the server's peak RSS.
    The graph builds fast only while it fits in maintenance_work_mem (at 10^6 rows, m 32, about
    2.5 GB); `workers` sets max_parallel_maintenance_workers."""
    t0 = time.perf_counter()
    with PeakRSS(db) as rss, db.owner.begin() as conn:
        conn.execute(text("SELECT set_config('maintenance_work_mem', :m, true)"), {"m": maintenance_work_mem})
        if workers is not None:
            conn.execute(text("SELECT set_config('max_parallel_maintenance_workers', :w, true)"), {"w": str(workers)})
        conn.execute(text(f"DROP INDEX IF EXISTS {INDEX}"))
        conn.execute(text(f"CREATE INDEX {INDEX} ON data_chunks USING hnsw (embedding vector_cosine_ops) "
                          f"WITH (m = {int(m)}, ef_construction = {int(efc)})"))
    build = time.perf_counter() - t0
    with db.owner.connect() as conn:
        size = conn.execute(text(f"SELECT pg_relation_size('{INDEX}')")).scalar_one()
    return {"build_s": round(build, 1), "index_mb": round(size / 2**20, 1), "loadavg": os.getloadavg(),
            "maintenance_work_mem": maintenance_work_mem, "workers": workers, "server_peak_rss_bytes": rss.peak}


def _summary(values: list[float]) -> dict:
    a = np.array(values)
    return {"mean": round(float(a.mean()), 3), "min": round(float(a.min()), 2), "zeros": int((a == 0).sum())}


def _run_case(db, embed, case, queries, embs, exact, k: int, cap: Capture) -> dict:
    arm = PermissionScopedRetriever(chunk_vector_store(db), embed,
                                    ArmConfig(clearance=case.clearance, top_k=k, ))
    by_id, by_dist, lat = [], [], []
    for q, e, want in zip(queries, embs, exact):
        t0 = time.perf_counter()
        nodes = arm.retrieve(QueryBundle(q, embedding=e))
        lat.append((time.perf_counter() - t0) * 1000)
        r_id, r_dist = recall_at_k([(n.node.node_id, 1 - n.score) for n in nodes], want)
        by_id.append(r_id)
        by_dist.append(r_dist)
    plan = explain(db, case.clearance, cap.statement, cap.params)
    return {"plan": "hnsw" if INDEX in plan else "exact", "by_id": by_id, "by_distance": by_dist,
            "p50_ms": round(float(np.percentile(lat, 50)), 2), "p95_ms": round(float(np.percentile(lat, 95)), 2)}


def _exact_path_db(settings, database: str):
    """The same engines with index scans off in every transaction (bitmap scans on the
    access-level index stay allowed): the arm then takes the planner's exact path, so its latency
    is the exact path's with the same Python around it."""
    db = open_database(settings, database)
    event.listen(db.app, "begin", lambda conn: conn.exec_driver_sql("SET LOCAL enable_indexscan = off"))
    return db


def _exact_path_ms(db, embed, case, queries, embs, exact, k: int, cap: Capture) -> dict:
    r = _run_case(db, embed, case, queries, embs, exact, k, cap)
    return {"p50_ms": r["p50_ms"], "p95_ms": r["p95_ms"], "plan": r["plan"],
            "recall_by_distance_min": min(r["by_distance"])}


def table(path: Path) -> str:
    """A saved sweep as a markdown table: per build and setting, the lowest mean and the lowest
    minimum over the filters that took the HNSW index, the filters that took an exact plan (their
    recall is 1.0), and p50 latencies with the exact path's of the same filters (of all filters when
    none took the index) from the same build."""
    out = json.loads(Path(path).read_text())
    short = {n: n.replace("_~", " ~").replace("pct", "%").replace("_", " ") for n in out["cases"]}
    rows = ["| m / ef_construction | build (s, MB) | ef_search | scan | max_scan_tuples | HNSW filters: lowest mean "
            "/ lowest min (questions at 0) | filters on an exact plan | HNSW p50 ms | the same filters' exact path "
            "p50 ms | load |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for b in out["builds"]:
        for st in b["settings"]:
            h = {n: c for n, c in st["cases"].items() if c["plan"] == "hnsw"}
            e = [short[n] for n, c in st["cases"].items() if c["plan"] != "hnsw"]
            rec = (f"{min(c['recall_by_distance']['mean'] for c in h.values()):.3f} / "
                   f"{min(c['recall_by_distance']['min'] for c in h.values()):.1f} "
                   f"({max(c['recall_by_distance']['zeros'] for c in h.values())})") if h else "-"
            lat = (f"{min(c['p50_ms'] for c in h.values()):.1f}-{max(c['p50_ms'] for c in h.values()):.1f}"
                   if h else "-")
            exact_ms = [b["exact_path_ms"][n]["p50_ms"] for n in (h or st["cases"])]
            rows.append(f"| {b['m']} / {b['ef_construction']} | {b['build']} ({b['build_s']:.0f}, {b['index_mb']:.0f}) "
                        f"| {st['ef_search']} | {st['iterative_scan']} | {st['max_scan_tuples']} | {rec} | "
                        f"{('all ' + str(len(e))) if not h else (', '.join(e) or '-')} | {lat} | {min(exact_ms):.1f}-{max(exact_ms):.1f} | {st['loadavg'][0]:.1f} |")
    return "\n".join(rows)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["table"]:  # hnsw_sweep.py table RESULT.json
        print(table(Path(argv[1])))
        return 0
    run(get_settings(), argv)
    return 0


def _reference(base, cases, queries, embs, k: int, path: Path | None) -> tuple[dict, float]:
    """The exact top k of every query under every case's predicate; kept in `path` when given
    (at 10^5 rows it takes minutes) and reused while the database, row count and queries match."""
    with base.owner.connect() as conn:
        key = {"database": base.owner_url.database, "k": k, "queries": queries,
               "rows": conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()}
    if path is not None and path.exists():
        saved = json.loads(path.read_text())
        if saved["key"] == key and set(saved["exact"]) >= {c.name for c in cases}:
            return {n: [[tuple(x) for x in q] for q in v] for n, v in saved["exact"].items()}, 0.0
    t0 = time.perf_counter()
    exact = {c.name: [exact_top_k(base, c, list(e), k) for e in embs] for c in cases}
    seconds = time.perf_counter() - t0
    if path is not None:
        path.write_text(json.dumps({"key": key, "exact": exact}))
    return exact, seconds


def _dump(out: dict) -> str:
    """One line per setting: the file stays readable and small."""
    head = {k: v for k, v in out.items() if k != "builds"}
    lines = [json.dumps(head, indent=1)[:-2] + ',\n "builds": [']
    for i, b in enumerate(out["builds"]):
        bhead = {k: v for k, v in b.items() if k != "settings"}
        lines.append("  " + json.dumps(bhead)[:-1] + ', "settings": [')
        lines.append(",\n".join("   " + json.dumps(s) for s in b["settings"]))
        lines.append("  ]}" + ("," if i < len(out["builds"]) - 1 else ""))
    lines.append(" ]\n}")
    return "\n".join(lines) + "\n"


def run(settings, argv=None, embed_model=None) -> Path:
    """The sweep on `settings`' server; returns the path of the saved JSON (rewritten after every
    setting, so an interrupted sweep keeps what it measured)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("database")
    ap.add_argument("--configs", default="32:400", help="m:ef_construction,...")
    ap.add_argument("--builds", type=int, default=2, help="index builds per configuration (builds are random)")
    ap.add_argument("--ef", default="40,100,200", help="hnsw.ef_search values")
    ap.add_argument("--iterative", default="relaxed_order", help="hnsw.iterative_scan modes")
    ap.add_argument("--max-scan-tuples", default="40000", help="hnsw.max_scan_tuples values")
    ap.add_argument("--queries", type=int, default=227, help="golden questions (first N)")
    ap.add_argument("--filler-queries", type=int, default=50, help="questions templated on the filler's topics")
    ap.add_argument("--exact-timing-queries", type=int, default=20)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--reference", type=Path, help="file keeping the exact top k (reused when it matches)")
    ap.add_argument("--leave-index", action="store_true", help="leave the last build in place")
    ap.add_argument("--maintenance-work-mem", default="1GB", help="for the index builds (the graph must fit)")
    ap.add_argument("--workers", type=int, default=None, help="max_parallel_maintenance_workers for the builds")
    ap.add_argument("--out", type=Path, default=None, help="directory for the JSON (default: DATA_DIR/results/benchmarks)")
    args = ap.parse_args(argv)

    embed = embed_model or local_embedding(settings)
    golden, _ = stages.load_questions(args.queries)
    queries = [q.text for q in golden] + policy_text.questions(args.filler_queries)
    kinds = ["golden"] * len(golden) + ["filler_topic"] * args.filler_queries
    embs = [embed.get_query_embedding(q) for q in queries]
    grid = [(int(ef), mode, int(mst)) for ef, mode, mst in itertools.product(
        args.ef.split(","), args.iterative.split(","), args.max_scan_tuples.split(","))]

    base = open_database(settings, args.database)
    cases = bench_cases(base)
    with base.owner.connect() as conn:
        # None when the index was dropped (a re-laid-out table): then there is nothing to restore
        original = conn.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = :i"), {"i": INDEX}).scalar()
        total = conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
        filler_kind = conn.execute(text(
            "SELECT CASE WHEN count(*) FILTER (WHERE metadata_->>'title' LIKE 'Synthetic %') > 0 THEN 'noisy' "
            "WHEN count(*) > 0 THEN 'realistic' END FROM data_chunks WHERE node_id LIKE 'SYN-%'")).scalar()
        revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    exact, exact_s = _reference(base, cases, queries, embs, args.k, args.reference)
    matching = {c.name: matching_rows(base, c) for c in cases}
    out = {"database": args.database, "rows": total, "filler_mode": filler_kind, "migration": revision,
           "queries": len(queries), "golden_queries": len(golden), "filler_queries": args.filler_queries,
           "k": args.k, "embed_model": type(embed).__name__, "original_index": original,
           "exact_reference_s": round(exact_s, 1),
           "cases": {c.name: {"matching": matching[c.name], "fraction": round(matching[c.name] / total, 3),
                              "levels": c.levels, "sensitive": c.sensitive, "product": c.product} for c in cases},
           "argv": list(argv) if argv is not None else None, "loadavg_start": os.getloadavg(), "builds": []}
    path = results_path("hnsw_sweep", suffix=f"{total}_{filler_kind}", out=args.out)
    print(json.dumps({"rows": total, "filler": filler_kind, "queries": len(queries), "exact_reference_s": round(exact_s, 1),
                      "out": str(path)}), flush=True)
    try:
        for spec in args.configs.split(","):
            m, efc = (int(x) for x in spec.split(":"))
            for build in range(1, args.builds + 1):
                entry = {"m": m, "ef_construction": efc, "build": build, **_rebuild(base, m, efc, args.maintenance_work_mem, args.workers)}
                exact_db = _exact_path_db(settings, args.database)
                exact_cap = Capture(exact_db.app)
                n = args.exact_timing_queries
                entry["exact_path_ms"] = {c.name: _exact_path_ms(exact_db, embed, c, queries[:n], embs[:n],
                                                                 exact[c.name][:n], args.k, exact_cap) for c in cases}
                exact_db.dispose()
                entry["settings"] = []
                out["builds"].append(entry)
                print(json.dumps({k: entry[k] for k in ("m", "ef_construction", "build", "build_s", "index_mb",
                                                          "loadavg")}), flush=True)
                for ef, mode, mst in grid:
                    db = open_database(settings.model_copy(update={
                        "HNSW_EF_SEARCH": ef, "HNSW_ITERATIVE_SCAN": mode, "HNSW_MAX_SCAN_TUPLES": mst}), args.database)
                    cap = Capture(db.app)
                    row = {"ef_search": ef, "iterative_scan": mode, "max_scan_tuples": mst,
                           "loadavg": [round(x, 2) for x in os.getloadavg()], "cases": {}}
                    for case in cases:
                        r = _run_case(db, embed, case, queries, embs, exact[case.name], args.k, cap)
                        worst = min(range(len(queries)), key=lambda i: r["by_distance"][i])
                        row["cases"][case.name] = {
                            "plan": r["plan"], "recall_by_distance": _summary(r["by_distance"]),
                            "recall_by_id": _summary(r["by_id"]),
                            "by_query_kind": {kind: _summary([x for x, kd in zip(r["by_distance"], kinds) if kd == kind])
                                              for kind in dict.fromkeys(kinds)},
                            "worst": [queries[worst], round(r["by_distance"][worst], 2)],
                            "p50_ms": r["p50_ms"], "p95_ms": r["p95_ms"],
                            "p50_vs_exact_path": round(r["p50_ms"] / entry["exact_path_ms"][case.name]["p50_ms"], 3)}
                    db.dispose()
                    entry["settings"].append(row)
                    path.write_text(_dump(out))
                    print(json.dumps({"m": m, "efc": efc, "build": build, "ef": ef, "scan": mode, "mst": mst,
                                      **{name: (c["recall_by_distance"]["mean"], c["recall_by_distance"]["min"],
                                                c["p50_ms"], c["plan"]) for name, c in row["cases"].items()}}),
                          flush=True)
    finally:
        if not args.leave_index and original:
            t1 = time.perf_counter()
            with base.owner.begin() as conn:
                conn.execute(text("SELECT set_config('maintenance_work_mem', :m, true)"), {"m": args.maintenance_work_mem})
                conn.execute(text(f"DROP INDEX IF EXISTS {INDEX}"))
                conn.execute(text(original))
            print(f"index restored ({original}) in {time.perf_counter() - t1:.0f}s", flush=True)
        base.dispose()
    out["loadavg_end"] = os.getloadavg()
    path.write_text(_dump(out))
    print(f"saved {path}")
    return path


if __name__ == "__main__":
    raise SystemExit(main())
