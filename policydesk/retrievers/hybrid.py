"""Dense + full-text under one predicate, fused with RRF, split per question part.

If the query embedding fails, retrieval falls back to the full-text arm (same predicate) and
the result says `degraded=True`; the answer, page, trace and a counter carry it. Never silent.

Callers use LlamaIndex's public `retrieve()` / `aretrieve()`, so the retrieval span and the
start/end events fire. What the node list can't carry (degraded with no rows left, the best
dense similarity the abstain threshold reads) goes out as one `HybridRetrievalEvent` inside
that span; every node also carries `retrieval_degraded` in its metadata. `search()` returns
the same facts as a `RetrievalResult`, without instrumentation, for calibration and tests.

The sync path embeds the question first, holding no connection, then reads both arms through
pipelined scoped reads (`storage/pipelined.py`): the dense statements go down a second connection
when `concurrent_arms` is set and no other search is running in the process, so the two backends
run the arms side by side while this thread waits once (docs/performance.md, "Retrieval at scale").

Extra arms (extension retrievers, docs/extending.md) run beside the dense and text arms on each
question part and join the same reciprocal rank fusion; the result says how many nodes each arm
returned and which arms returned each chunk, so the clearance guard can name a component.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.schema import NodeWithScore, QueryBundle

from policydesk.retrievers.fusion import deterministic_rerank, reciprocal_rank_fusion
from policydesk.retrievers.scoped import TEXT_CANDIDATES, ArmConfig, EmbeddingUnavailable, PermissionScopedRetriever
from policydesk.retrievers.split import split_question
from policydesk.retrievers.store import store_engines
from policydesk.retrievers.text import IndexedTextRetriever
from policydesk.storage.clearance import Clearance
from policydesk.storage.pipelined import scoped_pipeline


dispatcher = get_dispatcher(__name__)

DENSE_ARM, TEXT_ARM = "dense", "text"  # the built-in arms' names in counts and provenance


@dataclass
class RetrievalResult:
    nodes: list[NodeWithScore]
    degraded: bool = False
    degraded_reason: str | None = None
    parts: list[str] = field(default_factory=list)
    best_similarity: float | None = None  # best dense cosine similarity, None when degraded
    arm_counts: dict[str, int] = field(default_factory=dict)  # nodes each arm returned, over all parts
    sources: dict[str, list[str]] = field(default_factory=dict)  # chunk id -> arms that returned it


class HybridRetrievalEvent(BaseEvent):
    """Fired inside the retrieval span: what one hybrid retrieval found besides its nodes."""

    degraded: bool
    degraded_reason: str | None = None
    best_similarity: float | None = None
    parts: list[str] = []
    arm_counts: dict[str, int] = {}
    sources: dict[str, list[str]] = {}

    @classmethod
    def class_name(cls) -> str:
        return "HybridRetrievalEvent"

    @classmethod
    def of(cls, result: RetrievalResult) -> "HybridRetrievalEvent":
        return cls(degraded=result.degraded, degraded_reason=result.degraded_reason,
                   best_similarity=result.best_similarity, parts=result.parts, arm_counts=result.arm_counts,
                   sources=result.sources)


class HybridRetriever(BaseRetriever):
    """The bare arms, fused (also exported as `HybridArmsRetriever`): the predicate and RLS in every
    statement, but no clearance guard and no version resolution, so every version of a policy that
    matches comes back. `policydesk.PolicyRetriever` is the one to compose answers with."""

    def __init__(self, vector_store, embed_model, *, clearance: Clearance,
                 top_k: int = 8, arm_top_k: int = 20, split_parts: bool = True, text_candidates: int = TEXT_CANDIDATES,
                 extra_arms: Sequence[tuple[str, BaseRetriever]] = (), concurrent_arms: bool = False,
                 **kwargs: Any) -> None:
        self._dense = PermissionScopedRetriever(
            vector_store, embed_model, ArmConfig(clearance=clearance, top_k=arm_top_k, mode="dense"))
        # Full text through the indexed side path (migration 0010); same clearance, same ranks
        # as PGVectorStore's own text query, but served by a GIN index under RLS.
        self._text = IndexedTextRetriever(
            *store_engines(vector_store),
            ArmConfig(clearance=clearance, top_k=arm_top_k, mode="text", text_candidates=text_candidates))
        self._extra = list(extra_arms)  # (name, retriever): fused with the built-in arms
        names = [DENSE_ARM, TEXT_ARM] + [name for name, _ in self._extra]
        if len(set(names)) != len(names):
            raise ValueError(f"arm names must be unique: {names}")
        self._names = names
        self._top_k = top_k
        self._split = split_parts
        self._clearance = clearance
        self._engine = store_engines(vector_store)[0]
        # sync search(): the arms on two connections at once (settings.CONCURRENT_ARMS), so
        # Postgres runs them side by side; each such search holds two pooled connections.
        self._concurrent = concurrent_arms
        super().__init__(**kwargs)

    @property
    def arms(self) -> tuple[PermissionScopedRetriever, IndexedTextRetriever]:
        return self._dense, self._text

    def _parts(self, query: str) -> list[str]:
        return split_question(query) if self._split else [query]

    def _fuse(self, parts: list[str], per_part: list[tuple[list, list]], degraded: str | None) -> RetrievalResult:
        ranked_lists, best = [], None
        counts = dict.fromkeys(self._names, 0)
        sources: dict[str, list[str]] = {}
        for dense, text, *extra in per_part:  # extra: the extra arms' lists, when there are any
            arm_lists = [dense, text, *(extra[0] if extra else [])]
            for name, ranked in zip(self._names, arm_lists):
                counts[name] += len(ranked)
                for n in ranked:
                    seen_by = sources.setdefault(n.node.node_id, [])
                    if name not in seen_by:
                        seen_by.append(name)
            ranked_lists.append(reciprocal_rank_fusion(arm_lists))
            if dense:
                top = max(n.score or 0.0 for n in dense)
                best = top if best is None else max(best, top)
        # Each part is reranked on its own, then parts are interleaved so a two-part question
        # keeps evidence for both parts in the top k.
        reranked = [deterministic_rerank(r) for r in ranked_lists]
        merged: list[NodeWithScore] = []
        for i in range(max((len(r) for r in reranked), default=0)):
            merged.extend(r[i] for r in reranked if i < len(r))
        nodes = deterministic_rerank_keep_order(merged, self._top_k)
        for n in nodes:
            n.node.metadata["retrieval_degraded"] = degraded is not None
        return RetrievalResult(nodes, degraded is not None, degraded, parts, best, counts,
                               {n.node.node_id: sources.get(n.node.node_id, []) for n in nodes})

    def search(self, query: str) -> RetrievalResult:
        parts = self._parts(query)
        arms, degraded = self.arm_results([QueryBundle(part) for part in parts])
        per_part = [(dense, text, [arm.retrieve(QueryBundle(part)) for _, arm in self._extra])
                    for part, (dense, text) in zip(parts, arms)]
        return self._fuse(parts, per_part, degraded)

    def arm_results(self, bundles: list[QueryBundle]) -> tuple[list[tuple[list, list]], str | None]:
        """(dense, text) nodes for each question part, and why the dense arm was skipped (the
        embedding failed), if it was. A bundle that carries its embedding is not embedded again."""
        # Embed first, holding no connection: a slow or failing provider (up to its timeout) must
        # not keep pooled connections open in a transaction.
        embeddings, degraded = [], None
        for bundle in bundles:
            try:
                embeddings.append(self._dense.embedding(bundle))
            except EmbeddingUnavailable as exc:
                degraded, embeddings = str(exc), []
                break
        with ExitStack() as pipes:
            alone = pipes.enter_context(_search_in_flight())
            text_pipe = pipes.enter_context(scoped_pipeline(self._engine, self._clearance))
            texts = [text_pipe.send(*st) if (st := self._text.statement(b)) else None for b in bundles]
            dense_pipe = (pipes.enter_context(scoped_pipeline(self._engine, self._clearance))
                          if self._concurrent and alone and embeddings else text_pipe)
            denses = [dense_pipe.send(*self._dense.statement(e)) for e in embeddings] or [None] * len(bundles)
        built: dict = {}  # chunk id -> node, shared by both arms' lists
        return [(self._dense.nodes(d.fetchall(), built) if d else [], self._text.nodes(t.fetchall(), built) if t else [])
                for d, t in zip(denses, texts)], degraded

    async def asearch(self, query: str) -> RetrievalResult:
        parts = self._parts(query)
        degraded = None

        async def one(part: str):
            nonlocal degraded
            bundle = QueryBundle(part)
            text_task = asyncio.ensure_future(self._text.aretrieve(bundle))
            extra_tasks = asyncio.gather(*(arm.aretrieve(bundle) for _, arm in self._extra))
            try:
                dense = await self._dense.aretrieve(bundle)
            except EmbeddingUnavailable as exc:
                degraded, dense = str(exc), []
            return dense, await text_task, list(await extra_tasks)

        per_part = list(await asyncio.gather(*(one(p) for p in parts)))
        if degraded is not None:
            per_part = [([], text, extra) for _, text, extra in per_part]
        return self._fuse(parts, per_part, degraded)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.search(query_bundle.query_str)
        dispatcher.event(HybridRetrievalEvent.of(result))
        return result.nodes

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.asearch(query_bundle.query_str)
        dispatcher.event(HybridRetrievalEvent.of(result))
        return result.nodes


_IN_FLIGHT = 0  # sync searches running in this process now
_IN_FLIGHT_LOCK = threading.Lock()


@contextmanager
def _search_in_flight():
    """Count this search while it runs; yields True when no other search is running in the
    process. Only then does a search take a second connection: with several in flight the cores
    are already busy, and two connections per search would double what the pool must hold (under
    load a second connection gains nothing measurable: docs/performance.md, "Load")."""
    global _IN_FLIGHT
    with _IN_FLIGHT_LOCK:
        _IN_FLIGHT += 1
        alone = _IN_FLIGHT == 1
    try:
        yield alone
    finally:
        with _IN_FLIGHT_LOCK:
            _IN_FLIGHT -= 1


def deterministic_rerank_keep_order(nodes: list[NodeWithScore], top_n: int) -> list[NodeWithScore]:
    """De-duplicate by chunk id keeping first occurrence (the interleaved order), cut to top_n."""
    seen, out = set(), []
    for n in nodes:
        if n.node.node_id not in seen:
            seen.add(n.node.node_id)
            out.append(n)
    return out[:top_n]
