"""Per-stage latency of the ask path, on a fresh database with the demo corpus ingested.

Every figure here is measured in-process with `time.perf_counter`, on the embedded Postgres
(or DATABASE_URL when set). Stages are timed on the same questions, one after another:

  embed        offline query embedding (all-MiniLM-L6-v2)
  dense        dense arm `.retrieve` with the precomputed embedding (SQL only), a read of its own
  text         full-text arm `.retrieve` (SQL only): the indexed side path (migration 0010)
  arms_one_connection   HybridRetriever.arm_results: both arms in one pipelined read (text sent
               first, then dense; Postgres runs them one after the other)
  arms_two_connections  the same with the dense arm on a second pipelined connection: the two
               backends run the arms side by side (settings.CONCURRENT_ARMS)
  fusion       RRF + deterministic rerank of the arms' rows, and the stored nodes of those kept
  guard        ClearanceGuard.postprocess_nodes on the fused top k (settings.TOP_K, 8): one read of
               the stored rows by chunk id under the caller's scope (docs/extending.md)
  guard_alone  the same guard calls again after all passes, back to back over the recorded
               (clearance, top k) pairs: the guard without the surrounding stages' interference
  scoped_noop  `SELECT 1` on the application engine under the caller's scope: the floor of any
               scoped read (pool checkout and ping, BEGIN, the scope's set_config, the query,
               ROLLBACK), so the guard's own share can be told from the machine's round trips
  versions     VersionResolver.postprocess_nodes (permission-scoped version lookups)
  retrieval    the arms as configured (settings.CONCURRENT_ARMS: arms_two_connections, else
               arms_one_connection) + fusion + versions, per iteration (excludes embedding); the
               headline figure
  retrieval_one_connection   arms_one_connection + fusion + versions
  retrieval_two_connections  arms_two_connections + fusion + versions
  retrieval_separate_reads   dense + text + fusion + versions (each arm a read of its own)
  naive        LlamaIndex VectorStoreIndex retriever, top 8, same store, same embedding
  synthesis    CitedAnswerSynthesizer with the offline ExtractiveAnswerer
  trace_write  one trace row through the application engine
  ask_e2e      AskPipeline.ask, offline providers, embedding included

The configured retrieval path and the naive retriever take turns reading a question first (the
first read pays for pages not yet in shared buffers); every other stage reads after both.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Callable

import numpy as np
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import QueryBundle
from sqlalchemy.orm import Session

from policydesk.accounts.access import ROLES, clearance_for
from policydesk.contract.answer import AskRequest
from policydesk.pipeline import AskPipeline
from policydesk.postprocessors import VersionResolver
from policydesk.postprocessors.guard import ClearanceGuard
from policydesk.retrievers import HybridRetriever, chunk_vector_store
from policydesk.storage.scope import permitted_scope
from policydesk.providers.passages import PassageReader
from policydesk.storage.guard_read import CallerChunks
from policydesk.synthesis.synthesizer import CitedAnswerSynthesizer
from policydesk.proof.tracing import write_trace
from policydesk.accounts.users import add_user, get_user
from policydesk.versions import VersionLookup

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "corpus"
GOLDEN = (REPO / "evals" / "golden_dev.yaml", REPO / "evals" / "golden_test.yaml")  # latency only, no scores

STAGES = ("embed", "dense", "text", "arms_one_connection", "arms_two_connections", "fusion", "guard",
          "guard_alone", "scoped_noop", "versions", "retrieval", "retrieval_one_connection", "retrieval_two_connections",
          "retrieval_separate_reads", "naive", "synthesis", "trace_write", "ask_e2e")


@dataclass
class Question:
    text: str
    role: str
    dates: dict[str, Any]


@dataclass
class StageTimes:
    ms: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in STAGES})
    ratios: list[float] = field(default_factory=list)  # retrieval (as configured) / naive, per iteration
    ratios_one: list[float] = field(default_factory=list)  # retrieval_one_connection / naive
    ratios_two: list[float] = field(default_factory=list)  # retrieval_two_connections / naive
    ratios_separate: list[float] = field(default_factory=list)  # retrieval_separate_reads / naive

    def add(self, stage: str, ms: float) -> None:
        self.ms[stage].append(ms)

    def summary(self) -> dict[str, dict[str, float]]:
        out = {}
        for stage, values in self.ms.items():
            if values:
                a = np.array(values)
                out[stage] = {"n": len(a), "p50": float(np.percentile(a, 50)), "p95": float(np.percentile(a, 95)),
                              "mean": float(a.mean())}
        return out


def load_questions(limit: int) -> tuple[list[Question], date | None]:
    from policydesk.evals.golden import load_golden
    from policydesk.evals.splits import original_order

    golden = load_golden(list(GOLDEN))
    items = [Question(i.question, i.role, dict(i.dates)) for i in original_order(golden.items)]
    return items[:limit], golden.reference_date


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1000


def time_ingest(db, embed_model, settings, corpus: Path = CORPUS) -> dict[str, float]:
    """Ingest the corpus once (model already loaded), return chunks, seconds, chunks/s."""
    from policydesk.ingest import ingest_directory

    report, ms = timed(lambda: ingest_directory(db, corpus, embed_model, settings))
    secs = ms / 1000
    return {"chunks": report.chunks_written, "seconds": secs, "chunks_per_s": report.chunks_written / secs}


def time_embedding_batch(embed_model, texts: list[str]) -> dict[str, float]:
    """Embedding alone over the chunk texts (batches as ingest does), to split ingest time."""
    _, ms = timed(lambda: embed_model.get_text_embedding_batch(texts))
    return {"texts": len(texts), "seconds": ms / 1000, "texts_per_s": len(texts) / (ms / 1000)}


def ensure_users(db) -> dict[str, str]:
    names = {}
    with Session(db.owner) as session:
        for role in ROLES:
            name = f"bench_{role}"
            if get_user(session, name=name) is None:  # a kept bench database already has them
                add_user(session, name=name, role=role, password="bench-only-password")
            names[role] = name
        session.commit()
    return names


def first_ask_ms(db, settings, embed_model, llm, question: Question, today: date | None = None) -> float:
    """One ask by a fresh pipeline, as a process's first question after start-up or an ingest:
    the refusal gate reads its vocabulary for the first time."""
    users = ensure_users(db)
    pipeline = AskPipeline(db, settings, embed_model, llm, today=today)
    req = AskRequest(user_name=users[question.role], question=question.text, dates=dict(question.dates), kind="eval")
    return timed(lambda: pipeline.ask(req))[1]


def run_stages(db, settings, embed_model, llm, questions: list[Question], *, repetitions: int = 3,
               today: date | None = None, warmup: bool = True, ask: bool = True) -> StageTimes:
    """Each stage timed on its own per question; `ask=False` leaves out the end-to-end ask
    (`ask_e2e`) for a retrieval-only run."""
    users = ensure_users(db)
    store = chunk_vector_store(db)
    lookup = VersionLookup(db)
    # The answer step as the pipeline runs it: the model's synthesizer, or without a model the
    # policy text in force; each re-reads its context under the caller's clearance. One reader for
    # the run, as the pipeline keeps one (its vector cache warm across questions).
    synthesizer = CitedAnswerSynthesizer(llm=llm) if llm is not None else None
    reader = PassageReader(embed_model) if llm is None else None
    naive = VectorStoreIndex.from_vector_store(store, embed_model=embed_model).as_retriever(similarity_top_k=8)
    pipeline = AskPipeline(db, settings, embed_model, llm, today=today)
    today = today or settings.today()
    times = StageTimes()
    guarded: list = []  # (clearance, fused top k) of every recorded guard call, for guard_alone

    def one(q: Question, record: bool, naive_first: bool = False) -> None:
        clearance = clearance_for(q.role)
        # As a request's stack builds it (`RequestStack`): the top k counts sections.
        hybrid, hybrid_two = (HybridRetriever(store, embed_model, clearance=clearance, top_k=settings.TOP_K,
                                              text_candidates=settings.TEXT_CANDIDATES, concurrent_arms=two,
                                              one_version_per_section=True)
                              for two in (False, True))
        dense_arm, text_arm = hybrid.arms
        emb, t_embed = timed(lambda: embed_model.get_query_embedding(q.text))
        bundle = QueryBundle(q.text, embedding=emb)
        # A question's first read pays for the index and heap pages not yet in shared buffers
        # (most of them once the corpus outgrows the cache), and whatever reads next finds them
        # there. So the configured path and the naive retriever take turns reading first, one
        # question each, and the other stages read after both.
        configured, other = (hybrid_two, hybrid) if settings.CONCURRENT_ARMS else (hybrid, hybrid_two)

        def naive_read() -> float:
            with permitted_scope(clearance_for("compliance")):
                return timed(lambda: naive.retrieve(QueryBundle(q.text, embedding=emb)))[1]

        if naive_first:
            t_naive = naive_read()
        (arms, _), t_configured = timed(lambda: configured.arm_results([bundle]))
        if not naive_first:
            t_naive = naive_read()
        _, t_other = timed(lambda: other.arm_results([bundle]))
        t_one, t_two = (t_other, t_configured) if settings.CONCURRENT_ARMS else (t_configured, t_other)
        _, t_dense = timed(lambda: dense_arm.retrieve(bundle))
        _, t_text = timed(lambda: text_arm.retrieve(bundle))
        # fusion of what the arms read, with the stored nodes of the rows kept built there
        fused, t_fusion = timed(lambda: hybrid.fuse([q.text], arms, None))
        guard = ClearanceGuard(engine=db.app, clearance=clearance)  # nothing verified yet: every node is read
        _, t_guard = timed(lambda: guard.postprocess_nodes(fused.nodes))
        if record:
            guarded.append((clearance, fused.nodes))

        def scoped_noop() -> None:
            with permitted_scope(clearance), db.app.connect() as conn:
                conn.exec_driver_sql("SELECT 1").all()

        _, t_noop = timed(scoped_noop)
        dates = {k: date.fromisoformat(str(v)) for k, v in q.dates.items() if v}
        resolver = VersionResolver(lookup=lookup, clearance=clearance, dates=dates, today=today, recent_change_days=settings.RECENT_CHANGE_DAYS)
        try:
            nodes, t_versions = timed(lambda: resolver.postprocess_nodes(fused.nodes))
        except Exception:  # NoVersionInForce: the pipeline refuses; the SQL still ran
            nodes, t_versions = [], 0.0
        t_synth = None
        if nodes:
            chunks = CallerChunks(db.app, clearance)
            if synthesizer is not None:
                _, t_synth = timed(lambda: synthesizer.synthesize_outcome(q.text, nodes, [], chunks=chunks))
            else:
                # with retrieval's query vector, as the pipeline hands it over
                _, t_synth = timed(lambda: reader.read(q.text, chunks.reread(nodes)[0], {q.text: emb}))
        row = dict(id=uuid.uuid4(), kind="eval", user_name=users[q.role], user_role=q.role,
                   permitted_levels=list(clearance.levels), sensitive_cleared=clearance.sensitive,
                   question=q.text, chunk_ids=[n.node.node_id for n in nodes], status="ok")
        _, t_trace = timed(lambda: write_trace(db, row))
        req = AskRequest(user_name=users[q.role], question=q.text, dates=dict(q.dates), kind="eval")
        t_ask = timed(lambda: pipeline.ask(req))[1] if ask else None
        if not record:
            return
        retrieval_separate = t_dense + t_text + t_fusion + t_versions
        retrieval_one = t_one + t_fusion + t_versions
        retrieval_two = t_two + t_fusion + t_versions
        retrieval = retrieval_two if settings.CONCURRENT_ARMS else retrieval_one
        for stage, ms in (("embed", t_embed), ("dense", t_dense), ("text", t_text), ("arms_one_connection", t_one),
                          ("arms_two_connections", t_two), ("retrieval_one_connection", retrieval_one),
                          ("retrieval_two_connections", retrieval_two),
                          ("retrieval_separate_reads", retrieval_separate),
                          ("fusion", t_fusion), ("guard", t_guard), ("scoped_noop", t_noop),
                          ("versions", t_versions), ("retrieval", retrieval), ("naive", t_naive),
                          ("synthesis", t_synth), ("trace_write", t_trace), ("ask_e2e", t_ask)):
            if ms is not None:
                times.add(stage, ms)
        times.ratios.append(retrieval / t_naive)
        times.ratios_one.append(retrieval_one / t_naive)
        times.ratios_two.append(retrieval_two / t_naive)
        times.ratios_separate.append(retrieval_separate / t_naive)

    if warmup:
        for i, q in enumerate(questions[:3]):
            one(q, record=False, naive_first=i % 2 == 1)
    for _ in range(repetitions):
        for i, q in enumerate(questions):
            one(q, record=True, naive_first=i % 2 == 1)
    for clearance, nodes in guarded:
        _, ms = timed(lambda: ClearanceGuard(engine=db.app, clearance=clearance).postprocess_nodes(nodes))
        times.add("guard_alone", ms)
    return times


def format_table(summary: dict[str, dict[str, float]]) -> str:
    lines = [f"{'stage':<26} {'n':>4} {'p50 ms':>9} {'p95 ms':>9} {'mean ms':>9}"]
    for stage in STAGES:
        if stage in summary:
            s = summary[stage]
            lines.append(f"{stage:<26} {s['n']:>4} {s['p50']:>9.2f} {s['p95']:>9.2f} {s['mean']:>9.2f}")
    return "\n".join(lines)
