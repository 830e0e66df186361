"""Synthetic filler at scale, and filtered top-k checks against an exact scan.

Two kinds of filler, named in every result (`filler_mode`):

- "noisy" (the default, and the only kind before issue 17 point 2): copies of real chunk texts
  whose embeddings are the real chunk embedding plus small Gaussian noise, renormalised (as
  tests/test_retrieval.py builds them). Each demo chunk gets 80-800 near-identical vectors: tight
  clusters no real corpus has, which is hard on an HNSW graph.
- "realistic": templated policy-like sections (`policy_text.py`: many topics, aspects,
  numbers, headings; later versions rewrite a sentence) embedded by the offline model as ingest
  embeds a chunk. The vectors are kept on disk (`vector_file.py`, under the data dir), so a
  10^5 filler is embedded once. A quarter of the policies name one of the corpus's products.

Either way the chunks are grouped into synthetic documents with 1-3 versions of 4 sections each,
so version resolution has real `document_versions` rows to read. Access levels are drawn per
document: public 50%, internal 38%, restricted 10%, compliance 2% (half of compliance marked
sensitive).

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

from policydesk.bench import policy_text
from policydesk.bench.vector_file import FillerVectorFile
from policydesk.ingest.chunking import embed_text
from policydesk.ingest.chunks import make_node, row_metadata
from policydesk.retrievers.scoped import ArmConfig, PermissionScopedRetriever
from policydesk.retrievers import chunk_vector_store
from policydesk.storage.clearance import Clearance
from policydesk.storage.chunk_ids import chunk_id
from policydesk.storage.models import Chunk
from policydesk.storage.predicate import access_clause
from policydesk.storage.scope import permitted_scope
from policydesk.storage.sources import sections_statement, versions_statement

LEVELS = ("public", "internal", "restricted", "compliance")
LEVEL_P = (0.50, 0.38, 0.10, 0.02)
VERSION_P = policy_text.VERSION_P  # documents with 1, 2, 3 versions
SECTIONS_PER_VERSION = 4
STARTS = ("2024-01-01", "2025-01-01", "2026-01-01")
EMBED_DIM = 384
REBUILT_INDEXES = ("data_chunks_embedding_hnsw", "data_chunks_idx", "data_chunks_metadata", "chunk_search_tsv")


def _vec_text(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


def _chunk_row(doc_id: str, title: str, stype: str, level: str, sensitive: bool, v: int, nver: int, s: int,
               text_: str, vec: np.ndarray, products: list[str] | None = None) -> tuple:
    eff_to = STARTS[v] if v < nver else "9999-12-31"
    cid = chunk_id(doc_id, v, f"s{s}")
    meta = {"chunk_id": cid, "title": title, "version": v, "section": f"S{s}",
            "section_id": f"s{s}", "source_type": stype, "effective_from": STARTS[v - 1],
            "effective_to": eff_to, "supersedes": None, "superseded_by": None,
            "date_basis": "date_of_service", "access_level": level, "sensitive": sensitive,
            "owner": "bench", "related_policies": [], "source_file": "synthetic", "text_sha256": "0"}
    if products:
        meta["line_of_business"] = products
    node = make_node(doc_id, text_, meta)
    return (text_, json.dumps(row_metadata(node)), cid, _vec_text(vec))


def _doc_rows(doc_id: str, title: str, stype: str, level: str, sensitive: bool, nver: int,
              products: list[str] | None = None) -> tuple[dict, list[dict]]:
    lob = json.dumps(products) if products else None
    doc = dict(doc_id=doc_id, title=title, source_type=stype, date_basis="date_of_service",
               access_level=level, owner="bench", line_of_business=lob)
    versions = []
    for v in range(1, nver + 1):
        eff_to = STARTS[v] if v < nver else "9999-12-31"
        versions.append(dict(doc_id=doc_id, version=v, title=title, source_type=stype,
                             effective_from=STARTS[v - 1], effective_to=eff_to,
                             supersedes=v - 1 if v > 1 else None, superseded_by=v + 1 if v < nver else None,
                             date_basis="date_of_service", access_level=level, sensitive=sensitive, owner="bench",
                             source_file="synthetic", source_sha256="0" * 64, line_of_business=lob))
    return doc, versions


def _access(rng) -> tuple[str, bool]:
    level = LEVELS[rng.choice(4, p=LEVEL_P)]
    return level, bool(level == "compliance" and rng.random() < 0.5)


def _noisy_layout(db, n: int, seed: int, noise: float) -> tuple[list, list, list, dict]:
    """Copies of the demo chunks' texts, their embeddings plus Gaussian noise."""
    rng = np.random.default_rng(seed)
    with db.owner.connect() as conn:
        base = conn.execute(text("SELECT text, embedding::text FROM data_chunks")).all()
    texts = [b[0] for b in base]
    embs = np.array([np.array(b[1].strip("[]").split(","), dtype=np.float32) for b in base])

    docs, versions, chunks = [], [], []
    k = 0
    while len(chunks) < n:
        doc_id = f"SYN-D{k}"
        level, sensitive = _access(rng)
        stype = ("policy", "wiki", "call_note")[rng.choice(3, p=(0.6, 0.25, 0.15))]
        nver = int(rng.choice(3, p=VERSION_P)) + 1 if stype == "policy" else 1
        doc, vers = _doc_rows(doc_id, f"Synthetic {k}", stype, level, sensitive, nver)
        docs.append(doc)
        versions += vers
        for v in range(1, nver + 1):
            for s in range(SECTIONS_PER_VERSION):
                i = int(rng.integers(len(texts)))
                vec = embs[i] + rng.normal(0, noise, embs.shape[1]).astype(np.float32)
                vec /= np.linalg.norm(vec)
                chunks.append(_chunk_row(doc_id, f"Synthetic {k}", stype, level, sensitive, v, nver, s, texts[i], vec))
        k += 1
    return docs, versions, chunks[:n], {"noise": noise}


def _realistic_layout(db, n: int, seed: int, embed_model, cache_dir: Path, progress=None
                      ) -> tuple[list, list, list, dict]:
    """Templated policy-like sections (policy_text.py) embedded by the model, as ingest embeds
    a chunk (document title, then the text). A quarter of the policies name one of the
    corpus's products (issue 18), so a product filter has filler rows to exclude."""
    if embed_model is None:
        raise ValueError("the realistic filler needs an embedding model to embed its texts")
    rng = np.random.default_rng(seed)
    with db.owner.connect() as conn:
        products = sorted(set(conn.execute(text(
            "SELECT jsonb_array_elements_text(line_of_business) FROM document_versions "
            "WHERE line_of_business IS NOT NULL")).scalars()))
    docs, versions, planned = [], [], []
    for k, fdoc in enumerate(policy_text.documents(seed, SECTIONS_PER_VERSION)):
        if len(planned) >= n:
            break
        doc_id = f"SYN-D{k}"
        level, sensitive = _access(rng)
        lob = ([products[int(rng.integers(len(products)))]]
               if products and fdoc.source_type == "policy" and rng.random() < 0.25 else None)
        nver = len(fdoc.versions)
        doc, vers = _doc_rows(doc_id, fdoc.title, fdoc.source_type, level, sensitive, nver, lob)
        docs.append(doc)
        versions += vers
        for v, sections in enumerate(fdoc.versions, start=1):
            for s, body in enumerate(sections):
                planned.append((doc_id, fdoc.title, fdoc.source_type, level, sensitive, v, nver, s, body, lob))
    planned = planned[:n]
    vectors, stats = FillerVectorFile(cache_dir, embed_model, EMBED_DIM).vectors(
        [embed_text(p[1], p[8]) for p in planned], progress=progress)
    chunks = [_chunk_row(*p[:9], vec, p[9]) for p, vec in zip(planned, vectors)]
    return docs, versions, chunks, {"generator_version": policy_text.GENERATOR_VERSION, "products": products,
                                    "distinct_texts": stats["embedded_now"] + stats["from_file"], **stats}


def insert_filler(db, n: int, *, filler: str = "noisy", seed: int = 8, noise: float = 0.03, embed_model=None,
                  cache_dir: Path | None = None, progress=None) -> dict:
    """Add n filler chunks; `filler` is "noisy" (demo chunk copies with noisy vectors) or
    "realistic" (templated policy-like text embedded by `embed_model`, vectors kept in `cache_dir`)."""
    if filler == "noisy":
        docs, versions, chunks, about = _noisy_layout(db, n, seed, noise)
    elif filler == "realistic":
        if cache_dir is None:
            raise ValueError("the realistic filler needs a cache_dir for its vectors")
        docs, versions, chunks, about = _realistic_layout(db, n, seed, embed_model, cache_dir, progress)
    else:
        raise ValueError(f"unknown filler {filler!r}; expected 'noisy' or 'realistic'")

    t0 = time.perf_counter()
    with db.owner.begin() as conn:
        defs = dict(conn.execute(text(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename IN ('data_chunks', 'chunk_search') "
            "AND indexname = ANY(:n)"),
            {"n": list(REBUILT_INDEXES)}).all())
        for name in defs:
            conn.execute(text(f'DROP INDEX "{name}"'))
        conn.execute(text(
            "INSERT INTO documents (doc_id, title, source_type, date_basis, access_level, owner, line_of_business) "
            "VALUES (:doc_id, :title, :source_type, :date_basis, :access_level, :owner, "
            "CAST(:line_of_business AS jsonb))"), docs)
        conn.execute(text(
            "INSERT INTO document_versions (doc_id, version, title, source_type, effective_from, effective_to, "
            "supersedes, superseded_by, date_basis, access_level, sensitive, owner, source_file, source_sha256, "
            "line_of_business) "
            "VALUES (:doc_id, :version, :title, :source_type, :effective_from, :effective_to, :supersedes, "
            ":superseded_by, :date_basis, :access_level, :sensitive, :owner, :source_file, :source_sha256, "
            "CAST(:line_of_business AS jsonb))"),
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
    return {"filler": len(chunks), "filler_mode": filler, "seed": seed, **about, "documents": len(docs), "versions": len(versions), "total_chunks": total,
            "copy_s": t_copy, "index_build_s": t_index, "analyze_s": t_analyze, "level_mix": mix}


@dataclass
class Case:
    name: str
    levels: tuple[str, ...]
    sensitive: bool  # False adds the "not sensitive" clause, as for a rep
    product: str | None = None  # a line of business chosen with the question (issue 18)

    @property
    def clearance(self) -> Clearance:
        return Clearance(role=f"bench:{self.name}", levels=self.levels, sensitive=self.sensitive,
                         line_of_business=self.product)


# Selectivity cases, then each role's own filter (policydesk/access.py): the rep's is the ~88% case.
CASES = (
    Case("compliance_nonsensitive_~1pct", ("compliance",), False),
    Case("compliance_~2pct", ("compliance",), True),
    Case("restricted_~10pct", ("restricted",), True),
    Case("public_~50pct", ("public",), True),
    Case("rep_public_internal_~88pct", ("public", "internal"), False),
    Case("supervisor_~98pct", ("public", "internal", "restricted"), True),
    Case("compliance_role_100pct", ("public", "internal", "restricted", "compliance"), True),
)


def bench_cases(db) -> tuple[Case, ...]:
    """CASES, plus the rep's and the supervisor's filter with a product chosen, for the first
    product the corpus names (none when it names none)."""
    with db.owner.connect() as conn:
        product = conn.execute(text(
            "SELECT min(p) FROM document_versions, jsonb_array_elements_text(line_of_business) p")).scalar()
    if product is None:
        return CASES
    return CASES + (Case(f"rep_product_{product}", ("public", "internal"), False, product),
                    Case(f"supervisor_product_{product}", ("public", "internal", "restricted"), True, product))


def _exact(db, case: Case, qvec: list[float], k: int) -> list[tuple[str, float]]:
    distance = Chunk.embedding.cosine_distance(qvec)
    stmt = (select(Chunk.node_id, distance).where(access_clause(case.clearance, Chunk))
            .order_by(distance).limit(k))
    with db.owner.begin() as conn:
        conn.execute(text("SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off"))
        return [tuple(r) for r in conn.execute(stmt).all()]


def recall_at_k(got: list[tuple[str, float]], exact: list[tuple[str, float]], tie: float = 1e-6
                ) -> tuple[float, float]:
    """(by id, by distance) recall of `got` against the exact top k, both as (node id, cosine distance).

    By id: the share of the exact top k's ids returned. By distance: the share of returned rows
    no further than the exact k-th distance, so a returned row tied with an exact one (the same
    text in two versions of a document has the same vector) counts as found. They differ only
    where vectors tie.
    """
    if not exact:
        return 1.0, 1.0
    want = {e[0] for e in exact}
    by_id = len({g[0] for g in got} & want) / len(exact)
    by_distance = min(1.0, sum(1 for g in got if g[1] <= exact[-1][1] + tie) / len(exact))
    return by_id, by_distance


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
    for case in bench_cases(db):
        matching = _matching(db, case)
        arm = PermissionScopedRetriever(store, embed_model, ArmConfig(clearance=case.clearance, top_k=k))
        recalls, recalls_dist, short, lat, gaps = [], [], 0, [], []
        for q, emb in zip(questions, embs):
            t0 = time.perf_counter()
            nodes = arm.retrieve(QueryBundle(q, embedding=emb))
            lat.append((time.perf_counter() - t0) * 1000)
            got = [n.node.node_id for n in nodes]
            exact = _exact(db, case, list(emb), k)
            if len(got) != min(k, matching):
                short += 1
            by_id, by_dist = recall_at_k([(n.node.node_id, 1 - n.score) for n in nodes], exact)
            recalls.append(by_id)
            recalls_dist.append(by_dist)
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
            "recall_at_10_by_distance_mean": float(np.mean(recalls_dist)),
            "recall_at_10_by_distance_min": float(np.min(recalls_dist)),
            "uses_hnsw": "data_chunks_embedding_hnsw" in plan,
            "uses_access_level_index": "data_chunks_access_level" in plan or "data_chunks_metadata" in plan,
            "p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95)),
            "kth_distance_gap_mean": float(np.mean(gaps)) if gaps else None,
            "kth_distance_gap_max": float(np.max(gaps)) if gaps else None,
        })
    event.remove(db.app, "before_cursor_execute", cap._on)
    results.append(_explain_side_path(db, questions[0], out_dir, tag))
    results.append(_explain_text_join(db, questions[0], out_dir, tag))
    results.append(_explain_version_lookups(db, out_dir, tag))
    return results


# The two statements of policydesk_text_search (migration 0016), its variables as parameters: the
# function is PL/pgSQL, whose nested plans EXPLAIN does not show (and the embedded server ships no
# auto_explain), so the bench explains the branch the function takes with the same bindings.
_SIDE_FULL = ("SELECT s.node_id, ts_rank(s.tsv, CAST(:full AS tsquery)) AS rank FROM chunk_search s "
              "WHERE s.tsv @@ CAST(:full AS tsquery) AND s.access_level = ANY (:levels) AND NOT s.sensitive "
              "ORDER BY rank DESC, s.node_id LIMIT 20")
_SIDE_NARROWED = ("SELECT c.node_id, ts_rank(c.tsv, CAST(:full AS tsquery)) AS rank FROM ("
                  "SELECT s.node_id, s.tsv FROM chunk_search s WHERE s.tsv @@ CAST(:narrowed AS tsquery) "
                  "AND s.access_level = ANY (:levels) AND NOT s.sensitive OFFSET 0) c "
                  "WHERE c.tsv @@ CAST(:full AS tsquery) ORDER BY rank DESC, c.node_id LIMIT 20")


def _explain_side_path(db, question: str, out_dir: Path, tag: str) -> dict:
    """The side path's statements (migrations 0010, 0016) as the definer runs them, for the rep: the
    candidate query at the configured cap, the branch's statement, and the whole call."""
    from policydesk.retrievers.text import or_query

    from policydesk.config import get_settings

    q = or_query(question)
    cap = get_settings().TEXT_CANDIDATES  # as configured, like the retrieval stages
    levels = ["public", "internal"]
    with db.owner.begin() as conn:
        conn.execute(text("SELECT set_config('policydesk.levels', 'public,internal', true), "
                          "set_config('policydesk.sensitive', 'off', true)"))
        body = conn.execute(text("SELECT prosrc FROM pg_proc WHERE proname = 'policydesk_text_search'")).scalar_one()
        full = conn.execute(text("SELECT to_tsquery('english', :q)::text"), {"q": q}).scalar_one()
        narrowed = conn.execute(text("SELECT policydesk_text_candidates(:q, :c)::text"),
                                {"q": q, "c": cap}).scalar()
        sql = _SIDE_FULL if narrowed is None else _SIDE_NARROWED
        params = {"full": full, "narrowed": narrowed, "levels": levels}
        branch = "\n".join(r[0] for r in conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + sql), params))
        call_sql = "SELECT * FROM policydesk_text_search(:q, 20, :c)"
        conn.execute(text(call_sql), {"q": q, "c": cap})  # its plans cached, as in use
        call = "\n".join(r[0] for r in conn.execute(text("EXPLAIN (ANALYZE, BUFFERS) " + call_sql),
                                                     {"q": q, "c": cap}))
    (out_dir / f"{tag}_text_side_path_rep.txt").write_text(
        f"-- query {q!r}\n-- full query {full}\n-- candidate query at cap {cap}: {narrowed or 'none (the full query)'}\n"
        f"-- function body\n{body}\n-- the branch taken, variables bound\n{sql}\n-- plan\n{branch}\n"
        f"-- the call\n{call}\n")
    return {"case": "fulltext_side_path_rep", "uses_gin": "chunk_search_tsv" in branch,
            "narrowed": narrowed is not None, "branch_exec": branch.strip().splitlines()[-1],
            "call_exec": call.strip().splitlines()[-1]}


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
