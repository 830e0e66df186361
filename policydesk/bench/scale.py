"""Synthetic filler at scale, and filtered top-k checks against an exact scan.

Filler chunks are copies of real chunk texts whose embeddings are the real chunk embedding
plus small Gaussian noise, renormalised (as tests/test_retrieval.py builds them), grouped into
synthetic documents with 1-3 versions of 4 sections each, so version resolution has real
`document_versions` rows to read. Access levels are drawn per document:
public 50%, internal 38%, restricted 10%, compliance 2% (half of compliance marked sensitive).

Rows go in with COPY on the owner engine. The HNSW and GIN indexes are dropped first and
recreated from their own definitions afterwards (bulk build instead of row-by-row inserts),
then ANALYZE.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from llama_index.core.schema import QueryBundle
from sqlalchemy import event, func, select, text
from sqlalchemy.dialects import postgresql

from policydesk.ingest.chunks import make_node, row_metadata
from policydesk.retrievers.scoped import ArmConfig, PermissionScopedRetriever
from policydesk.retrievers import chunk_vector_store
from policydesk.storage.clearance import Clearance
from policydesk.storage.models import Chunk
from policydesk.storage.predicate import access_clause
from policydesk.storage.scope import permitted_scope
from policydesk.storage.sources import sections_statement, versions_statement

LEVELS = ("public", "internal", "restricted", "compliance")
LEVEL_P = (0.50, 0.38, 0.10, 0.02)
VERSION_P = (0.5, 0.3, 0.2)  # documents with 1, 2, 3 versions
SECTIONS_PER_VERSION = 4
STARTS = ("2024-01-01", "2025-01-01", "2026-01-01")
REBUILT_INDEXES = ("data_chunks_embedding_hnsw", "data_chunks_idx", "data_chunks_metadata")


def _vec_text(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


def insert_filler(db, n: int, *, seed: int = 8, noise: float = 0.03) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    with db.owner.connect() as conn:
        base = conn.execute(text("SELECT text, embedding::text FROM data_chunks")).all()
    texts = [b[0] for b in base]
    embs = np.array([np.array(b[1].strip("[]").split(","), dtype=np.float32) for b in base])

    docs, versions, chunks = [], [], []
    k = 0
    while len(chunks) < n:
        doc_id = f"SYN-D{k}"
        level = LEVELS[rng.choice(4, p=LEVEL_P)]
        sensitive = bool(level == "compliance" and rng.random() < 0.5)
        stype = ("policy", "wiki", "call_note")[rng.choice(3, p=(0.6, 0.25, 0.15))]
        nver = int(rng.choice(3, p=VERSION_P)) + 1 if stype == "policy" else 1
        docs.append(dict(doc_id=doc_id, title=f"Synthetic {k}", source_type=stype, date_basis="date_of_service",
                         access_level=level, owner="bench"))
        for v in range(1, nver + 1):
            eff_to = STARTS[v] if v < nver else "9999-12-31"
            versions.append(dict(doc_id=doc_id, version=v, title=f"Synthetic {k}", source_type=stype,
                                 effective_from=STARTS[v - 1], effective_to=eff_to,
                                 supersedes=v - 1 if v > 1 else None, superseded_by=v + 1 if v < nver else None,
                                 date_basis="date_of_service", access_level=level, sensitive=sensitive, owner="bench",
                                 source_file="synthetic", source_sha256="0" * 64))
            for s in range(SECTIONS_PER_VERSION):
                i = int(rng.integers(len(texts)))
                vec = embs[i] + rng.normal(0, noise, embs.shape[1]).astype(np.float32)
                vec /= np.linalg.norm(vec)
                chunk_id = f"{doc_id}:v{v}:s{s}"
                meta = {"chunk_id": chunk_id, "title": f"Synthetic {k}", "version": v, "section": f"S{s}",
                        "section_id": f"s{s}", "source_type": stype, "effective_from": STARTS[v - 1],
                        "effective_to": eff_to, "supersedes": None, "superseded_by": None,
                        "date_basis": "date_of_service", "access_level": level, "sensitive": sensitive,
                        "owner": "bench", "related_policies": [], "source_file": "synthetic", "text_sha256": "0"}
                node = make_node(doc_id, texts[i], meta)
                chunks.append((texts[i], json.dumps(row_metadata(node)), chunk_id, _vec_text(vec)))
        k += 1
    chunks = chunks[:n]

    t0 = time.perf_counter()
    with db.owner.begin() as conn:
        defs = dict(conn.execute(text(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'data_chunks' AND indexname = ANY(:n)"),
            {"n": list(REBUILT_INDEXES)}).all())
        for name in defs:
            conn.execute(text(f'DROP INDEX "{name}"'))
        conn.execute(text(
            "INSERT INTO documents (doc_id, title, source_type, date_basis, access_level, owner) "
            "VALUES (:doc_id, :title, :source_type, :date_basis, :access_level, :owner)"), docs)
        conn.execute(text(
            "INSERT INTO document_versions (doc_id, version, title, source_type, effective_from, effective_to, "
            "supersedes, superseded_by, date_basis, access_level, sensitive, owner, source_file, source_sha256) "
            "VALUES (:doc_id, :version, :title, :source_type, :effective_from, :effective_to, :supersedes, "
            ":superseded_by, :date_basis, :access_level, :sensitive, :owner, :source_file, :source_sha256)"),
            versions)
        raw = conn.connection.driver_connection
        with raw.cursor() as cur:
            with cur.copy("COPY data_chunks (text, metadata_, node_id, embedding) FROM STDIN") as copy:
                for row in chunks:
                    copy.write_row(row)
    t_copy = time.perf_counter() - t0
    t1 = time.perf_counter()
    with db.owner.begin() as conn:
        conn.execute(text("SET LOCAL maintenance_work_mem = '512MB'"))
        for name, ddl in defs.items():
            conn.execute(text(ddl))
    t_index = time.perf_counter() - t1
    t2 = time.perf_counter()
    with db.owner.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE data_chunks; ANALYZE chunk_search; ANALYZE document_versions; ANALYZE documents"))
    t_analyze = time.perf_counter() - t2
    with db.owner.connect() as conn:
        total = conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
        mix = dict(conn.execute(text(
            "SELECT metadata_->>'access_level', count(*) FROM data_chunks GROUP BY 1")).all())
    return {"filler": len(chunks), "documents": len(docs), "versions": len(versions), "total_chunks": total,
            "copy_s": t_copy, "index_build_s": t_index, "analyze_s": t_analyze, "level_mix": mix}


@dataclass
class Case:
    name: str
    levels: tuple[str, ...]
    sensitive: bool  # False adds the "not sensitive" clause, as for a rep

    @property
    def clearance(self) -> Clearance:
        return Clearance(role=f"bench:{self.name}", levels=self.levels, sensitive=self.sensitive)


CASES = (
    Case("compliance_nonsensitive_~1pct", ("compliance",), False),
    Case("compliance_~2pct", ("compliance",), True),
    Case("restricted_~10pct", ("restricted",), True),
    Case("public_~50pct", ("public",), True),
    Case("rep_public_internal_~88pct", ("public", "internal"), False),
)


def _exact(db, case: Case, qvec: list[float], k: int) -> list[tuple[str, float]]:
    distance = Chunk.embedding.cosine_distance(qvec)
    stmt = (select(Chunk.node_id, distance).where(access_clause(case.clearance, Chunk))
            .order_by(distance).limit(k))
    with db.owner.begin() as conn:
        conn.execute(text("SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off"))
        return [tuple(r) for r in conn.execute(stmt).all()]


def _matching(db, case: Case) -> int:
    with db.owner.connect() as conn:
        return conn.execute(select(func.count()).select_from(Chunk).where(
            access_clause(case.clearance, Chunk))).scalar_one()


class _Capture:
    """The last SELECT the application engine ran (the statement PGVectorStore built)."""

    def __init__(self, engine) -> None:
        self.statement = None
        self.params = None
        event.listen(engine, "before_cursor_execute", self._on)

    def _on(self, conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "data_chunks" in statement:
            self.statement, self.params = statement, parameters


def _explain(db, clearance: Clearance, statement, params) -> str:
    with permitted_scope(clearance), db.app.begin() as conn:
        return "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN (ANALYZE, BUFFERS) " + statement, params))


def filtered_checks(db, embed_model, questions: list[str], out_dir: Path, tag: str, k: int = 10) -> list[dict]:
    out_dir.mkdir(parents=True, exist_ok=True)
    store = chunk_vector_store(db)
    cap = _Capture(db.app)
    embs = [embed_model.get_query_embedding(q) for q in questions]
    total = None
    with db.owner.connect() as conn:
        total = conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
    results = []
    for case in CASES:
        matching = _matching(db, case)
        arm = PermissionScopedRetriever(store, embed_model, ArmConfig(clearance=case.clearance, top_k=k, mode="dense"))
        recalls, short, lat, gaps = [], 0, [], []
        for q, emb in zip(questions, embs):
            t0 = time.perf_counter()
            nodes = arm.retrieve(QueryBundle(q, embedding=emb))
            lat.append((time.perf_counter() - t0) * 1000)
            got = [n.node.node_id for n in nodes]
            exact = _exact(db, case, list(emb), k)
            if len(got) != min(k, matching):
                short += 1
            recalls.append(len(set(got) & {e[0] for e in exact}) / max(1, len(exact)))
            # diagnostic: how much further (cosine distance) the approximate 10th hit is than the exact 10th
            if nodes and exact:
                gaps.append((1 - min(n.score for n in nodes)) - exact[-1][1])
        plan = _explain(db, case.clearance, cap.statement, cap.params)
        (out_dir / f"{tag}_dense_{case.name}.txt").write_text(
            f"-- {case.name}: {matching} of {total} rows permitted\n-- statement\n{cap.statement}\n-- params\n"
            f"{ {k2: (v if k2 != 'query_embedding' else '<384-d>') for k2, v in (cap.params or {}).items()} if isinstance(cap.params, dict) else '<positional>'}\n"
            f"-- plan\n{plan}\n")
        results.append({
            "case": case.name, "matching": matching, "fraction": matching / total,
            "queries": len(questions), "short_results": short,
            "recall_at_10_mean": float(np.mean(recalls)), "recall_at_10_min": float(np.min(recalls)),
            "uses_hnsw": "data_chunks_embedding_hnsw" in plan,
            "uses_access_level_index": "data_chunks_access_level" in plan or "data_chunks_metadata" in plan,
            "p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95)),
            "kth_distance_gap_mean": float(np.mean(gaps)) if gaps else None,
            "kth_distance_gap_max": float(np.max(gaps)) if gaps else None,
        })
    # the full-text arm, under the rep's predicate
    rep = Clearance(role="bench:rep", levels=("public", "internal"), sensitive=False)
    arm = PermissionScopedRetriever(store, None, ArmConfig(clearance=rep, top_k=20, mode="text"))
    arm.retrieve(QueryBundle(questions[0]))
    plan = _explain(db, rep, cap.statement, cap.params)
    (out_dir / f"{tag}_text_rep.txt").write_text(f"-- statement\n{cap.statement}\n-- plan\n{plan}\n")
    results.append({"case": "fulltext_rep", "uses_gin": "data_chunks_idx" in plan,
                    "to_tsvector_on_column_in_plan": "to_tsvector" in plan,
                    "statement_has_to_tsvector": "to_tsvector" in (cap.statement or "")})
    event.remove(db.app, "before_cursor_execute", cap._on)
    results.append(_explain_side_path(db, questions[0], out_dir, tag))
    results.append(_explain_text_join(db, questions[0], out_dir, tag))
    results.append(_explain_version_lookups(db, out_dir, tag))
    return results


def _explain_side_path(db, question: str, out_dir: Path, tag: str) -> dict:
    """The side path's inner query (migration 0010), as the definer runs it, for the rep."""
    from policydesk.retrievers.text import or_query

    with db.owner.begin() as conn:
        conn.execute(text("SELECT set_config('policydesk.levels', 'public,internal', true), "
                          "set_config('policydesk.sensitive', 'off', true)"))
        body = conn.execute(text("SELECT prosrc FROM pg_proc WHERE proname = 'policydesk_text_search'")).scalar_one()
        sql = re.sub(r"\bquery\b", ":q", body).replace("greatest(least(k, 200), 0)", "20")
        plan = "\n".join(r[0] for r in conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + sql), {"q": or_query(question)}))
    (out_dir / f"{tag}_text_side_path_rep.txt").write_text(f"-- function body\n{body}\n-- plan\n{plan}\n")
    return {"case": "fulltext_side_path_rep", "uses_gin": "chunk_search_tsv" in plan}


def _explain_text_join(db, question: str, out_dir: Path, tag: str) -> dict:
    """The full-text arm's whole statement (side function joined to the chunk rows), as a rep."""
    from policydesk.retrievers.text import or_query, search_statement

    rep = Clearance(role="bench:rep", levels=("public", "internal"), sensitive=False)
    stmt = search_statement(or_query(question), 20, rep)
    sql = str(stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
    with permitted_scope(rep), db.app.begin() as conn:
        plan = "\n".join(r[0] for r in conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + sql)))
    (out_dir / f"{tag}_text_join_rep.txt").write_text(f"-- statement\n{sql}\n-- plan\n{plan}\n")
    return {"case": "fulltext_join_rep", "chunk_rows_by_node_id_index": "data_chunks_node_id_key" in plan,
            "seq_scan_on_chunks": "Seq Scan on data_chunks" in plan, "exec": plan.strip().splitlines()[-1]}


def _explain_version_lookups(db, out_dir: Path, tag: str) -> dict:
    """EXPLAIN the version resolver's two statements for a synthetic 3-version policy a rep can see."""
    from policydesk.storage.models import DocumentVersion

    rep = Clearance(role="bench:rep", levels=("public", "internal"), sensitive=False)
    with db.owner.connect() as conn:
        doc_id = conn.execute(select(DocumentVersion.doc_id).where(
            DocumentVersion.doc_id.like("SYN-%"), DocumentVersion.version == 3,
            access_clause(rep, DocumentVersion)).limit(1)).scalar()
    plans = {}
    with permitted_scope(rep), db.app.begin() as conn:
        for name, stmt in (("versions", versions_statement([doc_id], rep)),
                           ("section", sections_statement(doc_id, 1, rep, "s0"))):
            sql = str(stmt.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
            plans[name] = "\n".join(r[0] for r in conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + sql)))
    body = "".join(f"-- {n} ({doc_id})\n{p}\n\n" for n, p in plans.items())
    (out_dir / f"{tag}_version_lookups.txt").write_text(body)
    return {"case": "version_lookups", "doc_id": doc_id,
            "section_uses_doc_section_index": "data_chunks_doc_section" in plans["section"],
            "section_seq_scan": "Seq Scan on data_chunks" in plans["section"],
            "section_exec": plans["section"].strip().splitlines()[-1],
            "versions_exec": plans["versions"].strip().splitlines()[-1]}
