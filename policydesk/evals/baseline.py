"""The naive baseline: dense retrieval only, then the same synthesizer, model and prompt.

Same access predicate as the full system (so the comparison is about versions and refusal, not
leaks), run inside `permitted_scope` because the application engine is RLS-bound. No hybrid
full-text arm, no question splitting, no version resolution, no conflict flagging, no early
refusal, no similarity abstention, no post-generation check. The dates the staff member entered
reach the model as the same notes the full pipeline writes, so the baseline knows the date; it
just doesn't resolve versions for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llama_index.core import VectorStoreIndex
from llama_index.core.schema import NodeWithScore

from policydesk.accounts.access import clearance_for
from policydesk.providers.passages import PassageReader
from policydesk.retrievers import chunk_vector_store
from policydesk.storage.guard_read import CallerChunks
from policydesk.storage.chunk_ids import doc_id_of
from policydesk.storage.predicate import access_filters
from policydesk.storage.scope import permitted_scope
from policydesk.synthesis.prompt import date_notes, render_user_turn
from policydesk.synthesis.synthesizer import CitedAnswerSynthesizer

@dataclass
class BaselineResult:
    context_ids: list[str] = field(default_factory=list)
    answer: str = ""
    cited_ids: list[str] = field(default_factory=list)
    cited_versions: list[tuple[str, int]] = field(default_factory=list)
    answered: bool = False
    abstain_reason: str | None = None
    degraded: bool = False
    error: str | None = None
    best_similarity: float | None = None
    prompts: list[str] = field(default_factory=list)
    cited_texts: list[str] = field(default_factory=list)


class NaiveBaseline:
    def __init__(self, db, embed_model, llm, *, k: int = 8) -> None:
        """`llm` None: the same offline reader as the full system (the passage per question part)."""
        self.db = db
        self.index = VectorStoreIndex.from_vector_store(chunk_vector_store(db), embed_model=embed_model)
        self.synthesizer = CitedAnswerSynthesizer(llm=llm) if llm is not None else None
        self.reader = PassageReader(embed_model) if llm is None else None
        self.k = k

    def retrieve(self, question: str, role: str) -> list[NodeWithScore]:
        c = clearance_for(role)
        retriever = self.index.as_retriever(similarity_top_k=self.k, filters=access_filters(c))
        with permitted_scope(c):
            return retriever.retrieve(question)

    def ask(self, question: str, role: str, dates: dict[str, str | None]) -> BaselineResult:
        out = BaselineResult()
        try:
            nodes = self.retrieve(question, role)
        except Exception as exc:  # no keyword fallback in the baseline: the item is degraded
            out.degraded, out.error = True, f"{exc.__class__.__name__}: {exc}"
            return out
        out.context_ids = [n.node.node_id for n in nodes]
        out.best_similarity = max((n.score or 0.0 for n in nodes), default=None)
        notes = date_notes(dates)
        out.prompts = [render_user_turn(question, nodes, notes)]
        by_id = {n.node.node_id: n for n in nodes}
        if self.reader is not None:
            passages = self.reader.read(question, nodes)
            if not passages:
                out.abstain_reason = "no passage"
                return out
            out.answered, out.answer = True, " ".join(p.marked_text for p in passages)
            out.cited_ids = list(dict.fromkeys(p.chunk_id for p in passages))
        else:
            chunks = CallerChunks(self.db.app, clearance_for(role))
            outcome = self.synthesizer.synthesize_outcome(question, nodes, notes, chunks=chunks)
            if outcome.answer is None:
                out.abstain_reason = outcome.abstain_reason or "not answerable"
                return out
            out.answered, out.answer = True, outcome.answer.answer
            out.cited_ids = list(dict.fromkeys(q.chunk_id for c in outcome.answer.claims for q in c.quotes))
        for cid in out.cited_ids:
            node = by_id.get(cid)
            if node is None:
                continue
            m = node.node.metadata
            out.cited_versions.append((doc_id_of(node.node), int(m["version"])))
            out.cited_texts.append(node.node.get_content())
        return out
