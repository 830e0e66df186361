"""Dense + full-text under one predicate, fused with RRF, split per question part.

`search()` is the retrieval: it returns a `RetrievalResult` (the fused nodes, whether it ran
degraded and why, the best dense similarity the abstain threshold reads, what each arm returned,
the ids the trace keeps, and its timings). LlamaIndex's `retrieve()` / `aretrieve()` return the
same body's nodes. Both open a span and fire the retrieval start/end events and one
`HybridRetrievalEvent` for observers (OpenTelemetry's component spans, a developer's handler);
nothing reads a result back from them.

If the query embedding fails, retrieval falls back to the full-text arm (same predicate) and
the result says `degraded=True`; the answer, page, trace and a counter carry it. Never silent.
Every node also carries `retrieval_degraded` in its metadata.

The question is embedded first, holding no connection, then both arms are read through
pipelined scoped reads (`storage/pipelined.py`): the dense statements go down a second connection
when `concurrent_arms` is set and no other search is running in the process, so the two backends
run the arms side by side while this thread waits once (docs/performance.md, "Retrieval at scale").

Extra arms (extension retrievers, docs/extending.md) run beside the dense and text arms on each
question part and join the same reciprocal rank fusion; the result says how many nodes each arm
returned and which arms returned each chunk, so the clearance guard can name a component.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent, RetrievalStartEvent
from llama_index.core.schema import NodeWithScore, QueryBundle

from policydesk.retrievers.fusion import deterministic_rerank, reciprocal_rank_fusion
from policydesk.retrievers.scoped import TEXT_CANDIDATES, ArmConfig, EmbeddingUnavailable, PermissionScopedRetriever
from policydesk.retrievers.split import split_question
from policydesk.retrievers.store import RankingNode, stored_nodes
from policydesk.retrievers.text import IndexedTextRetriever
from policydesk.retrievers.threaded import ThreadedRetriever
from policydesk.storage.chunk_ids import doc_id_of
from policydesk.storage.clearance import Clearance
from policydesk.storage.engine import SearchesInFlight
from policydesk.storage.pipelined import scoped_pipeline
from policydesk.storage.upstream import store_engines


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
    timings_ms: dict[str, float] = field(default_factory=dict)  # embed, arms, extensions, fusion
    # What the trace keeps as retrieved: the fused ids before any guard (`RequestStack.retrieve`
    # adds what each extension arm returned), so a guard drop still shows what came back.
    retrieved_ids: list[str] = field(default_factory=list)
    # Each question part's query vector (none when degraded), for a later step that ranks by the
    # same model (the offline reader), so the question is embedded once per request.
    query_vectors: dict[str, list[float]] = field(default_factory=dict)


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


class HybridRetriever(ThreadedRetriever):
    """The bare arms, fused (also exported as `HybridArmsRetriever`): the predicate and RLS in every
    statement, but no clearance guard and no version resolution, so every version of a policy that
    matches comes back (unless `one_version_per_section`: then the top k counts sections, each
    stood for by its best-ranked version). `policydesk.PolicyRetriever` is the one to compose
    answers with."""

    def __init__(self, vector_store, embed_model, *, clearance: Clearance,
                 top_k: int = 8, arm_top_k: int = 20, split_parts: bool = True, text_candidates: int = TEXT_CANDIDATES,
                 extra_arms: Sequence[tuple[str, BaseRetriever]] = (), concurrent_arms: bool = False,
                 one_version_per_section: bool = False, searches: SearchesInFlight | None = None,
                 **kwargs: Any) -> None:
        self._engine = store_engines(vector_store)[0]
        self._dense = PermissionScopedRetriever(vector_store, embed_model, ArmConfig(clearance=clearance, top_k=arm_top_k))
        # Full text through the indexed side path (migration 0010); same clearance, same ranks
        # as PGVectorStore's own text query, but served by a GIN index under RLS.
        self._text = IndexedTextRetriever(
            self._engine, ArmConfig(clearance=clearance, top_k=arm_top_k, text_candidates=text_candidates))
        self._extra = list(extra_arms)  # (name, retriever): fused with the built-in arms
        names = [DENSE_ARM, TEXT_ARM] + [name for name, _ in self._extra]
        if len(set(names)) != len(names):
            raise ValueError(f"arm names must be unique: {names}")
        self._names = names
        self._top_k = top_k
        self._split = split_parts
        self._clearance = clearance
        # The arms on two connections at once (settings.CONCURRENT_ARMS), so Postgres runs them
        # side by side; each such search holds two pooled connections.
        self._concurrent = concurrent_arms
        # The searches running on the same pool (`Database.searches`); without it this retriever
        # counts only its own, and a concurrent search always takes its second connection.
        self._searches = searches or SearchesInFlight()
        # The top k counts sections, not versions of them: a policy's versions repeat most sections
        # nearly word for word, so without this a few sections in two or three versions each fill
        # the k places, and version resolution (which swaps each for the version that applied)
        # leaves half of them. The best-ranked version stands for its section.
        self._one_version = one_version_per_section
        super().__init__(**kwargs)

    @property
    def arms(self) -> tuple[PermissionScopedRetriever, IndexedTextRetriever]:
        return self._dense, self._text

    @dispatcher.span
    def search(self, query: str | QueryBundle) -> RetrievalResult:
        """The retrieval, with the start/end events `retrieve()` fires around the same body."""
        dispatcher.event(RetrievalStartEvent(str_or_query_bundle=query))
        result = self._search(query.query_str if isinstance(query, QueryBundle) else query)
        dispatcher.event(RetrievalEndEvent(str_or_query_bundle=query, nodes=result.nodes))
        return result

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._search(query_bundle.query_str).nodes

    def _search(self, query: str) -> RetrievalResult:
        parts = split_question(query) if self._split else [query]
        bundles = [QueryBundle(part) for part in parts]
        timings: dict[str, float] = {}
        with _timed(timings, "embed"):
            embeddings, degraded = self.embeddings(bundles)
        with _timed(timings, "arms"):
            arms = self.read_arms(bundles, embeddings)
        with _timed(timings, "extensions"):
            extra = [[arm.retrieve(bundle) for _, arm in self._extra] for bundle in bundles]
        with _timed(timings, "fusion"):
            result = self.fuse(parts, [(dense, text, more) for (dense, text), more in zip(arms, extra)], degraded)
        result.timings_ms = timings
        result.query_vectors = {b.query_str: e for b, e in zip(bundles, embeddings)}
        dispatcher.event(HybridRetrievalEvent.of(result))
        return result

    def fuse(self, parts: list[str], per_part: list[tuple[list, list]], degraded: str | None) -> RetrievalResult:
        """One RRF per question part over (dense, text[, extra arms' lists]), reranked, interleaved."""
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
        nodes = stored_nodes(deterministic_rerank_keep_order(
            merged, self._top_k, key=section_key if self._one_version else None))
        for n in nodes:
            n.node.metadata["retrieval_degraded"] = degraded is not None
        return RetrievalResult(nodes, degraded is not None, degraded, parts, best, counts,
                               {n.node.node_id: sources.get(n.node.node_id, []) for n in nodes},
                               retrieved_ids=[n.node.node_id for n in nodes])

    def embeddings(self, bundles: list[QueryBundle]) -> tuple[list[list[float]], str | None]:
        """Each part's query vector, or none and why (the embedding failed): then the dense arm is
        skipped. A bundle that carries its embedding is not embedded again. Runs before any
        connection is taken: a slow or failing provider (up to its timeout) must not keep pooled
        connections open in a transaction."""
        embeddings = []
        for bundle in bundles:
            try:
                embeddings.append(self._dense.embedding(bundle))
            except EmbeddingUnavailable as exc:
                return [], str(exc)
        return embeddings, None

    def read_arms(self, bundles: list[QueryBundle], embeddings: list[list[float]]) -> list[tuple[list, list]]:
        """(dense, text) nodes for each question part, as `RankingNode`s (`fuse` builds the stored
        node of each it keeps); no dense nodes without embeddings."""
        with ExitStack() as pipes:
            alone = pipes.enter_context(self._searches.search())
            text_pipe = pipes.enter_context(scoped_pipeline(self._engine, self._clearance))
            texts = [text_pipe.send(*st) if (st := self._text.statement(b)) else None for b in bundles]
            dense_pipe = (pipes.enter_context(scoped_pipeline(self._engine, self._clearance))
                          if self._concurrent and alone and embeddings else text_pipe)
            denses = [dense_pipe.send(*self._dense.statement(e)) for e in embeddings] or [None] * len(bundles)
        return [(self._dense.nodes(d.fetchall(), RankingNode.of) if d else [],
                 self._text.nodes(t.fetchall(), RankingNode.of) if t else [])
                for d, t in zip(denses, texts)]

    def arm_results(self, bundles: list[QueryBundle]) -> tuple[list[tuple[list, list]], str | None]:
        """`embeddings` then `read_arms`: the built-in arms of one search, without fusion."""
        embeddings, degraded = self.embeddings(bundles)
        return self.read_arms(bundles, embeddings), degraded


@contextmanager
def _timed(timings: dict[str, float], name: str):
    t0 = time.perf_counter()
    try:
        yield
    finally:
        timings[name] = round((time.perf_counter() - t0) * 1000, 3)


def section_key(node: NodeWithScore) -> tuple[str, ...]:
    """What a chunk is a version of: its document and section (the chunk id without the version),
    or the chunk id itself for a node that names no section."""
    section_id = node.node.metadata.get("section_id")
    return (doc_id_of(node.node), str(section_id)) if section_id else (node.node.node_id,)


def deterministic_rerank_keep_order(nodes: list[NodeWithScore], top_n: int,
                                    key: Callable[[NodeWithScore], Hashable] | None = None) -> list[NodeWithScore]:
    """De-duplicate by chunk id (or `key`) keeping first occurrence (the interleaved order), cut to top_n."""
    key = key or (lambda n: n.node.node_id)
    seen, out = set(), []
    for n in nodes:
        if (k := key(n)) not in seen:
            seen.add(k)
            out.append(n)
    return out[:top_n]
