"""The per-role topic gate, derived from the corpus instead of a hand list.

A question is refused for a caller, with the generic out-of-scope message, when it names a
subject that only documents above the caller's clearance talk about. The subjects come from
those documents themselves:

- every 2-3 word phrase of their titles and section headings, and
- every 2-3 word phrase that recurs (2+ times) in their text,

kept only when the phrase appears nowhere in any text, title or heading the caller may read,
and has at least one word that is rare in what the caller may read (in at most one section),
so generic phrases ("right version", "information given") never gate. Single words never gate
("schedule", "timeline"), and call notes are not a source of subjects: a call note records one
member's call about a subject that policies cover (its own text is already kept from the caller
by the access predicate).
So "Purpose and Scope" never gates (every policy has it), while a title like "Special
Investigations Unit Fraud Referral Procedure" gates "fraud referral" for a role that cannot
read it and that no permitted document mentions. A new restricted policy is gated as soon as
it is ingested, with no code change; a role that may read it is never gated by it.

Where the terms come from (choice recorded in docs/refusal.md): they are derived in memory
from the `document_versions` and `data_chunks` rows that ingest already writes under row-level
security, read through the application engine inside an explicit all-levels scope that only
this module opens; nothing new is stored, so no migration and no second copy of restricted text
to keep in step. The derived phrases never leave the process: the gate answers yes or no, and
the refusal is byte-identical to any other out-of-scope refusal, so it does not reveal that a
restricted document exists. The cache is rebuilt when the corpus changes (a cheap signature
query, at most every `max_age_seconds`).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from pgvector.sqlalchemy import Vector
from sqlalchemy import Text, and_, bindparam, cast, not_, select, text

from policydesk.access import ACCESS_LEVELS, ROLES, Clearance, clearance_for
from policydesk.storage.models import Chunk, DocumentVersion
from policydesk.storage.predicate import access_clause
from policydesk.storage.scope import permitted_scope
from policydesk.vocabulary import Vocabulary
from policydesk.words import STOPWORDS, normalize

MAX_N = 3
RARE_MAX_SECTIONS = 1


def ngrams(tokens: list[str], n_max: int = MAX_N) -> Iterable[tuple[str, ...]]:
    for n in range(1, n_max + 1):
        for i in range(len(tokens) - n + 1):
            yield tuple(tokens[i:i + n])


def _phrase_ok(gram: tuple[str, ...]) -> bool:
    return len(gram) > 1 and gram[0] not in STOPWORDS and gram[-1] not in STOPWORDS


@dataclass(frozen=True)
class SourceText:
    """One section of one document version, as the gate sees it."""

    doc_title: str
    heading: str
    body: str
    access_level: str
    sensitive: bool
    source_type: str = "policy"

    def readable_by(self, clearance: Clearance) -> bool:
        return clearance.permits(self.access_level, self.sensitive)


def candidate_phrases(sections: list[SourceText]) -> set[tuple[str, ...]]:
    """Titles' and headings' phrases, and the 2-3 word phrases recurring in a document's text."""
    found: set[tuple[str, ...]] = set()
    bodies: dict[str, Counter] = {}
    for s in sections:
        for label in (s.doc_title, s.heading):
            found.update(g for g in ngrams(normalize(label)) if _phrase_ok(g))
        counts = bodies.setdefault(s.doc_title, Counter())
        counts.update(g for g in ngrams(normalize(s.body)) if len(g) > 1 and _phrase_ok(g))
    for counts in bodies.values():
        found.update(g for g, n in counts.items() if n >= 2)
    return found


def gated_phrases(sources: list[SourceText], clearance: Clearance) -> frozenset[tuple[str, ...]]:
    """Phrases naming subjects that only sources above this clearance talk about."""
    hidden = [s for s in sources if not s.readable_by(clearance) and s.source_type != "call_note"]
    if not hidden:
        return frozenset()
    seen: set[tuple[str, ...]] = set()
    section_freq: Counter = Counter()
    for s in sources:
        if s.readable_by(clearance):
            grams = set(ngrams(normalize(f"{s.doc_title} . {s.heading} . {s.body}")))
            seen.update(grams)
            section_freq.update(g[0] for g in grams if len(g) == 1)
    return frozenset(g for g in candidate_phrases(hidden)
                     if g not in seen and any(section_freq[w] <= RARE_MAX_SECTIONS for w in g))


def question_hits(question: str, phrases: frozenset[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Gated phrases in the question: contiguous, or their words in any order within a short
    window ("review a call dispute" names "dispute review")."""
    tokens = normalize(question)
    hits = [g for g in ngrams(tokens) if g in phrases]
    # the same words with the question's function words left out ("a complaint must be reported" names
    # "complaint report")
    content = [t for t in tokens if t not in STOPWORDS and t not in {"be", "been", "being", "get", "got"}]
    hits += [g for g in ngrams(content) if len(g) > 1 and g in phrases and g not in hits]
    # and two of them one content word apart ("complaints the plan has to report" names "complaint report")
    hits += [g for g in zip(content, content[2:]) if g in phrases and g not in hits]
    if hits or not phrases:
        return hits
    for size in (2, 3):
        for i in range(len(tokens)):
            window = tokens[i:i + size + 2]
            for j, a in enumerate(window):
                for b in window[j + 1:]:
                    for gram in ((b, a),) if size == 2 else ():
                        if gram in phrases:
                            hits.append(gram)
    return hits


# ---------------------------------------------------------------------- from the database

_SIGNATURE_SQL = text(
    "SELECT count(*), coalesce(max(ingested_at)::text, ''), coalesce(sum(version), 0) FROM document_versions"
)
_SOURCES_SQL = text(
    "SELECT v.title AS doc_title, coalesce(c.metadata_->>'section', '') AS heading, c.text AS body, "
    "c.access_level, c.sensitive, v.source_type, "
    "CASE WHEN :with_vectors THEN c.embedding::text END AS embedding FROM data_chunks c "
    "JOIN document_versions v ON v.doc_id = c.doc_id AND v.version = c.version"
)
_COUNT_SQL = text("SELECT count(*) FROM data_chunks")
# Up to this many chunks the nearest-section test runs in memory on the stored vectors (about
# 0.1 ms); above it, two nearest-neighbour queries in Postgres (about 2 ms, three round trips).
IN_MEMORY_MAX_CHUNKS = 20_000
# The gate's own reads: it must know what exists above the caller, so it sees every level.
_ALL_LEVELS = Clearance(role="topic-gate", levels=ACCESS_LEVELS, sensitive=True)


# The nearest section the caller may not read against the nearest one it may read, both scored
# with the stored chunk embeddings (so the question is embedded by the retrieval model). Chosen
# on the train and validation splits: gated subjects scored a margin of 0.10-0.43, legitimate
# questions at most 0.06 (docs/refusal.md).
SEMANTIC_MIN_SIMILARITY = 0.40
SEMANTIC_MIN_MARGIN = 0.08


@lru_cache(maxsize=64)
def _nearest_statement(clearance: Clearance):
    """The nearest section above the clearance and the nearest one within it, both scored against
    the question vector `:q`. The access rule is the one builder's (`storage/predicate.py`), for
    the levels and sensitivity only: like `SourceText.readable_by`, the gate ignores the product."""
    readable = access_clause(clearance.for_product(None), Chunk)
    distance = Chunk.embedding.cosine_distance(cast(bindparam("q", type_=Text), Vector))
    hidden = (select(1 - distance)
              .join(DocumentVersion, and_(DocumentVersion.doc_id == Chunk.doc_id,
                                          DocumentVersion.version == Chunk.version))
              .where(DocumentVersion.source_type != "call_note", not_(readable))
              .order_by(distance).limit(1).scalar_subquery())
    permitted = select(1 - distance).where(readable).order_by(distance).limit(1).scalar_subquery()
    return select(hidden.label("hidden"), permitted.label("permitted"))


def _vector_index(rows, sources: list[SourceText], clearances: list[Clearance], key) -> tuple | None:
    """Stored chunk vectors as unit rows, and per clearance which rows are hidden (not a call
    note, not readable) and which are permitted."""
    vectors = [np.array(r.embedding.strip("[]").split(","), dtype=np.float32) if r.embedding else None for r in rows]
    if any(v is None for v in vectors):
        return None
    matrix = np.stack(vectors)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    masks = {}
    for c in clearances:
        readable = np.array([s.readable_by(c) for s in sources])
        subject = np.array([s.source_type != "call_note" for s in sources])
        masks[key(c)] = (~readable & subject, readable)
    return matrix, masks


class CorpusTopicGate:
    """`denies(clearance, question, vector)`: the topic gate over the indexed corpus.

    Two tests, either refuses: a gated phrase in the question (no embedding needed), or, given
    the question's vector from the retrieval embedding model, a hidden section much nearer than
    any permitted one.
    """

    def __init__(self, db, *, max_age_seconds: float = 10.0, clock: Callable[[], float] = time.monotonic,
                 min_similarity: float = SEMANTIC_MIN_SIMILARITY, min_margin: float = SEMANTIC_MIN_MARGIN) -> None:
        self.db = db
        self.min_similarity = min_similarity
        self.min_margin = min_margin
        self.max_age_seconds = max_age_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._signature: tuple | None = None
        self._checked_at = float("-inf")
        self._by_clearance: dict[tuple, frozenset[tuple[str, ...]]] = {}
        self._vocabularies: dict[tuple, Vocabulary] = {}
        self._vectors = None  # (unit vectors, {clearance key: (hidden mask, permitted mask)}) or None

    def _read(self, sql, **params):
        # The gate must know what exists above the caller's clearance, so it reads under an
        # all-levels scope; nothing read here is returned to a caller.
        with permitted_scope(_ALL_LEVELS), self.db.app.connect() as conn:
            return conn.execute(sql, params).all()

    @staticmethod
    def _key(clearance: Clearance) -> tuple:
        return tuple(sorted(clearance.levels)), bool(clearance.sensitive)

    def refresh(self, force: bool = False) -> None:
        """Re-derive every role's phrases if the corpus changed. The section text is dropped once
        the phrases are derived: no restricted text stays in the process."""
        with self._lock:
            now = self._clock()
            if not force and now - self._checked_at < self.max_age_seconds:
                return
            signature = tuple(self._read(_SIGNATURE_SQL)[0])
            self._checked_at = now
            if signature == self._signature and not force:
                return
            with_vectors = self._read(_COUNT_SQL)[0][0] <= IN_MEMORY_MAX_CHUNKS
            rows = self._read(_SOURCES_SQL, with_vectors=with_vectors)
            sources = [SourceText(r.doc_title, r.heading, r.body, r.access_level, bool(r.sensitive), r.source_type)
                       for r in rows]
            clearances = [clearance_for(role) for role in ROLES]
            self._by_clearance = {self._key(c): gated_phrases(sources, c) for c in clearances}
            self._vocabularies = {self._key(c): Vocabulary.of(
                f"{s.doc_title} . {s.heading} . {s.body}" for s in sources if s.readable_by(c)) for c in clearances}
            self._vectors = _vector_index(rows, sources, clearances, self._key) if with_vectors and rows else None
            self._signature = signature

    def phrases_for(self, clearance: Clearance) -> frozenset[tuple[str, ...]]:
        self.refresh()
        return self._by_clearance.get(self._key(clearance), frozenset())

    def vocabulary(self, clearance: Clearance) -> Vocabulary:
        """The words of every source this clearance may read (policydesk.vocabulary)."""
        self.refresh()
        return self._vocabularies.get(self._key(clearance), Vocabulary(frozenset(), frozenset()))

    def nearest(self, clearance: Clearance, vector) -> tuple[float, float]:
        """(best similarity among sections above the clearance, best among permitted ones)."""
        self.refresh()
        index = self._vectors
        if index is not None and self._key(clearance) in index[1]:
            matrix, masks = index
            q = np.asarray(vector, dtype=np.float32)
            sims = matrix @ (q / (np.linalg.norm(q) or 1.0))
            hidden_mask, permitted_mask = masks[self._key(clearance)]
            return (float(sims[hidden_mask].max()) if hidden_mask.any() else 0.0,
                    float(sims[permitted_mask].max()) if permitted_mask.any() else 0.0)
        params = {"q": "[" + ",".join(f"{float(x):.6f}" for x in vector) + "]"}
        with permitted_scope(_ALL_LEVELS), self.db.app.connect() as conn:
            hidden, permitted = conn.execute(_nearest_statement(clearance), params).one()
        return float(hidden or 0.0), float(permitted or 0.0)

    def denies(self, clearance: Clearance, question: str, vector=None) -> bool:
        if question_hits(question, self.phrases_for(clearance)):
            return True
        if vector is None or set(clearance.levels) >= set(ACCESS_LEVELS) and clearance.sensitive:
            return False
        hidden, permitted = self.nearest(clearance, vector)
        return hidden >= self.min_similarity and hidden - permitted >= self.min_margin
