"""What each chunk contributes to the topic gate's terms, and the catch-up that counts them.

The database queues every chunk written, rewritten or deleted (migration 0021); `catch_up`
turns the queue into counts per clearance bucket (access level, sensitive) in `topic_terms`,
and recomputes the subjects of each version it touched in `topic_candidates`. It runs on the
owner login: in ingest's transaction (so a committed ingest is counted), after a bulk load, and
at start-up. A transaction-level advisory lock makes concurrent catch-ups take turns, so a
queued chunk is counted once whichever worker gets to it.

The terms are the ones the gate and the vocabulary read, from one string per chunk:
"title . heading . text", tokenized by `words.normalize`.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import repeat

from sqlalchemy import text

from policydesk.screening.words import STOPWORDS, normalize, run_initials

MAX_N = 3
CALL_NOTE = "call_note"
# Queued chunks read per round trip, and the distinct counts held before they are written: a
# bulk catch-up repeats the same terms in every batch, so counts are merged across batches and
# written once per MERGE_KEYS distinct (kind, term, bucket) keys (or at the end).
BATCH_CHUNKS = 5000
MERGE_KEYS = 2_000_000
VACUUM_AFTER_CHUNKS = 50_000  # a catch-up this large vacuums the queue and the terms after it
_LOCK = 0x70642D74  # the catch-up's advisory lock key
_LOG_EVERY = 100_000  # chunks between progress lines of a long catch-up (a bulk load, a first start)

log = logging.getLogger(__name__)


def ngrams(tokens: list[str], n_max: int = MAX_N) -> Iterable[tuple[str, ...]]:
    for n in range(1, n_max + 1):
        for i in range(len(tokens) - n + 1):
            yield tuple(tokens[i:i + n])


def term(gram: tuple[str, ...]) -> str:
    return " ".join(gram)


def chunk_string(title: str, heading: str, body: str) -> str:
    return f"{title} . {heading} . {body}"


def phrases(tokens: list[str]) -> list[str]:
    """Every phrase of `tokens`, once per occurrence: 2 to MAX_N (3) consecutive tokens that neither
    start nor end with a function word. Only those are built; most n-grams fail that test."""
    content = [t not in STOPWORDS for t in tokens]
    out: list[str] = []
    for i in range(len(tokens) - 1):
        if content[i]:
            if content[i + 1]:
                out.append(f"{tokens[i]} {tokens[i + 1]}")
            if i + 2 < len(tokens) and content[i + 2]:
                out.append(f"{tokens[i]} {tokens[i + 1]} {tokens[i + 2]}")
    return out


def chunk_terms(title: str, heading: str, body: str) -> dict[str, set[str]]:
    """The terms one chunk contributes, by kind."""
    joined = chunk_string(title, heading, body)
    tokens = normalize(joined)
    words = set(tokens)
    return {
        "word": words,
        "part": {p for t in words if "-" in t for p in t.split("-") if p} - words,
        "phrase": set(phrases(tokens)),
        "initials": set(run_initials(tokens)),
    }


def version_subjects(sections: Iterable[tuple[str, str, str]]) -> set[str]:
    """A version's subjects from its (title, heading, text) sections: every phrase of its title
    and headings, and every phrase its text uses twice or more."""
    found: set[str] = set()
    repeated: Counter = Counter()
    for title, heading, body in sections:
        for label in (title, heading):
            found.update(phrases(normalize(label)))
        repeated.update(phrases(normalize(body)))
    return found | {t for t, n in repeated.items() if n >= 2}


@dataclass(frozen=True)
class CatchUp:
    chunks: int  # queued chunk changes counted
    versions: int  # versions whose subjects were recomputed
    seconds: float


_PENDING = text(
    "SELECT id, sign, doc_id, version, access_level, sensitive, title, heading, body FROM topic_terms_pending "
    "WHERE id > :after ORDER BY id LIMIT :limit")
_MERGE = text(
    "INSERT INTO topic_terms AS t (kind, term, access_level, sensitive, chunks) "
    "SELECT * FROM unnest(CAST(:kind AS text[]), CAST(:term AS text[]), CAST(:level AS text[]), "
    "CAST(:sensitive AS boolean[]), CAST(:n AS integer[])) ORDER BY 1, 2, 3, 4 "
    "ON CONFLICT (kind, term, access_level, sensitive) DO UPDATE SET chunks = t.chunks + excluded.chunks")
_VERSION_SECTIONS = text(
    "SELECT doc_id, version, access_level, coalesce(sensitive, true) AS sensitive, "
    "coalesce(metadata_->>'source_type', '') AS source_type, coalesce(metadata_->>'title', '') AS title, "
    "coalesce(metadata_->>'section', '') AS heading, text FROM data_chunks "
    "WHERE (doc_id, version) IN (SELECT * FROM unnest(CAST(:doc AS text[]), CAST(:version AS integer[]))) "
    "ORDER BY id")
_DROP_SUBJECTS = text(
    "DELETE FROM topic_candidates WHERE (doc_id, version) IN "
    "(SELECT * FROM unnest(CAST(:doc AS text[]), CAST(:version AS integer[])))")
_ADD_SUBJECTS = text(
    "INSERT INTO topic_candidates (doc_id, version, term, access_level, sensitive) "
    "SELECT * FROM unnest(CAST(:doc AS text[]), CAST(:version AS integer[]), CAST(:term AS text[]), "
    "CAST(:level AS text[]), CAST(:sensitive AS boolean[]))")


_DROP_SPENT = text(
    "DELETE FROM topic_terms t USING unnest(CAST(:kind AS text[]), CAST(:term AS text[]), CAST(:level AS text[]), "
    "CAST(:sensitive AS boolean[])) AS k(kind, term, access_level, sensitive) "
    "WHERE (t.kind, t.term, t.access_level, t.sensitive) = (k.kind, k.term, k.access_level, k.sensitive) "
    "AND t.chunks <= 0")


def _columns(rows: list[tuple]) -> list[list]:
    return [list(col) for col in zip(*rows)]


def _merge(conn, counts: Counter) -> None:
    """Add the counts; a term no chunk of its bucket says any more is removed."""
    rows = [(k, t, lvl, s, n) for (k, t, lvl, s), n in counts.items() if n]
    if not rows:
        return
    kind, term_, level, sensitive, n = _columns(rows)
    conn.execute(_MERGE, dict(kind=kind, term=term_, level=level, sensitive=sensitive, n=n))
    spent = [r[:4] for r in rows if r[4] < 0]
    if spent:
        kind, term_, level, sensitive = _columns(spent)
        conn.execute(_DROP_SPENT, dict(kind=kind, term=term_, level=level, sensitive=sensitive))


def _recompute_subjects(conn, versions: list[tuple[str, int]]) -> None:
    """Replace these versions' subjects with those of the chunks they hold now."""
    for i in range(0, len(versions), BATCH_CHUNKS):
        batch = versions[i:i + BATCH_CHUNKS]
        params = dict(doc=[d for d, _ in batch], version=[v for _, v in batch])
        conn.execute(_DROP_SUBJECTS, params)
        sections: dict[tuple, list] = {}
        for r in conn.execute(_VERSION_SECTIONS, params):
            if r.source_type != CALL_NOTE:
                sections.setdefault((r.doc_id, r.version, r.access_level, r.sensitive), []).append(
                    (r.title, r.heading, r.text))
        rows = [(d, v, t, lvl, s) for (d, v, lvl, s), secs in sections.items() for t in version_subjects(secs)]
        if rows:
            doc, version, term_, level, sensitive = _columns(rows)
            conn.execute(_ADD_SUBJECTS, dict(doc=doc, version=version, term=term_, level=level, sensitive=sensitive))


def _keyed(buckets: dict[tuple, Counter]) -> Counter:
    """(kind, term, access level, sensitive) -> the signed count, from the per-bucket counts."""
    counts: Counter = Counter()
    for (level, sensitive, sign), bucket in buckets.items():
        for (kind, t), n in bucket.items():
            counts[(kind, t, level, sensitive)] += sign * n
    return counts


def catch_up(conn) -> CatchUp:
    """Count every queued chunk change into `topic_terms` and recompute the touched versions'
    subjects, in the caller's transaction on the owner login."""
    t0 = time.perf_counter()
    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK})
    after, counted, touched = 0, 0, set()
    # (access level, sensitive, sign) -> Counter of (kind, term): counted by Counter.update, in C
    buckets: dict[tuple, Counter] = {}
    while rows := conn.execute(_PENDING, {"after": after, "limit": BATCH_CHUNKS}).all():
        for r in rows:
            bucket = buckets.setdefault((r.access_level, r.sensitive, r.sign), Counter())
            for kind, terms in chunk_terms(r.title, r.heading, r.body).items():
                bucket.update(zip(repeat(kind), terms))
            touched.add((r.doc_id, r.version))
        if sum(map(len, buckets.values())) >= MERGE_KEYS:
            _merge(conn, _keyed(buckets))
            buckets = {}
        after, counted = rows[-1].id, counted + len(rows)
        if counted % _LOG_EVERY < len(rows):
            log.info("topic terms: %d chunk changes counted", counted)
    _merge(conn, _keyed(buckets))
    if counted:
        conn.execute(text("DELETE FROM topic_terms_pending WHERE id <= :after"), {"after": after})
        _recompute_subjects(conn, sorted(v for v in touched if v[0] is not None))
    return CatchUp(counted, len(touched), time.perf_counter() - t0)


def catch_up_database(db) -> CatchUp:
    """`catch_up` in a transaction of its own on the owner engine (start-up, after a bulk load).
    A large catch-up is followed by a VACUUM of the queue: its deleted rows would otherwise be
    read by every pending count (readiness, the gate) until autovacuum gets to them."""
    with db.owner.begin() as conn:
        done = catch_up(conn)
    if done.chunks >= VACUUM_AFTER_CHUNKS:
        with db.owner.connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(
                text("VACUUM (ANALYZE) topic_terms_pending, topic_terms, topic_candidates"))
    return done
