"""The full-text side path's candidate cap (migration 0016): recall@k against the uncapped ranking,
and the function's latency, per cap, for every role.

On a database kept by `policydesk bench --scale N --keep` (migrated to head first, which builds
the per-clearance lexeme counts of migration 0016 from the rows present), every question runs
through `policydesk_text_search(query, k, cap)` on the application login under each role's
scope, once with cap = 2^31-1 (the uncapped ranking: the full OR query over every permitted row)
and once per cap. Recall@k is the share of the uncapped top k the capped call returns (ids; ranks
of returned rows are the same by construction); for the golden questions also the share of the
uncapped top k's demo-corpus chunks (not bench filler) the capped call keeps, since those are the
chunks the golden answers cite. Also recorded per cap: how often the cap bound
(the candidate query was narrowed), the candidate rows read (counted on the owner login under the
same clearance settings), and p50/p95 of the call (SQL only, `--repeat` timed calls per question
after one untimed), interleaved cap by cap so load drifts hit every cap alike.

Queries: the golden questions (demo topics) and questions templated on the filler's topics
(`policy_text.questions`), reported apart.

    POLICYDESK_DATA_DIR=/tmp/pdbench/data .venv/bin/python benchmarks/text_candidates.py DBNAME \
        --caps 500,1000,2000,4000 --k 20
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from sqlalchemy import text

from policydesk.accounts.access import ROLES, clearance_for
from policydesk.bench import policy_text, stages
from policydesk.config import get_settings
from policydesk.retrievers.text import or_query
from policydesk.ops.runtime import open_migrated
from policydesk.storage.scope import permitted_scope

from saved import results_path  # noqa: E402  (benchmarks/saved.py, beside this script)

UNCAPPED = 2**31 - 1
FILLER_PREFIX = "SYN-"  # the bench filler's chunk ids (policydesk/bench/scale.py)


def _call(db, clearance, q: str, k: int, cap: int) -> tuple[list[str], float]:
    with permitted_scope(clearance), db.app.connect() as conn:
        t0 = time.perf_counter()
        ids = list(conn.execute(text("SELECT node_id FROM policydesk_text_search(:q, :k, :c)"),
                                {"q": q, "k": k, "c": cap}).scalars())
        return ids, (time.perf_counter() - t0) * 1000


def _candidates(db, clearance, q: str, cap: int) -> tuple[int, bool]:
    """Rows the candidate query reads under this clearance, and whether it was narrowed."""
    with db.owner.begin() as conn:
        conn.execute(text("SELECT set_config('policydesk.levels', :l, true), set_config('policydesk.sensitive', :s, true)"),
                     {"l": ",".join(clearance.levels), "s": "on" if clearance.sensitive else "off"})
        row = conn.execute(text(
            "SELECT count(*) AS n, (SELECT policydesk_text_candidates(:q, :c)) IS NOT NULL AS narrowed "
            "FROM chunk_search s "
            "WHERE s.tsv @@ coalesce(policydesk_text_candidates(:q, :c), to_tsquery('english', :q)) "
            "AND s.access_level = ANY (string_to_array(current_setting('policydesk.levels', true), ',')) "
            "AND (NOT s.sensitive OR current_setting('policydesk.sensitive', true) = 'on')"), {"q": q, "c": cap}).one()
        return int(row.n), bool(row.narrowed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("database")
    ap.add_argument("--caps", default="500,1000,2000,4000")
    ap.add_argument("--k", type=int, default=20, help="the arm's top k (HybridRetriever arm_top_k is 20)")
    ap.add_argument("--queries", type=int, default=227, help="golden questions (first N)")
    ap.add_argument("--filler-queries", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=2, help="timed calls per question, role and cap")
    ap.add_argument("--out", type=Path, default=None, help="directory for the JSON (default: DATA_DIR/results/benchmarks)")
    args = ap.parse_args(sys.argv[1:] if argv is None else argv)
    caps = [int(c) for c in args.caps.split(",")]

    golden, _ = stages.load_questions(args.queries)
    questions = [("golden", or_query(q.text)) for q in golden] + \
        [("filler_topic", or_query(q)) for q in policy_text.questions(args.filler_queries)]
    questions = [(kind, q) for kind, q in questions if q]
    settings = get_settings()
    db = open_migrated(settings, args.database)
    with db.owner.connect() as conn:
        total = conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
        revision = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    out = {"database": args.database, "rows": total, "migration": revision, "k": args.k, "caps": caps,
           "questions": {kind: sum(1 for k, _ in questions if k == kind) for kind in ("golden", "filler_topic")},
           "loadavg_start": os.getloadavg(), "roles": {}}
    for role in ROLES:
        clearance = clearance_for(role)
        per = {c: {"recall": {"golden": [], "filler_topic": []}, "demo_kept": [], "ms": [], "narrowed": 0,
                   "candidates": []} for c in [UNCAPPED, *caps]}
        for kind, q in questions:
            ref, _ = _call(db, clearance, q, args.k, UNCAPPED)
            for cap in [UNCAPPED, *caps]:
                ids, _ = _call(db, clearance, q, args.k, cap)  # untimed: warms the cache alike
                for _ in range(args.repeat):
                    per[cap]["ms"].append(_call(db, clearance, q, args.k, cap)[1])
                if ref:
                    per[cap]["recall"][kind].append(len(set(ids) & set(ref)) / len(ref))
                demo = [i for i in ref if not i.startswith(FILLER_PREFIX)]
                if kind == "golden" and demo:
                    per[cap]["demo_kept"].append(len(set(ids) & set(demo)) / len(demo))
                n, narrowed = _candidates(db, clearance, q, cap)
                per[cap]["candidates"].append(n)
                per[cap]["narrowed"] += narrowed
        summary = {}
        for cap, v in per.items():
            r_all = v["recall"]["golden"] + v["recall"]["filler_topic"]
            summary["uncapped" if cap == UNCAPPED else str(cap)] = {
                **{f"recall_{kind}_mean": float(np.mean(r)) if r else None for kind, r in v["recall"].items()},
                **{f"recall_{kind}_min": float(np.min(r)) if r else None for kind, r in v["recall"].items()},
                "recall_all_mean": float(np.mean(r_all)), "questions_below_1": int(sum(x < 1 for x in r_all)),
                "golden_demo_chunks_kept_mean": float(np.mean(v["demo_kept"])) if v["demo_kept"] else None,
                "golden_demo_chunks_kept_min": float(np.min(v["demo_kept"])) if v["demo_kept"] else None,
                "narrowed": v["narrowed"], "candidates_p50": float(np.percentile(v["candidates"], 50)),
                "candidates_max": int(max(v["candidates"])),
                "p50_ms": float(np.percentile(v["ms"], 50)), "p95_ms": float(np.percentile(v["ms"], 95))}
        out["roles"][role] = summary
        for cap, s in summary.items():
            print(json.dumps({"role": role, "cap": cap, **{k: round(x, 3) if isinstance(x, float) else x
                                                           for k, x in s.items()}}), flush=True)
    out["loadavg_end"] = os.getloadavg()
    db.dispose()
    path = results_path("text_candidates", suffix=str(total), out=args.out)
    path.write_text(json.dumps(out, indent=1))
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
