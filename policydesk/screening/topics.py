"""The per-role topic gate, derived from the corpus instead of a hand list.

A question is refused for a caller, with the generic out-of-scope message, when it names a
subject that only documents above the caller's clearance talk about. The subjects come from
those documents themselves:

- every 2-3 word phrase of their titles and section headings, and
- every 2-3 word phrase that a version's text uses twice or more,

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

Where the terms come from (docs/refusal.md): ingest counts them per clearance bucket as it
writes chunks (`topic_terms.py`, migration 0021), so a question costs one indexed look-up of
its own phrases and their words, whatever the corpus size. The gate reads the counts through the
application engine inside an explicit all-levels scope that only this module opens. What it
reads never leaves the process: the gate answers yes or no, and the refusal is byte-identical to
any other out-of-scope refusal, so it does not reveal that a restricted document exists. Per
clearance vocabularies are cached until the corpus changes (a cheap signature query, at most
every `max_age_seconds`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import lru_cache

import numpy as np
from pgvector.sqlalchemy import Vector
from sqlalchemy import Text, and_, bindparam, cast, not_, select, text

from policydesk.accounts.access import ACCESS_LEVELS, Clearance
from policydesk.storage.models import Chunk, DocumentVersion
from policydesk.storage.predicate import access_clause
from policydesk.storage.scope import permitted_scope
from policydesk.screening.topic_terms import CALL_NOTE, ngrams, term
from policydesk.screening.vocabulary import Vocabulary
from policydesk.screening.words import STOPWORDS, normalize

log = logging.getLogger(__name__)

RARE_MAX_SECTIONS = 1


@lru_cache(maxsize=256)
def _question_grams(question: str) -> tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]:
    """The phrases a question may name a subject by: first its own 1-3 word phrases, with and
    without its function words, and content words one apart; then, only if none of those is
    gated, two words in either order within a short window. Cached: the gate looks the phrases
    up, then finds which of them were gated."""
    tokens = normalize(question)
    # the same words with the question's function words left out ("a complaint must be reported" names
    # "complaint report"), and two of them one content word apart ("complaints the plan has to report")
    content = [t for t in tokens if t not in STOPWORDS and t not in {"be", "been", "being", "get", "got"}]
    first = list(ngrams(tokens)) + [g for g in ngrams(content) if len(g) > 1] + list(zip(content, content[2:]))
    # "review a call dispute" names "dispute review"
    pairs = [(b, a) for i in range(len(tokens)) for j, a in enumerate(tokens[i:i + 4]) for b in tokens[i + j + 1:i + 4]]
    return tuple(first), tuple(pairs)


def question_hits(question: str, phrases) -> list[tuple[str, ...]]:
    """Gated phrases in the question (`phrases`: any container of gated phrases as tuples)."""
    first, pairs = _question_grams(question)
    hits = list(dict.fromkeys(g for g in first if g in phrases))
    return hits or list(dict.fromkeys(g for g in pairs if g in phrases))


def question_phrases(question: str) -> set[tuple[str, ...]]:
    """Every phrase `question_hits` may look up: the gate asks the database about these only."""
    first, pairs = _question_grams(question)
    return {g for g in first + pairs if len(g) > 1}


# ---------------------------------------------------------------------- from the database

# Changes with every ingest that adds, removes or rewrites a version (a version rewritten in place
# keeps its ingested_at and moves its text_changed_at).
_SIGNATURE_SQL = text(
    "SELECT count(*), coalesce(max(ingested_at)::text, ''), coalesce(max(text_changed_at)::text, ''), "
    "coalesce(sum(version), 0) FROM document_versions"
)


@lru_cache(maxsize=256)
def _readable(levels: tuple[str, ...], sensitive: bool, alias: str) -> str:
    """The one predicate builder's access clause (`storage.predicate.access_clause`) on a term
    table alias, rendered with its levels as literals, as the builder renders them for every read."""
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.sql import column, table

    terms = table(alias, column("access_level"), column("sensitive"))
    clause = access_clause(Clearance(role="topic-gate", levels=levels, sensitive=sensitive), terms)
    return str(clause.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))


@lru_cache(maxsize=64)
def _statements(levels: tuple[str, ...], sensitive: bool) -> dict[str, object]:
    """The gate's statements for one clearance (the product plays no part: terms are per level)."""
    c, t = _readable(levels, sensitive, "c"), _readable(levels, sensitive, "t")
    return {
        # Subjects of versions the caller may not read that no readable chunk says, with a word
        # that at most :rare readable chunks use.
        "gated": text(
            "SELECT DISTINCT c.term FROM topic_candidates c WHERE c.term = ANY(CAST(:phrases AS text[])) "
            f"AND NOT ({c}) AND NOT EXISTS (SELECT 1 FROM topic_terms t WHERE t.kind = 'phrase' "
            f"AND t.term = c.term AND {t}) "
            "AND EXISTS (SELECT 1 FROM unnest(string_to_array(c.term, ' ')) AS w(word) WHERE coalesce((SELECT sum(t.chunks) "
            f"FROM topic_terms t WHERE t.kind = 'word' AND t.term = w.word AND {t}), 0) <= :rare)"),
        "vocabulary": text(
            f"SELECT DISTINCT t.kind, t.term FROM topic_terms t WHERE t.kind IN ('word', 'part') AND {t}"),
        "initials": text(
            f"SELECT 1 FROM topic_terms t WHERE t.kind = 'initials' AND t.term = :term AND {t} LIMIT 1"),
    }


def _sql(clearance: Clearance, name: str):
    return _statements(tuple(sorted(clearance.checked_levels())), bool(clearance.sensitive))[name]


_PENDING_SQL = text("SELECT policydesk_topic_terms_pending()")
_COUNT_SQL = text("SELECT count(*) FROM data_chunks")
_VECTORS_SQL = text(
    "SELECT c.access_level, c.sensitive, v.source_type, c.embedding::text AS embedding FROM data_chunks c "
    "JOIN document_versions v ON v.doc_id = c.doc_id AND v.version = c.version ORDER BY c.id"
)
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
    the levels and sensitivity only: like the term look-ups, the gate ignores the product."""
    readable = access_clause(clearance.for_product(None), Chunk)
    distance = Chunk.embedding.cosine_distance(cast(bindparam("q", type_=Text), Vector))
    hidden = (select(1 - distance)
              .join(DocumentVersion, and_(DocumentVersion.doc_id == Chunk.doc_id,
                                          DocumentVersion.version == Chunk.version))
              .where(DocumentVersion.source_type != CALL_NOTE, not_(readable))
              .order_by(distance).limit(1).scalar_subquery())
    permitted = select(1 - distance).where(readable).order_by(distance).limit(1).scalar_subquery()
    return select(hidden.label("hidden"), permitted.label("permitted"))


def _vector_index(rows) -> tuple | None:
    """Stored chunk vectors as unit rows, each row's bucket, whether it may name a subject, and
    room for each clearance's row masks (filled on first use)."""
    vectors = [np.array(r.embedding.strip("[]").split(","), dtype=np.float32) if r.embedding else None for r in rows]
    if not vectors or any(v is None for v in vectors):
        return None
    matrix = np.stack(vectors)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    buckets = [(r.access_level, bool(r.sensitive)) for r in rows]
    subject = np.array([r.source_type != CALL_NOTE for r in rows])
    return matrix, buckets, subject, {}


class StoredInitials:
    """A clearance's run initials, looked up a word at a time: a large corpus holds about one per
    chunk (a million at 10^6 chunks), too many to load for each role after every ingest, while a
    question asks about a handful. Answers are cached with the vocabulary that holds them."""

    MAX_CACHED = 10_000

    def __init__(self, read: Callable[..., list], clearance: Clearance) -> None:
        self._read = read  # the gate's all-levels read
        self._sql = _sql(clearance, "initials")
        self._known: dict[str, bool] = {}

    def __contains__(self, word: object) -> bool:
        if not isinstance(word, str):
            return False
        if word not in self._known:
            if len(self._known) >= self.MAX_CACHED:
                self._known.clear()
            self._known[word] = bool(self._read(self._sql, term=word))
        return self._known[word]


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
        self._vocabularies: dict[tuple, Vocabulary] = {}
        # (unit vectors, [bucket per row], subject mask, {clearance key: (hidden, permitted) rows}) or None
        self._vectors = None
        self.pending = 0  # chunk changes the database has not counted yet

    def _read(self, sql, **params):
        # The gate must know what exists above the caller's clearance, so it reads under an
        # all-levels scope; nothing read here is returned to a caller.
        with permitted_scope(_ALL_LEVELS), self.db.app.connect() as conn:
            return conn.execute(sql, params).all()

    @staticmethod
    def _key(clearance: Clearance) -> tuple:
        return tuple(sorted(clearance.levels)), bool(clearance.sensitive)

    def refresh(self, force: bool = False) -> None:
        """Drop the cached vocabularies and vectors if the corpus changed."""
        with self._lock:
            now = self._clock()
            if not force and now - self._checked_at < self.max_age_seconds:
                return
            signature = tuple(self._read(_SIGNATURE_SQL)[0])
            self._checked_at = now
            if signature == self._signature and not force:
                return
            self.pending = int(self._read(_PENDING_SQL)[0][0])
            if self.pending:
                # Chunks written outside ingest (a bulk load, a hand edit) and not counted since:
                # their subjects do not gate until a catch-up runs (start-up runs one).
                log.warning("topic gate: %d chunk changes are not counted in topic_terms yet", self.pending)
            self._vocabularies = {}
            in_memory = self._read(_COUNT_SQL)[0][0] <= IN_MEMORY_MAX_CHUNKS
            self._vectors = _vector_index(self._read(_VECTORS_SQL)) if in_memory else None
            self._signature = signature

    def gated(self, clearance: Clearance, phrases: set[tuple[str, ...]]) -> frozenset[tuple[str, ...]]:
        """Which of these phrases name a subject only sources above the clearance talk about."""
        if not phrases:
            return frozenset()
        rows = self._read(_sql(clearance, "gated"), phrases=sorted(term(g) for g in phrases), rare=RARE_MAX_SECTIONS)
        return frozenset(tuple(r.term.split(" ")) for r in rows)

    def vocabulary(self, clearance: Clearance) -> Vocabulary:
        """The words of every source this clearance may read (policydesk.screening.vocabulary)."""
        self.refresh()
        key = self._key(clearance)
        if key not in self._vocabularies:
            kinds: dict[str, set[str]] = {"word": set(), "part": set()}
            for r in self._read(_sql(clearance, "vocabulary")):
                kinds[r.kind].add(r.term)
            self._vocabularies[key] = Vocabulary(frozenset(kinds["word"] | kinds["part"]),
                                                 StoredInitials(self._read, clearance))
        return self._vocabularies[key]

    def nearest(self, clearance: Clearance, vector) -> tuple[float, float]:
        """(best similarity among sections above the clearance, best among permitted ones)."""
        self.refresh()
        index = self._vectors
        if index is not None:
            matrix, buckets, subject, masks = index
            key = self._key(clearance)
            if key not in masks:
                readable = np.array([clearance.permits(level, sensitive) for level, sensitive in buckets])
                masks[key] = (~readable & subject, readable)
            hidden_mask, permitted_mask = masks[key]
            q = np.asarray(vector, dtype=np.float32)
            sims = matrix @ (q / (np.linalg.norm(q) or 1.0))
            return (float(sims[hidden_mask].max()) if hidden_mask.any() else 0.0,
                    float(sims[permitted_mask].max()) if permitted_mask.any() else 0.0)
        params = {"q": "[" + ",".join(f"{float(x):.6f}" for x in vector) + "]"}
        with permitted_scope(_ALL_LEVELS), self.db.app.connect() as conn:
            hidden, permitted = conn.execute(_nearest_statement(clearance), params).one()
        return float(hidden or 0.0), float(permitted or 0.0)

    def denies(self, clearance: Clearance, question: str, vector=None) -> bool:
        self.refresh()
        if question_hits(question, self.gated(clearance, question_phrases(question))):
            return True
        if vector is None or set(clearance.levels) >= set(ACCESS_LEVELS) and clearance.sensitive:
            return False
        hidden, permitted = self.nearest(clearance, vector)
        return hidden >= self.min_similarity and hidden - permitted >= self.min_margin
