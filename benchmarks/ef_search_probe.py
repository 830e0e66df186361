"""The dense statement's recall@10 and latency at several hnsw.ef_search values against an exact scan, in one run.

On a database kept by `policydesk bench --scale N --keep`: for the bench filters with many
permitted rows (policydesk/bench/recall.py `bench_cases`), the dense arm's statement shape
(ORDER BY cosine distance LIMIT 10 under the access predicate) on the owner login, for each
setting in turn per filter, with iterative scans as configured by default. Recall is by distance
against the exact scan of the same run (ties count).

    POLICYDESK_DATA_DIR=/tmp/scale/data .venv/bin/python benchmarks/ef_search_probe.py DBNAME
"""
import sys
import time

import numpy as np
from sqlalchemy import text
from sqlalchemy.dialects import postgresql

from policydesk.bench import stages
from policydesk.bench.recall import bench_cases, recall_at_k
from policydesk.config import get_settings
from policydesk.providers import local_embedding
from policydesk.storage.engine import open_database
from policydesk.storage.models import Chunk
from policydesk.storage.predicate import access_clause

s=get_settings(); db=open_database(s,sys.argv[1]); e=local_embedding(s)
qs,_=stages.load_questions(20)
embs=["[" + ",".join(f"{x:.7f}" for x in e.get_query_embedding(q.text)) + "]" for q in qs]
cases=[c for c in bench_cases(db) if c.name.startswith(("rep_public","compliance_role","restricted","public_","rep_product"))]
for c in cases:
    where=str(access_clause(c.clearance, Chunk.__table__).compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
    sql=f"SELECT node_id, embedding <=> CAST(:q AS vector(384)) d FROM data_chunks WHERE {where} ORDER BY d LIMIT 10"
    out={}
    for name, sets in [("exact","SET LOCAL enable_indexscan=off"),("ef200","SET LOCAL hnsw.ef_search=200"),("ef100","SET LOCAL hnsw.ef_search=100"),("ef60","SET LOCAL hnsw.ef_search=60")]:
        res=[];lat=[];plans=set()
        for q in embs:
            with db.owner.begin() as conn:
                conn.execute(text(sets+"; SET LOCAL hnsw.iterative_scan=relaxed_order; SET LOCAL hnsw.max_scan_tuples=40000"))
                t=time.perf_counter(); r=[tuple(x) for x in conn.execute(text(sql),{"q":q}).all()]; lat.append((time.perf_counter()-t)*1000)
            res.append(r)
        out[name]=(res,lat)
    ex=out["exact"][0]
    line=[c.name]
    for name,(res,lat) in out.items():
        rec=[recall_at_k(g,w)[1] for g,w in zip(res,ex)]
        line.append(f"{name}: recall {np.mean(rec):.3f}/{min(rec):.2f} short {sum(len(g)<10 for g in res)} p50 {np.percentile(lat,50):.1f} p95 {np.percentile(lat,95):.1f}")
    print(" | ".join(line), flush=True)
