"""Does row-level security keep the app role off the GIN / (doc_id, section_id) indexes?

`@@` (ts_match_vq) and `->>` (jsonb_object_field_text) are not LEAKPROOF, so under RLS the
planner may not use a query's own `@@` / `->>` clauses as index conditions (they must run after
the policy's quals). This runs the same statements as the owner (policy USING (true)) and as the
application role, with seq scans discouraged, and also re-checks the 50% HNSW case at several
ef_search values. Needs a database kept by `python -m policydesk.bench.cli --scale 10000 --keep`.

    POLICYDESK_DATA_DIR=/tmp/policydesk-bench .venv/bin/python benchmarks/rls_index_check.py DBNAME
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from sqlalchemy import text

from policydesk.config import get_settings
from policydesk.runtime import open_migrated
from policydesk.storage.clearance import Clearance
from policydesk.storage.scope import permitted_scope

OUT = Path(__file__).resolve().parents[1] / "docs" / "explain"

TEXT_SQL = ("SELECT node_id, ts_rank(text_search_tsv, q) AS rank FROM data_chunks, "
            "to_tsquery('english', 'timely & filing') q WHERE text_search_tsv @@ q "
            "AND metadata_->>'access_level' IN ('public', 'internal') ORDER BY rank DESC LIMIT 20")
SECTION_SQL = ("SELECT node_id FROM data_chunks WHERE metadata_->>'doc_id' = 'SYN-D4' "
               "AND metadata_->>'section_id' = 's0'")


def plan(conn, sql: str) -> str:
    return "\n".join(r[0] for r in conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + sql)))


def main(name: str) -> None:
    db = open_migrated(get_settings(), name)
    body = []
    for label, sql in (("fulltext AND query", TEXT_SQL), ("section lookup", SECTION_SQL)):
        with db.owner.begin() as conn:
            conn.execute(text("SET LOCAL enable_seqscan = off"))
            body.append(f"-- {label}, OWNER (policy USING (true)), enable_seqscan=off\n{plan(conn, sql)}\n")
        with permitted_scope(Clearance("rep", ("public", "internal"), False)), db.app.begin() as conn:
            conn.execute(text("SET LOCAL enable_seqscan = off"))
            body.append(f"-- {label}, APP ROLE under RLS, enable_seqscan=off\n{plan(conn, sql)}\n")
    (OUT / "scale10000_rls_index_check.txt").write_text("\n".join(body))
    for b in body:
        head = b.splitlines()
        print(head[0], "|", "GIN data_chunks_idx" if "data_chunks_idx " in b or "data_chunks_idx\n" in b or "on data_chunks_idx" in b
              else "", "doc_section" if "data_chunks_doc_section" in b else "", "|", head[-1] if head[-1] else head[-2])

    # HNSW recall at ~50% selectivity vs ef_search
    with db.owner.connect() as conn:
        qs = [r[0] for r in conn.execute(text(
            "SELECT embedding::text FROM data_chunks WHERE node_id NOT LIKE 'SYN-%' ORDER BY id LIMIT 30"))]
    rng = np.random.default_rng(1)
    queries = []
    for q in qs:  # perturb real chunk embeddings so the query is not a stored row
        v = np.array(q.strip("[]").split(","), dtype=np.float32) + rng.normal(0, 0.03, 384).astype(np.float32)
        queries.append("[" + ",".join(f"{x:.6f}" for x in v / np.linalg.norm(v)) + "]")
    from policydesk.bench.stages import load_questions
    from policydesk.providers import offline_embedding

    embed = offline_embedding(32)
    golden = ["[" + ",".join(f"{x:.6f}" for x in embed.get_query_embedding(q.text)) + "]"
              for q in load_questions(30)[0]]
    sql = ("SELECT node_id FROM data_chunks WHERE metadata_->>'access_level' = 'public' "
           "ORDER BY embedding <=> CAST(:q AS vector) LIMIT 10")
    for label, qset, ef in [("perturbed chunk embeddings", queries, e) for e in (100, 400)] + [
            ("golden question embeddings", golden, e) for e in (40, 100, 200, 400, 800)]:
        rec = []
        for q in qset:
            with db.owner.begin() as conn:
                conn.execute(text("SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off"))
                exact = set(conn.execute(text(sql), {"q": q}).scalars())
            with permitted_scope(Clearance("bench", ("public",), True)), db.app.begin() as conn:
                conn.execute(text(f"SET LOCAL hnsw.ef_search = {ef}"))
                got = set(conn.execute(text(sql), {"q": q}).scalars())
            rec.append(len(got & exact) / len(exact))
        print(f"public ~47%, {label}: ef_search={ef} recall@10 mean={np.mean(rec):.3f} min={np.min(rec):.2f} (n={len(rec)})")
    db.dispose()


if __name__ == "__main__":
    main(sys.argv[1])
