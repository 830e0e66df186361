"""One request's retrieval stack: built-in arms plus extension components, behind the clearance guard.

The pipeline calls it in two places (docs/design.md, steps 4-6):

    retrieved = stack.retrieve(question)    # every arm, one RRF, then the guard: a RetrievalResult
    ...                                     # built-in version resolution and conflict flagging
    nodes = stack.finish(nodes)             # extension postprocessors, then the guard again

so every node that reaches version resolution, the prompt or a page has been re-checked against
the caller's clearance from stored columns. A node that fails is dropped, counted in
`policydesk_clearance_guard_drops{component, reason}` and logged as a leak attempt naming the
component that produced it. Which components ran, how many nodes each returned and what the guard
dropped go into the request's trace (`answer.instrumentation`, no new column: the trace hash chain
covers every column of every stored row).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from policydesk.ops import metrics
from policydesk.extensions.context import ComponentContext
from policydesk.extensions.registry import Extensions
from policydesk.postprocessors.guard import ClearanceGuard
from policydesk.retrievers.hybrid import DENSE_ARM, TEXT_ARM, HybridRetriever, RetrievalResult
from policydesk.storage.clearance import Clearance

log = logging.getLogger(__name__)

# Credited with a node that enters after retrieval without an extension postprocessor adding it:
# the version resolver's swaps (read under the caller's clearance, so never expected to fail).
BUILT_IN_POSTPROCESSORS = "version_resolver"


class RequestStack:
    def __init__(self, extensions: Extensions, *, db, store, embed_model, settings, clearance: Clearance,
                 dates: dict[str, date], today: date,
                 postprocessors: Sequence[tuple[str, BaseNodePostprocessor]] = (),
                 trace_id: uuid.UUID | None = None) -> None:
        """`postprocessors`: (name, instance) pairs run after the registered ones, guarded alike.
        `trace_id`: the request's trace, named in leak-attempt log lines."""
        self.clearance = clearance
        self.trace_id = trace_id
        self.context = ComponentContext(clearance=clearance, dates=dict(dates), today=today, top_k=settings.TOP_K,
                                        engine=db.app, async_engine=db.app_async, vector_store=store,
                                        embed_model=embed_model)
        self.guard = ClearanceGuard(engine=db.app, clearance=clearance)
        # What the guard's passes found, summed over the request; `verified` spares a later pass
        # the read of a node an earlier one checked with the same text.
        self.guard_passes = self.guard_checked = 0
        self.verified: dict[str, str] = {}
        extra = [(r.name, GuardedArm(r.name, r.build(self.context), self)) for r in extensions.retrievers]
        self.retriever = HybridRetriever(store, embed_model, clearance=clearance, top_k=settings.TOP_K,
                                         text_candidates=settings.TEXT_CANDIDATES,
                                         concurrent_arms=settings.CONCURRENT_ARMS, extra_arms=extra,
                                         one_version_per_section=True, searches=db.searches)
        self.postprocessors = [(p.name, p.build(self.context)) for p in extensions.postprocessors]
        self.postprocessors += list(postprocessors)
        self.built_in = {DENSE_ARM, TEXT_ARM}
        self.components: dict[str, dict[str, Any]] = {}  # name -> what it did, summed over question parts
        self.dropped: list[dict[str, str]] = []
        self._origin: dict[str, str] = {}  # chunk id -> the component(s) that produced the node
        self._arm_ids: list[str] = []  # what extension arms returned, before the guard
        self.guard_ms = 0.0  # time spent in the guard's passes, the trace's `clearance_guard` stage
        self._query: QueryBundle | None = None

    # -- retrieval: every arm, one RRF, then the guard --------------------------------------------
    def retrieve(self, query: str | QueryBundle) -> RetrievalResult:
        """The hybrid retrieval's result with only the nodes the guard passed; its `retrieved_ids`
        add what each extension arm returned to the fused ids, so the trace shows what came back
        even where the guard dropped it."""
        self._query = query if isinstance(query, QueryBundle) else QueryBundle(query)
        for name in (DENSE_ARM, TEXT_ARM):  # the built-in arms first in the trace
            self._record(name, "retriever")
        result = self.retriever.search(self._query)
        for name in (DENSE_ARM, TEXT_ARM):  # extension arms are recorded by their GuardedArm
            self._record(name, "retriever", nodes=result.arm_counts.get(name, 0))
        for chunk_id, arms in result.sources.items():
            # An extension arm is named first: a built-in arm returning the same id returned the
            # stored row, so a failing node can only be the extension's.
            ordered = [a for a in arms if a not in self.built_in] + [a for a in arms if a in self.built_in]
            self._origin[chunk_id] = "+".join(ordered)
        return replace(result, nodes=self._guarded(result.nodes, "retrieval"),
                       retrieved_ids=list(dict.fromkeys(result.retrieved_ids + self._arm_ids)))

    # -- after the built-in postprocessors: extension postprocessors, then the guard ---------------
    def finish(self, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        for name, postprocessor in self.postprocessors:
            before = self._before(nodes)
            out = postprocessor.postprocess_nodes(nodes, query_bundle=self._query)
            nodes = self._after_postprocessor(name, before, out)
        return self._guarded(nodes, "context")

    @staticmethod
    def _before(nodes: list[NodeWithScore]) -> dict[str, str]:
        return {n.node.node_id: n.node.get_content() for n in nodes}

    def _after_postprocessor(self, name: str, before: dict[str, str], out: list[NodeWithScore]) -> list[NodeWithScore]:
        for n in out:  # a node it added, or whose text it changed, is its own
            if before.get(n.node.node_id) != n.node.get_content():
                self._origin[n.node.node_id] = name
        self._record(name, "postprocessor", nodes_in=len(before), nodes=len(out))
        return list(out)

    # -- the guard ----------------------------------------------------------------------------------
    def check_arm(self, name: str, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """An extension arm's own result, guarded before it joins the fusion: a node it may not
        return never takes a fused slot from a permitted one, and every such node is counted."""
        self._arm_ids += [n.node.node_id for n in nodes]
        kept = self._guarded(nodes, "retrieval", component=name)
        self._record(name, "retriever", nodes=len(nodes), dropped=len(nodes) - len(kept))
        return kept

    def _guarded(self, nodes: list[NodeWithScore], stage: str, component: str | None = None) -> list[NodeWithScore]:
        t0 = time.perf_counter()
        found = self.guard.check(nodes, self.verified)
        self.guard_ms += (time.perf_counter() - t0) * 1000
        self.guard_passes += 1
        self.guard_checked += found.checked
        self.verified |= found.verified
        for drop in found.drops:
            who = component or self._origin.get(drop.chunk_id, BUILT_IN_POSTPROCESSORS)
            metrics.CLEARANCE_GUARD_DROPS.labels(component=who, reason=drop.reason).inc()
            log.warning("leak attempt: component %s returned chunk %s that fails the caller's clearance (%s; role %s),"
                        " dropped before %s, trace %s", who, drop.chunk_id, drop.reason, self.clearance.role,
                        "version resolution" if stage == "retrieval" else "the prompt",
                        self.trace_id or "-", extra={"event": "leak_attempt"})
            self.dropped.append({"chunk_id": drop.chunk_id, "reason": drop.reason, "component": who,
                                 "stage": stage})
        return found.nodes

    def summary(self) -> dict[str, Any]:
        return {"passes": self.guard_passes, "checked": self.guard_checked, "dropped": list(self.dropped)}

    def recorded(self) -> dict[str, Any] | None:
        """What the trace keeps of this request's retrieval: the components that ran, in the order
        they first ran, and the guard's passes, checks and drops; None before the guard first ran
        (a request refused before retrieval has neither)."""
        if self.guard_passes == 0:
            return None
        return {"components": list(self.components.values()), "guard": self.summary()}

    def _record(self, name: str, kind: str, **counts: int) -> None:
        entry = self.components.get(name)
        if entry is None:
            entry = self.components[name] = {"name": name, "kind": kind, "built_in": name in self.built_in}
        for key, n in counts.items():
            entry[key] = entry.get(key, 0) + n


class GuardedArm(BaseRetriever):
    """An extension retriever behind the clearance guard."""

    def __init__(self, name: str, inner: BaseRetriever, stack: RequestStack) -> None:
        self._name, self._inner, self._stack = name, inner, stack
        super().__init__()

    @property
    def inner(self) -> BaseRetriever:
        return self._inner

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._stack.check_arm(self._name, self._inner.retrieve(query_bundle))
