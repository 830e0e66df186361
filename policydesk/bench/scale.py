"""Synthetic filler at scale: documents, their versions and chunk rows, bulk-loaded.

Two kinds of filler, named in every result (`filler_mode`):

- "noisy" (the default): copies of real chunk texts whose embeddings are the real chunk
  embedding plus small Gaussian noise, renormalised (as tests/test_retrieval.py builds them).
  Each demo chunk gets 80-800 near-identical vectors: the near-duplicate shape of a corpus of
  versions and editions, in tighter clusters than a real one has.
- "realistic": templated policy-like sections (`policy_text.py`: many topics, aspects,
  numbers, headings; later versions rewrite a sentence) embedded by the offline model as ingest
  embeds a chunk. The vectors are kept on disk (`vector_file.py`, under the data dir), so a
  10^5 filler is embedded once. A quarter of the policies name one of the corpus's products.

Either way the chunks are grouped into synthetic documents with 1-3 versions of 4 sections each,
so version resolution has real `document_versions` rows to read. Access levels are drawn per
document: public 50%, internal 38%, restricted 10%, compliance 2% (half of compliance marked
sensitive).

A realistic filler larger than `embed_limit` distinct texts embeds that many and derives the
rest from them (`derived.py`): 10^6 texts would take the offline model most of a day here.

Rows go in with COPY on the owner engine, made one at a time (a 10^6 filler is not held as
rows). The HNSW and GIN indexes are dropped first and recreated from their own definitions
afterwards (bulk build instead of row-by-row inserts; `IndexBuild` may change the HNSW build
parameters and the build's memory and workers), each timed and sized, then VACUUM (ANALYZE); then the
topic gate's terms are counted (`topic_terms.catch_up`, as ingest counts the chunks it writes).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Iterable

import numpy as np
from pydantic import BaseModel, Field
from sqlalchemy import text

from policydesk.bench import policy_text
from policydesk.bench.derived import PlannedText, derive, nearest_neighbour_check
from policydesk.bench.memory import PeakRSS
from policydesk.bench.vector_file import FillerVectorFile
from policydesk.ingest.chunking import embed_text
from policydesk.ingest.chunks import make_node, row_metadata
from policydesk.storage.buffers import DENSE_INDEX as HNSW_INDEX
from policydesk.storage.chunk_ids import chunk_id
from policydesk.screening.topic_terms import catch_up_database

LEVELS = ("public", "internal", "restricted", "compliance")
LEVEL_P = (0.50, 0.38, 0.10, 0.02)
VERSION_P = policy_text.VERSION_P  # documents with 1, 2, 3 versions
SECTIONS_PER_VERSION = 4
STARTS = ("2024-01-01", "2025-01-01", "2026-01-01")
EMBED_DIM = 384
REBUILT_INDEXES = (HNSW_INDEX, "data_chunks_idx", "data_chunks_metadata", "chunk_search_tsv")


class IndexBuild(BaseModel):
    """How the dropped indexes are rebuilt: the HNSW index's own parameters unless m and
    ef_construction are given, in one transaction with this much memory and these workers."""
    m: int | None = Field(default=None, ge=2)
    ef_construction: int | None = Field(default=None, ge=4)
    maintenance_work_mem: str = "512MB"
    parallel_workers: int | None = Field(default=None, ge=0)  # max_parallel_maintenance_workers

    def hnsw_ddl(self, ddl: str) -> str:
        if self.m is None and self.ef_construction is None:
            return ddl
        built = dict(re.findall(r"(m|ef_construction)='?(\d+)", ddl))
        m, efc = self.m or built.get("m", 16), self.ef_construction or built.get("ef_construction", 64)
        return re.sub(r"\s*WITH \(.*\)\s*$", "", ddl) + f" WITH (m = {m}, ef_construction = {efc})"


def _vec_text(v: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


def _chunk_row(doc_id: str, title: str, stype: str, level: str, sensitive: bool, v: int, nver: int, s: int,
               text_: str, vec: np.ndarray, products: list[str] | None = None) -> tuple:
    eff_to = STARTS[v] if v < nver else "9999-12-31"
    node_id = chunk_id(doc_id, v, f"s{s}")
    meta = {"chunk_id": node_id, "title": title, "version": v, "section": f"S{s}",
            "section_id": f"s{s}", "source_type": stype, "effective_from": STARTS[v - 1],
            "effective_to": eff_to, "supersedes": None, "superseded_by": None,
            "date_basis": "date_of_service", "access_level": level, "sensitive": sensitive,
            "owner": "bench", "related_policies": [], "source_file": "synthetic", "text_sha256": "0"}
    if products:
        meta["line_of_business"] = products
    node = make_node(doc_id, text_, meta)
    return (text_, json.dumps(row_metadata(node)), node_id, _vec_text(vec))


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


def _realistic_layout(db, n: int, seed: int, embed_model, cache_dir: Path, progress=None,
                      embed_limit: int | None = None) -> tuple[list, list, Iterable[tuple], dict]:
    """Templated policy-like sections (policy_text.py) embedded by the model, as ingest embeds
    a chunk (document title, then the text); past `embed_limit` distinct texts, vectors derived
    from the embedded ones (derived.py). A quarter of the policies name one of the corpus's
    products, so a product filter has filler rows to exclude."""
    if embed_model is None:
        raise ValueError("the realistic filler needs an embedding model to embed its texts")
    rng = np.random.default_rng(seed)
    with db.owner.connect() as conn:
        products = sorted(set(conn.execute(text(
            "SELECT jsonb_array_elements_text(line_of_business) FROM document_versions "
            "WHERE line_of_business IS NOT NULL")).scalars()))
    docs, versions, planned, about = [], [], [], []
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
                about.append(PlannedText(k, v, s, fdoc.topic, fdoc.source_type, embed_text(fdoc.title, body)))
    planned, about = planned[:n], about[:n]
    texts = list(dict.fromkeys(p.text for p in about))
    limited = embed_limit is not None and len(texts) > embed_limit
    store = FillerVectorFile(cache_dir, embed_model, EMBED_DIM)
    first, stats = store.vectors(texts[:embed_limit] if limited else texts, progress=progress)
    embedded = dict(zip(texts, first))
    if limited:
        vectors, derivation = derive(about, embedded, seed)
        derivation |= nearest_neighbour_check(vectors, np.array([p.text not in embedded for p in about]), seed)
    else:
        vectors, derivation = np.array([embedded[p.text] for p in about]), None
    del about, embedded, first
    chunks = (_chunk_row(*p[:9], vec, p[9]) for p, vec in zip(planned, vectors))
    return docs, versions, chunks, {"generator_version": policy_text.GENERATOR_VERSION, "products": products,
                                    "distinct_texts": len(texts), "embed_limit": embed_limit,
                                    "derived_vectors": derivation, **stats}


def _rebuild(db, defs: dict[str, str], build: IndexBuild) -> dict:
    """Recreate the dropped indexes in one transaction; each one's build time and size, and the
    server's peak resident memory over the builds."""
    out: dict = {"maintenance_work_mem": build.maintenance_work_mem, "parallel_workers": build.parallel_workers}
    with PeakRSS(db) as rss, db.owner.begin() as conn:
        conn.execute(text("SELECT set_config('maintenance_work_mem', :m, true)"), {"m": build.maintenance_work_mem})
        if build.parallel_workers is not None:
            conn.execute(text("SELECT set_config('max_parallel_maintenance_workers', :w, true)"),
                         {"w": str(build.parallel_workers)})
        for name, ddl in defs.items():
            ddl = build.hnsw_ddl(ddl) if name == HNSW_INDEX else ddl
            t0 = time.perf_counter()
            conn.execute(text(ddl))
            out[name] = {"build_s": round(time.perf_counter() - t0, 1), "ddl": ddl, "bytes": conn.execute(
                text("SELECT pg_relation_size(CAST(:i AS regclass))"), {"i": name}).scalar_one()}
    out["server_peak_rss_bytes"] = rss.peak
    return out


def insert_filler(db, n: int, *, filler: str = "noisy", seed: int = 8, noise: float = 0.03, embed_model=None,
                  cache_dir: Path | None = None, progress=None, embed_limit: int | None = None,
                  build: IndexBuild | None = None, count_terms: bool = True) -> dict:
    """Add n filler chunks; `filler` is "noisy" (demo chunk copies with noisy vectors) or
    "realistic" (templated policy-like text embedded by `embed_model`, vectors kept in `cache_dir`;
    past `embed_limit` distinct texts, derived from the embedded ones). `count_terms=False`
    leaves the topic gate's queue uncounted: a database for retrieval figures only, since the
    gate (and so an ask) is not ready until the queue is counted."""
    if filler == "noisy":
        docs, versions, chunks, about = _noisy_layout(db, n, seed, noise)
    elif filler == "realistic":
        if cache_dir is None:
            raise ValueError("the realistic filler needs a cache_dir for its vectors")
        docs, versions, chunks, about = _realistic_layout(db, n, seed, embed_model, cache_dir, progress, embed_limit)
    else:
        raise ValueError(f"unknown filler {filler!r}; expected 'noisy' or 'realistic'")

    t0 = time.perf_counter()
    written = 0
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
                    written += 1
    t_copy = time.perf_counter() - t0
    t1 = time.perf_counter()
    indexes = _rebuild(db, defs, build or IndexBuild())
    t_index = time.perf_counter() - t1
    t2 = time.perf_counter()
    # VACUUM as well as ANALYZE: a bulk load leaves the visibility map empty, and left alone the
    # insert-triggered autovacuum of a 10^6-row table would run during the timed reads.
    with db.owner.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        for table in ("data_chunks", "chunk_search", "document_versions", "documents"):
            conn.execute(text(f"VACUUM (ANALYZE) {table}"))
    t_analyze = time.perf_counter() - t2
    terms = catch_up_database(db) if count_terms else None  # what ingest does for the chunks it writes
    with db.owner.connect() as conn:
        total = conn.execute(text("SELECT count(*) FROM data_chunks")).scalar_one()
        mix = dict(conn.execute(text(
            "SELECT metadata_->>'access_level', count(*) FROM data_chunks GROUP BY 1")).all())
        table_bytes = conn.execute(text("SELECT pg_table_size('data_chunks')")).scalar_one()
    return {"filler": written, "filler_mode": filler, "seed": seed, **about, "documents": len(docs),
            "versions": len(versions), "total_chunks": total, "copy_s": t_copy, "index_build_s": t_index,
            "indexes": indexes, "table_bytes": table_bytes, "vacuum_analyze_s": t_analyze,
            "topic_terms_s": round(terms.seconds, 1) if terms else None, "level_mix": mix}
