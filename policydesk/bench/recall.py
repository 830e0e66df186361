"""Filtered dense top-k against an exact scan: the bench's selectivity cases and each role's filter.

For each case the production dense arm (`PermissionScopedRetriever`, application login, under
row-level security) runs every question; recall@10 is against an exact scan of the same
predicate (owner login, index scans off), by id and by distance (ties count). The plans the
statements took are written as EXPLAIN (ANALYZE, BUFFERS) dumps to the directory given
(`explain.py`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from llama_index.core.schema import QueryBundle
from sqlalchemy import event, func, select, text

from policydesk.bench.explain import (
    Capture,
    explain,
    explain_side_path,
    explain_text_join,
    explain_version_lookups,
)
from policydesk.retrievers import chunk_vector_store
from policydesk.retrievers.scoped import ArmConfig, PermissionScopedRetriever
from policydesk.storage.buffers import DENSE_INDEX
from policydesk.storage.clearance import Clearance
from policydesk.storage.models import Chunk
from policydesk.storage.predicate import access_clause


@dataclass
class Case:
    name: str
    levels: tuple[str, ...]
    sensitive: bool  # False adds the "not sensitive" clause, as for a rep
    product: str | None = None  # a line of business chosen with the question

    @property
    def clearance(self) -> Clearance:
        return Clearance(role=f"bench:{self.name}", levels=self.levels, sensitive=self.sensitive,
                         line_of_business=self.product)


# Selectivity cases, then each role's own filter (policydesk/accounts/access.py): the rep's is the ~88% case.
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


def exact_top_k(db, case: Case, qvec: list[float], k: int) -> list[tuple[str, float]]:
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


def matching_rows(db, case: Case) -> int:
    with db.owner.connect() as conn:
        return conn.execute(select(func.count()).select_from(Chunk).where(
            access_clause(case.clearance, Chunk))).scalar_one()


def filtered_checks(db, embed_model, questions: list[str], out_dir: Path, tag: str, k: int = 10) -> list[dict]:
    out_dir.mkdir(parents=True, exist_ok=True)
    store = chunk_vector_store(db)
    cap = Capture(db.app)
    embs = [embed_model.get_query_embedding(q) for q in questions]
    total = None
    with db.owner.connect() as conn:
        total = conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
    results = []
    for case in bench_cases(db):
        matching = matching_rows(db, case)
        arm = PermissionScopedRetriever(store, embed_model, ArmConfig(clearance=case.clearance, top_k=k))
        recalls, recalls_dist, short, lat, gaps = [], [], 0, [], []
        for q, emb in zip(questions, embs):
            t0 = time.perf_counter()
            nodes = arm.retrieve(QueryBundle(q, embedding=emb))
            lat.append((time.perf_counter() - t0) * 1000)
            got = [n.node.node_id for n in nodes]
            exact = exact_top_k(db, case, list(emb), k)
            if len(got) != min(k, matching):
                short += 1
            by_id, by_dist = recall_at_k([(n.node.node_id, 1 - n.score) for n in nodes], exact)
            recalls.append(by_id)
            recalls_dist.append(by_dist)
            # diagnostic: how much further (cosine distance) the approximate 10th hit is than the exact 10th
            if nodes and exact:
                gaps.append((1 - min(n.score for n in nodes)) - exact[-1][1])
        plan = explain(db, case.clearance, cap.statement, cap.params)
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
            "uses_hnsw": DENSE_INDEX in plan,
            "uses_access_level_index": "data_chunks_access_level" in plan or "data_chunks_metadata" in plan,
            "p50_ms": float(np.percentile(lat, 50)), "p95_ms": float(np.percentile(lat, 95)),
            "kth_distance_gap_mean": float(np.mean(gaps)) if gaps else None,
            "kth_distance_gap_max": float(np.max(gaps)) if gaps else None,
        })
    event.remove(db.app, "before_cursor_execute", cap._on)
    results.append(explain_side_path(db, questions[0], out_dir, tag))
    results.append(explain_text_join(db, questions[0], out_dir, tag))
    results.append(explain_version_lookups(db, out_dir, tag))
    return results
