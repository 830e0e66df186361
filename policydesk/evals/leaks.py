"""The leak matrix: every question run as every role, counting chunks above the role's clearance.

Chunk metadata is read through the owner engine (outside row-level security), so the checker
sees what the caller must not. A restricted chunk is found in a prompt or an answer by its id or
by any of its *distinctive* sentences: sentences of 40+ characters that no chunk the role may
read also contains (a sentence shared with a permitted chunk proves nothing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from sqlalchemy import text

from policydesk.ops import metrics
from policydesk.accounts.access import ROLES, clearance_for

STAGES = ("retrieval", "prompt", "answer")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WS = re.compile(r"\s+")
MIN_FINGERPRINT_CHARS = 40


def _norm(s: str) -> str:
    return _WS.sub(" ", s).strip().lower()


@dataclass(frozen=True)
class ChunkInfo:
    chunk_id: str
    access_level: str
    sensitive: bool
    text: str


class ChunkCatalog:
    """Every chunk's access metadata and text, read once through the owner engine."""

    def __init__(self, db) -> None:
        with db.owner.connect() as conn:
            rows = conn.execute(text(
                "SELECT node_id, metadata_->>'access_level', (metadata_->>'sensitive')::boolean, text FROM data_chunks"
            )).all()
        self.chunks = {r[0]: ChunkInfo(r[0], r[1], bool(r[2]), r[3]) for r in rows}
        self._fingerprints: dict[str, dict[str, list[str]]] = {}

    def permitted(self, role: str, chunk_id: str) -> bool:
        info = self.chunks.get(chunk_id)
        if info is None:  # unknown id: treat as a leak, it can't be vouched for
            return False
        return clearance_for(role).permits(info.access_level, info.sensitive)

    def fingerprints(self, role: str) -> dict[str, list[str]]:
        """chunk id -> distinctive sentences, for every chunk above the role's clearance."""
        if role not in self._fingerprints:
            allowed_text = " ".join(_norm(c.text) for cid, c in self.chunks.items() if self.permitted(role, cid))
            out = {}
            for cid, c in self.chunks.items():
                if self.permitted(role, cid):
                    continue
                sentences = [_norm(s) for s in _SENTENCE.split(c.text)]
                out[cid] = [s for s in sentences if len(s) >= MIN_FINGERPRINT_CHARS and s not in allowed_text]
            self._fingerprints[role] = out
        return self._fingerprints[role]

    def restricted_in_text(self, role: str, blob: str) -> set[str]:
        hay = _norm(blob)
        found = set()
        for cid, sentences in self.fingerprints(role).items():
            if cid.lower() in hay or any(s in hay for s in sentences):
                found.add(cid)
        return found


@dataclass
class LeakCell:
    role: str
    questions: int = 0
    retrieval: int = 0
    prompt: int = 0
    answer: int = 0
    examples: list[dict] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.retrieval + self.prompt + self.answer


@dataclass
class LeakMatrix:
    cells: dict[str, LeakCell] = field(default_factory=lambda: {r: LeakCell(r) for r in ROLES})

    @property
    def total(self) -> int:
        return sum(c.total for c in self.cells.values())

    def record(self, catalog: ChunkCatalog, role: str, item_id: str, context_ids, prompts, answer: str,
               cited_ids, *, count_metric: bool = True) -> dict[str, list[str]]:
        cell = self.cells.setdefault(role, LeakCell(role))
        cell.questions += 1
        found = {
            "retrieval": sorted(cid for cid in context_ids if not catalog.permitted(role, cid)),
            "prompt": sorted(catalog.restricted_in_text(role, "\n".join(prompts))),
            "answer": sorted({cid for cid in cited_ids if not catalog.permitted(role, cid)}
                             | catalog.restricted_in_text(role, answer)),
        }
        for stage, ids in found.items():
            setattr(cell, stage, getattr(cell, stage) + len(ids))
            if ids and len(cell.examples) < 20:
                cell.examples.append({"item": item_id, "stage": stage, "chunks": ids})
        if count_metric and any(found.values()):
            metrics.LEAK_TEST_FAILURES.inc()
        return found

    def to_json(self) -> dict:
        return {r: {"questions": c.questions, "retrieval": c.retrieval, "prompt": c.prompt, "answer": c.answer,
                    "examples": c.examples} for r, c in self.cells.items()}


# -- the positive control -------------------------------------------------------------------------

class UnscopedDenseRetriever(BaseRetriever):
    """Deliberately leaky: nearest chunks through the owner login, with no access predicate and no
    row-level security. Never used to answer; it exists so the leak check can prove it detects."""

    def __init__(self, db, embed_model, k: int = 8) -> None:
        super().__init__()
        self._db, self._embed_model, self._k = db, embed_model, k

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        embedding = self._embed_model.get_query_embedding(query_bundle.query_str)
        with self._db.owner.connect() as conn:
            rows = conn.execute(text(
                "SELECT node_id, text FROM data_chunks ORDER BY embedding <=> CAST(:e AS vector) LIMIT :k"),
                {"e": str(list(embedding)), "k": self._k}).all()
        return [NodeWithScore(node=TextNode(id_=r.node_id, text=r.text)) for r in rows]


def leak_control(catalog: ChunkCatalog, retriever: BaseRetriever, questions: list[tuple[str, str]],
                 role: str = "rep") -> LeakMatrix:
    """Run (item id, question) pairs through `retriever` as `role` and record them with the same
    checker as the real matrix. For the unscoped retriever this must find leaks; if it finds
    none, the checker is blind and a zero in the real matrix proves nothing."""
    control = LeakMatrix()
    for item_id, question in questions:
        nodes = retriever.retrieve(question)
        ids = [n.node.node_id for n in nodes]
        control.record(catalog, role, item_id, ids, ["\n\n".join(n.node.get_content() for n in nodes)], "", [],
                       count_metric=False)
    return control
