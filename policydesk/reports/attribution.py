"""Which sources a question that cited nothing came close to: the owners its gap belongs to.

A question that was not answered (or was refused after retrieval) still has a context: the chunks
the ranking reached, first to last. Ranking first does not make a source relevant: a question no
source covers still ranks something first. So such a question is charged to a source in its
context only when that source came close:

- the question names it (`reading.language.names_source`, the rule the pipeline uses: the code in
  its title, or most of the title words no other source in the context shares), or
- the question's dense similarity to one of the source's chunks in context is at or above
  `min_similarity` (settings.GAP_MIN_SIMILARITY, measured in its comment and docs/reports.md).

Every other question is charged to no one; it is still counted in the totals and grouped with the
other unanswered questions. Chunks are read under the viewer's clearance (the predicate and
row-level security): a source the viewer may not read is never weighed, so never named.
Without an embedding model only the naming rule applies, and the report says so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
from sqlalchemy import any_, cast, select, Text

from policydesk.accounts.access import Clearance
from policydesk.reading.language import names_source
from policydesk.storage.chunk_ids import doc_id_of_chunk
from policydesk.storage.models import Chunk
from policydesk.storage.predicate import access_clause
from policydesk.storage.sources import array_param
from policydesk.storage.scope import scoped_session


def _chunks(db, clearance: Clearance, chunk_ids: set[str]) -> dict[str, tuple[str, str, np.ndarray | None]]:
    """chunk id -> (doc id, text, unit vector) for the context chunks the viewer may read now."""
    if not chunk_ids:
        return {}
    stmt = select(Chunk.node_id, Chunk.doc_id, Chunk.text, cast(Chunk.embedding, Text)).where(
        Chunk.node_id == any_(array_param("ids")), access_clause(clearance, Chunk))
    out = {}
    with scoped_session(db.app, clearance) as session:
        for node_id, doc_id, text, vector in session.execute(stmt, {"ids": sorted(chunk_ids)}):
            v = np.asarray(json.loads(vector), dtype=float) if vector else None
            out[node_id] = (doc_id, text, v / max(float(np.linalg.norm(v)), 1e-12) if v is not None else None)
    return out


def close_sources(db, clearance: Clearance, asks: Sequence[tuple[str, Sequence[str]]], titles: dict[str, str], *,
                  embed_model=None, min_similarity: float) -> list[tuple[str, ...]]:
    """For each (question, context chunk ids): the documents, in context order, that came close.
    `titles`: doc id -> title of the sources the viewer may see (others are never weighed)."""
    chunks = _chunks(db, clearance, {c for _, ids in asks for c in ids if doc_id_of_chunk(c) in titles})
    vectors = _question_vectors([q for q, _ in asks], embed_model) if embed_model is not None else None
    out = []
    for n, (question, ids) in enumerate(asks):
        readable = [c for c in dict.fromkeys(ids) if c in chunks]
        docs = list(dict.fromkeys(chunks[c][0] for c in readable))
        close = []
        for doc in docs:
            # The naming rule's code and most-of-the-title tests. Its third (one title word nothing
            # else in play uses) is off: the question passed as the other text leaves no word
            # unused. With only a context's few sources in play one common title word would do.
            if names_source(question, titles[doc], [titles[d] for d in docs if d != doc], question):
                close.append(doc)
            elif vectors is not None and max((float(vectors[n] @ chunks[c][2]) for c in readable
                                              if chunks[c][0] == doc and chunks[c][2] is not None),
                                             default=-1.0) >= min_similarity:
                close.append(doc)
        out.append(tuple(close))
    return out


def _question_vectors(questions: Sequence[str], embed_model) -> list[np.ndarray]:
    # The query embedding: what retrieval compared the question with when it was asked.
    seen: dict[str, np.ndarray] = {}
    for q in questions:
        if q not in seen:
            v = np.asarray(embed_model.get_query_embedding(q), dtype=float)
            seen[q] = v / max(float(np.linalg.norm(v)), 1e-12)
    return [seen[q] for q in questions]
