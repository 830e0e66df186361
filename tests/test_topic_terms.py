"""The topic gate's terms kept at ingest: counts that match the chunks through every write path,
counted once by concurrent workers, loud when a write was not counted, readable only in scope."""

from __future__ import annotations

import threading
from datetime import date

import pytest
import yaml
from sqlalchemy import text
from sqlalchemy.exc import ProgrammingError

from policydesk.accounts.access import ACCESS_LEVELS, ROLES, clearance_for
from policydesk.ingest import ingest_directory
from policydesk.ops.readiness import readiness
from policydesk.storage.scope import permitted_scope
from policydesk.screening.topic_terms import catch_up, catch_up_database
from policydesk.screening.topics import CorpusTopicGate

PUBLIC = "# Claim Corrections\n\n## Corrected Claims\n\nA corrected claim must be sent within sixty days of the original denial.\n"
RESTRICTED = ("# Broker Commission Clawback\n\n## Clawback Schedule\n\nBroker commission clawback applies when a policy "
              "lapses within 90 days; the broker commission clawback schedule is quarterly.\n")
QUESTION = "What is the quarterly broker commission clawback schedule?"


def _source(file: str, doc_id: str, title: str, level: str) -> dict:
    return {"file": file, "id": doc_id, "title": title, "type": "wiki", "version": 1,
            "effective_from": date(2026, 1, 1), "date_basis": "none", "access_level": level, "sensitive": False,
            "owner": "Ops", "related_policies": []}


@pytest.fixture
def corpus(tmp_path):
    root = tmp_path / "c"
    (root / "wiki").mkdir(parents=True)
    (root / "wiki" / "corrections.md").write_text(PUBLIC)
    (root / "wiki" / "brokers.md").write_text(RESTRICTED)
    entries = [_source("wiki/corrections.md", "WIKI-CORR", "Claim Corrections", "public"),
               _source("wiki/brokers.md", "WIKI-BRK", "Broker Commission Clawback", "restricted")]
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))
    return root


@pytest.fixture
def db(make_db, embed_model, settings, corpus):
    db = make_db()
    ingest_directory(db, corpus, embed_model, settings)
    return db


def _tables(db) -> tuple[set, set]:
    with db.owner.connect() as conn:
        terms = set(conn.execute(text("SELECT kind, term, access_level, sensitive, chunks FROM topic_terms")).all())
        subjects = set(conn.execute(text("SELECT doc_id, version, term, access_level, sensitive FROM topic_candidates")).all())
    return terms, subjects


def _queue_every_chunk(conn) -> None:
    conn.execute(text(
        "INSERT INTO topic_terms_pending (sign, doc_id, version, access_level, sensitive, source_type, title, "
        "heading, body) SELECT 1, doc_id, version, access_level, sensitive, metadata_->>'source_type', "
        "metadata_->>'title', coalesce(metadata_->>'section', ''), text FROM data_chunks ORDER BY id"))


def _recounted(db) -> tuple[set, set]:
    """The tables as a count from scratch over the chunks held now would fill them."""
    with db.owner.begin() as conn:
        conn.execute(text("DELETE FROM topic_terms; DELETE FROM topic_candidates"))
        _queue_every_chunk(conn)
        catch_up(conn)
    return _tables(db)


def _gated(db, role: str) -> bool:
    return CorpusTopicGate(db, max_age_seconds=0).denies(clearance_for(role), QUESTION)


def test_ingest_counts_what_it_writes(db):
    terms, subjects = _tables(db)
    assert ("phrase", "commission clawback", "restricted", False, 1) in terms
    assert ("WIKI-BRK", 1, "broker commission", "restricted", False) in subjects
    assert _gated(db, "rep") and not _gated(db, "supervisor")
    with db.owner.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM topic_terms_pending")).scalar_one() == 0


def test_counts_follow_a_rewritten_version_and_a_closed_window(db, corpus, embed_model, settings):
    # The restricted page is edited in place: the old chunk's terms are subtracted, the new one's added.
    (corpus / "wiki" / "brokers.md").write_text(
        "# Broker Commission Clawback\n\n## Payment Timing\n\nCommissions are paid monthly.\n")
    ingest_directory(db, corpus, embed_model, settings)
    terms, subjects = _tables(db)
    assert not any(t[1] == "clawback schedule" for t in terms)
    assert ("WIKI-BRK", 1, "clawback schedule", "restricted", False) not in subjects
    # A second version closes the first one's window: a metadata rewrite that changes no term.
    (corpus / "wiki" / "corrections-v2.md").write_text(PUBLIC.replace("sixty", "ninety"))
    entries = yaml.safe_load((corpus / "manifest.yaml").read_text())["sources"]
    entries.append(_source("wiki/corrections-v2.md", "WIKI-CORR", "Claim Corrections", "public")
                   | {"version": 2, "effective_from": date(2026, 6, 1)})
    (corpus / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))
    ingest_directory(db, corpus, embed_model, settings)
    counted = _tables(db)
    assert ("word", "sixty", "public", False, 1) in counted[0] and ("word", "ninety", "public", False, 1) in counted[0]
    assert counted == _recounted(db)


def test_a_removed_subject_stops_gating(db, corpus, embed_model, settings):
    assert _gated(db, "rep")
    (corpus / "wiki" / "brokers.md").write_text("# Broker Payments\n\n## Timing\n\nPaid monthly.\n")
    ingest_directory(db, corpus, embed_model, settings)
    # The document's title still names its subject; the schedule is gone from every text.
    gate = CorpusTopicGate(db, max_age_seconds=0)
    assert gate.denies(clearance_for("rep"), "what about broker commission?")
    assert not gate.denies(clearance_for("rep"), "is the clawback schedule quarterly?")


def test_a_chunk_written_outside_ingest_is_loud_until_counted(db, settings):
    with db.owner.begin() as conn:
        conn.execute(text(
            "INSERT INTO data_chunks (text, metadata_, node_id) SELECT 'Reinsurance attachment points are set yearly.', "
            "jsonb_set(jsonb_set(metadata_, '{title}', '\"Reinsurance Attachment\"'), '{node_id}', '\"extra\"'), "
            "'extra' FROM data_chunks WHERE doc_id = 'WIKI-BRK' LIMIT 1"))
    gate = CorpusTopicGate(db, max_age_seconds=0)
    question = "what are the reinsurance attachment points?"
    assert not gate.denies(clearance_for("rep"), question)
    assert gate.pending == 1
    state = readiness(db, None)
    assert "topic_terms" in state.failing and "1 chunk changes not counted" in state.checks["topic_terms"]
    assert catch_up_database(db).chunks == 1
    gate.refresh(force=True)
    assert gate.pending == 0 and gate.denies(clearance_for("rep"), question)
    assert readiness(db, None).checks["topic_terms"] == "ok"


def test_two_workers_count_a_queue_once(db):
    once = _tables(db)[0]
    with db.owner.begin() as conn:
        _queue_every_chunk(conn)
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def worker():
        try:
            start.wait()
            catch_up_database(db)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    twice = _tables(db)[0]
    assert twice == {(k, t, lvl, s, 2 * n) for k, t, lvl, s, n in once}


@pytest.mark.parametrize("role", ROLES)
def test_the_application_reads_terms_only_in_scope_and_never_the_queue(db, role):
    clearance = clearance_for(role)
    hidden = [lvl for lvl in ACCESS_LEVELS if lvl not in clearance.levels]
    with permitted_scope(clearance), db.app.connect() as conn:
        for table in ("topic_terms", "topic_candidates"):
            levels = set(conn.execute(text(f"SELECT DISTINCT access_level FROM {table}")).scalars())
            assert levels and not levels & set(hidden), (table, levels)
        assert conn.execute(text("SELECT policydesk_topic_terms_pending()")).scalar_one() == 0
    with db.app.connect() as conn:  # no scope: no rows
        assert conn.execute(text("SELECT count(*) FROM topic_terms")).scalar_one() == 0
    for statement in ("SELECT count(*) FROM topic_terms_pending", "DELETE FROM topic_terms",
                      "INSERT INTO topic_candidates VALUES ('x', 1, 'x', 'public', false)"):
        with permitted_scope(clearance), db.app.connect() as conn, pytest.raises(ProgrammingError, match="permission denied"):
            conn.execute(text(statement))


def test_emptying_the_chunks_empties_the_terms(db):
    with db.owner.begin() as conn:
        conn.execute(text("TRUNCATE data_chunks"))
    assert _tables(db) == (set(), set())
    assert not _gated(db, "rep")


def test_initials_are_looked_up_in_the_callers_scope_and_follow_the_corpus(db, embed_model, settings, corpus):
    """An abbreviation is known when a run of words the caller may read spells it, and only then."""
    gate = CorpusTopicGate(db, max_age_seconds=0)
    rep, supervisor = clearance_for("rep"), clearance_for("supervisor")
    assert gate.vocabulary(rep).knows("CCS")  # "corrected claim ... sent", public
    assert not gate.vocabulary(rep).knows("BCCS")  # "broker commission clawback schedule", restricted
    assert gate.vocabulary(supervisor).knows("BCCS")
    (corpus / "wiki" / "brokers.md").write_text("# Broker Payments\n\n## Timing\n\nAgent fees are paid monthly.\n")
    ingest_directory(db, corpus, embed_model, settings)
    assert not gate.vocabulary(supervisor).knows("BCCS")  # no readable text spells it any more
    assert gate.vocabulary(supervisor).knows("AFP")  # "agent fees ... paid"


def test_a_large_catch_up_vacuums_the_queue_it_emptied(db, monkeypatch):
    """The queue's deleted rows would be read by every pending count until autovacuum came."""
    import policydesk.screening.topic_terms as topic_terms

    with db.owner.begin() as conn:
        _queue_every_chunk(conn)
    monkeypatch.setattr(topic_terms, "VACUUM_AFTER_CHUNKS", 1)
    assert catch_up_database(db).chunks > 0
    with db.owner.connect() as conn:
        vacuumed = conn.execute(text("SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables "
                                     "WHERE relname = 'topic_terms_pending'")).scalar_one()
        assert conn.execute(text("SELECT count(*) FROM topic_terms_pending")).scalar_one() == 0
    assert vacuumed


def test_phrases_are_the_kept_ngrams_once_per_occurrence():
    from collections import Counter

    from policydesk.screening.topic_terms import ngrams, phrases, term
    from policydesk.screening.words import STOPWORDS, normalize

    def kept(gram: tuple[str, ...]) -> bool:
        return len(gram) > 1 and gram[0] not in STOPWORDS and gram[-1] not in STOPWORDS

    for sentence in ("Claims for the initial filing must be submitted within 90 days of the date of service.",
                     "Prior authorization: prior authorization requests for out-of-network care, prior authorization",
                     "of the to a", "appeal", ""):
        tokens = normalize(sentence)
        assert Counter(phrases(tokens)) == Counter(term(g) for g in ngrams(tokens) if kept(g))
