"""Version resolution (pipeline step 5) against the demo corpus: the date suite, no-date
warnings, the permission-scoped lookup, and a version the caller can't see.

Real retrieval (HybridRetriever) on the embedded Postgres, then VersionResolver. No mocks.
"""

from __future__ import annotations

import asyncio
import shutil
from datetime import date
from pathlib import Path

import pytest
import yaml
from sqlalchemy import text
from sqlalchemy import event

from policydesk.accounts.access import Clearance, clearance_for
from policydesk.postprocessors import ConflictFlagger, VersionResolver
from policydesk.postprocessors.versions import doc_id_of
from policydesk.versions import NoVersionInForce, VersionLookup, compare_versions, display_window, in_force_on
from policydesk.retrievers import HybridRetriever, chunk_vector_store
from tests.findings import Remembering

SUITE = yaml.safe_load((Path(__file__).parent / "data" / "version_dates.yaml").read_text())
TODAY: date = SUITE["today"]
COMPLIANCE = clearance_for("compliance")
REP = clearance_for("rep")
CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def retrieve(db, embed_model, question: str, clearance=COMPLIANCE, top_k: int = 8):
    retriever = HybridRetriever(
        chunk_vector_store(db), embed_model, clearance=clearance, top_k=top_k
    )
    return retriever.retrieve(question)


def resolver(db, clearance=COMPLIANCE, dates=None, **kwargs) -> VersionResolver:
    # Each call returns its findings; the test reads the last call's back as r.report.
    return Remembering(VersionResolver(
        lookup=VersionLookup(db), clearance=clearance, dates=dates or {}, today=TODAY, **kwargs,
    ))


def versions_in_context(nodes, doc_id: str) -> set[int]:
    return {int(n.node.metadata["version"]) for n in nodes if doc_id_of(n.node) == doc_id}


# -- the date suite -------------------------------------------------------------------------


@pytest.mark.parametrize("case", SUITE["cases"], ids=[c["id"] for c in SUITE["cases"]])
def test_resolver_puts_only_the_applicable_version_in_context(demo_db, embed_model, case):
    question = SUITE["questions"][case["ask"]]
    nodes = retrieve(demo_db, embed_model, question)
    for doc_id in case["expect"]:
        assert doc_id in {doc_id_of(n.node) for n in nodes}, f"retrieval missed {doc_id}"
    r = resolver(demo_db, dates=case["dates"])
    expected_errors = {d: v for d, v in case["expect"].items() if v == "no_version"}

    if expected_errors:
        # The policy ranked first had not taken effect: dropped, and held back for the pipeline to
        # refuse for it when the question is about it.
        (doc_id,) = expected_errors
        out = r.postprocess_nodes(nodes)
        assert doc_id not in {doc_id_of(n.node) for n in out}
        exc = r.report.held_back
        assert isinstance(exc, NoVersionInForce)
        first = case["first_effective"].isoformat()
        assert exc.doc_id == doc_id
        assert f"({doc_id})" in str(exc) and first in str(exc)
        assert str(exc).startswith("No version of ")
        return

    out = r.postprocess_nodes(nodes)
    lookup = VersionLookup(demo_db)
    for doc_id, version in case["expect"].items():
        assert versions_in_context(out, doc_id) == {version}, f"{doc_id}: {[n.node.node_id for n in out]}"
        applied = {a["doc_id"]: a for a in r.report.applied}
        assert applied[doc_id]["version"] == version
        basis = applied[doc_id]["date_basis"]
        entered = case["dates"].get(basis)
        assert applied[doc_id]["applicable_date"] == (entered.isoformat() if entered else None)
    # Every policy chunk left in context is the version in force on its own applicable date.
    visible = lookup.versions({doc_id_of(n.node) for n in out}, COMPLIANCE)
    for n in out:
        meta = n.node.metadata
        assert "applicable_date" in meta
        if meta["source_type"] != "policy":
            continue
        on = date.fromisoformat(meta["applicable_date"]) if meta["applicable_date"] else TODAY
        assert in_force_on(visible[doc_id_of(n.node)], on).version == int(meta["version"])
        assert meta["date_basis"] in ("date_of_service", "denial_notice_date")
        assert {"effective_from", "effective_to", "version"} <= set(meta)
    ids = [n.node.node_id for n in out]
    assert len(ids) == len(set(ids))


def test_date_suite_covers_every_boundary_from_both_sides():
    """Each effective date in the suite has a case on the day before and on the day itself."""
    starts = {
        "POL-TF": ["2024-01-01", "2026-01-01"], "POL-APL": ["2024-01-01", "2025-07-01"],
        "POL-PA": ["2024-01-01", "2027-01-01"], "POL-ER": ["2024-01-01", "2025-10-01"],
        "POL-COB": ["2024-01-01", "2026-04-01"], "POL-TH": ["2026-03-01"],
    }
    single = {c["ask"]: [] for c in SUITE["cases"]}
    for c in SUITE["cases"]:
        single[c["ask"]].extend(d.isoformat() for d in c["dates"].values())
    for doc_id, days in starts.items():
        for day in days:
            before = date.fromordinal(date.fromisoformat(day).toordinal() - 1).isoformat()
            assert day in single[doc_id] and before in single[doc_id], (doc_id, day)


def test_swap_goes_backwards_and_forwards(demo_db, embed_model):
    # 2025 date of service: POL-TF version 2 chunks are swapped back to version 1.
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-TF"])
    r = resolver(demo_db, dates={"date_of_service": date(2025, 11, 3)})
    out = r.postprocess_nodes(nodes)
    assert ("POL-TF:v2:filing-limit", "POL-TF:v1:filing-limit") in r.report.swaps
    assert "POL-TF:v1:filing-limit" in [n.node.node_id for n in out]
    # 2027 date of service: POL-PA version 1 chunks are swapped forward to the scheduled version 2.
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-PA"])
    r = resolver(demo_db, dates={"date_of_service": date(2027, 2, 1)})
    out = r.postprocess_nodes(nodes)
    assert ("POL-PA:v1:decision-timeframes", "POL-PA:v2:decision-timeframes") in r.report.swaps
    (pa,) = [a for a in r.report.applied if a["doc_id"] == "POL-PA"]
    assert pa == {
        "doc_id": "POL-PA", "title": "Prior Authorization", "version": 2, "effective_from": "2027-01-01",
        "effective_to": None, "window": "in force from 2027-01-01", "date_basis": "date_of_service",
        "applicable_date": "2027-02-01",
    }


def test_no_version_in_force_message_names_policy_and_first_date(demo_db, embed_model):
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-TH"])
    r = resolver(demo_db, dates={"date_of_service": date(2026, 1, 15)})
    r.postprocess_nodes(nodes)
    assert str(r.report.held_back) == (
        "No version of Telehealth Services (POL-TH) was in force on 2026-01-15 (date of service); "
        "the first version took effect 2026-03-01."
    )


def test_lower_ranked_policy_not_yet_in_force_is_dropped_not_refused(demo_db, embed_model):
    # The prior authorization question also retrieves POL-RX (effective 2025-01-01). For a 2024
    # date of service that policy did not apply: its chunk is dropped, the request still answers.
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-PA"])
    assert "POL-RX" in {doc_id_of(n.node) for n in nodes}
    r = resolver(demo_db, dates={"date_of_service": date(2024, 6, 1)})
    out = r.postprocess_nodes(nodes)
    assert "POL-RX" not in {doc_id_of(n.node) for n in out}
    assert any("POL-RX" in d["reason"] and "2025-01-01" in d["reason"] for d in r.report.dropped)
    assert versions_in_context(out, "POL-PA") == {1}
    # Issue 16: dropped with a visible warning naming the policy and its first date, not silently.
    assert [w.message for w in r.report.warnings if w.kind == "not_in_force"] == [
        "Pharmacy Formulary Exceptions (POL-RX) was left out of this answer: no version was in force on "
        "2024-06-01 (date of service); its first version took effect 2025-01-01."]


# -- without a date -------------------------------------------------------------------------


def test_no_date_timely_filing_resolves_to_v2_and_warns_of_recent_change(demo_db, embed_model):
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-TF"])
    r = resolver(demo_db)
    out = r.postprocess_nodes(nodes)
    assert versions_in_context(out, "POL-TF") == {2}
    recent = [w for w in r.report.warnings if w.kind == "recent_change"]
    assert [w.message for w in recent] == [
        "Timely Filing of Claims changed on 2026-01-01: version 2 replaced version 1 (in force 2024-01-01 "
        "to 2025-12-31). If the member's date of service is before 2026-01-01, enter it to get the rule "
        "that applied."
    ]
    (tf,) = [a for a in r.report.applied if a["doc_id"] == "POL-TF"]
    assert tf["version"] == 2 and tf["effective_to"] is None and tf["applicable_date"] is None
    assert all(n.node.metadata["applicable_date"] is None for n in out)


def test_no_date_prior_authorization_stays_on_v1_and_warns_of_scheduled_change(demo_db, embed_model):
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-PA"])
    r = resolver(demo_db)
    out = r.postprocess_nodes(nodes)
    # In force today, not the newest: version 2 only takes effect 2027-01-01.
    assert versions_in_context(out, "POL-PA") == {1}
    scheduled = [w.message for w in r.report.warnings if w.kind == "scheduled_change"]
    assert len(scheduled) == 1
    assert "Prior Authorization" in scheduled[0] and "version 2 takes effect 2027-01-01" in scheduled[0]
    assert "version 1 (in force 2024-01-01 to 2026-12-31)" in scheduled[0]
    assert not [w for w in r.report.warnings if w.kind == "recent_change" and "Prior Authorization" in w.message]


def test_recent_change_window_is_configurable(demo_db, embed_model):
    # POL-ER version 2 took effect 2025-10-01, 424 days before today: not recent at 365 days.
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-ER"])
    quiet = resolver(demo_db)
    quiet.postprocess_nodes(nodes)
    assert not [w for w in quiet.report.warnings if w.kind == "recent_change"]
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-ER"])
    loud = resolver(demo_db, recent_change_days=500)
    loud.postprocess_nodes(nodes)
    (w,) = [w for w in loud.report.warnings if w.kind == "recent_change"]
    assert "version 1 (in force 2024-01-01 to 2025-09-30)" in w.message


def test_non_policy_chunks_pass_through_and_ids_are_unique(demo_db, embed_model):
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-TF"])
    notes_before = [n.node.node_id for n in nodes if n.node.metadata["source_type"] != "policy"]
    out = resolver(demo_db).postprocess_nodes(nodes)
    notes_after = [n.node.node_id for n in out if n.node.metadata["source_type"] != "policy"]
    assert notes_after == notes_before
    ids = [n.node.node_id for n in out]
    assert len(ids) == len(set(ids))


def test_async_postprocess_gives_the_same_context(demo_db, embed_model):
    # The base class runs the sync body in a thread; the scope contextvar must travel with it.
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-TF"])
    sync_ids = [n.node.node_id for n in resolver(demo_db).postprocess_nodes(list(nodes))]
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-TF"])
    async_ids = [n.node.node_id for n in asyncio.run(resolver(demo_db).apostprocess_nodes(nodes))]
    assert async_ids == sync_ids


def test_display_window_shows_last_day_in_force():
    assert display_window(date(2024, 1, 1), date(2026, 1, 1)) == ("2024-01-01", "2025-12-31")
    assert display_window("2026-01-01", "9999-12-31") == ("2026-01-01", None)
    assert display_window("2026-01-01", None) == ("2026-01-01", None)


# -- permissions ----------------------------------------------------------------------------


def test_lookup_never_returns_what_the_caller_cannot_see(demo_db):
    lookup = VersionLookup(demo_db)
    # POL-PA is internal: a public-only caller gets nothing, not even that versions exist.
    public = Clearance(role="test", levels=("public",), sensitive=False)
    assert lookup.versions(["POL-PA"], public) == {}
    assert lookup.section("POL-PA", 2, "decision-timeframes", public) is None
    assert lookup.sections("POL-PA", 1, public) == []
    # The same calls with clearance see both versions.
    seen = lookup.versions(["POL-PA"], REP)["POL-PA"]
    assert [v.version for v in seen] == [1, 2]
    assert lookup.section("POL-PA", 2, "decision-timeframes", REP) is not None
    # The request-wide read the resolver uses follows the same rule.
    hidden = lookup.reads(["POL-PA"], {("POL-PA", "decision-timeframes")}, public)
    assert hidden.versions == {} and hidden.section_rows == {}
    assert hidden.section("POL-PA", 2, "decision-timeframes") is None
    seen = lookup.reads(["POL-PA"], {("POL-PA", "decision-timeframes")}, REP)
    assert [v.version for v in seen.versions["POL-PA"]] == [1, 2]
    assert seen.section("POL-PA", 2, "decision-timeframes").node_id == "POL-PA:v2:decision-timeframes"
    assert lookup.sections_of([("POL-PA", 1)], public) == {("POL-PA", 1): []}


def test_resolver_does_not_invent_a_version_the_caller_cannot_see(demo_db, embed_model):
    # A POL-PA chunk reaching a public-only caller's context (it can't through retrieval) is
    # dropped: the lookup finds no visible version, and no other version is fetched for it.
    nodes = [n for n in retrieve(demo_db, embed_model, SUITE["questions"]["POL-PA"]) if doc_id_of(n.node) == "POL-PA"]
    assert nodes
    public = Clearance(role="test", levels=("public",), sensitive=False)
    r = resolver(demo_db, clearance=public, dates={"date_of_service": date(2027, 2, 1)})
    out = r.postprocess_nodes(nodes)
    assert out == [] and r.report.swaps == [] and r.report.applied == []
    assert {d["reason"] for d in r.report.dropped} == {"no visible version"}


def test_every_lookup_statement_carries_the_access_predicate(demo_db, embed_model):
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-TF"])
    statements: list[str] = []

    def spy(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    owner_statements: list[str] = []

    def owner_spy(conn, cursor, statement, parameters, context, executemany):
        owner_statements.append(statement)

    event.listen(demo_db.app, "before_cursor_execute", spy)
    event.listen(demo_db.owner, "before_cursor_execute", owner_spy)
    try:
        lookup = VersionLookup(demo_db)
        r = VersionResolver(lookup=lookup, clearance=REP,
                            dates={"date_of_service": date(2025, 11, 3)}, today=TODAY)
        out = r.postprocess_nodes(nodes)
        ConflictFlagger(lookup=lookup, clearance=REP).postprocess_nodes(out)
        compare_versions(lookup, "POL-TF", REP, today=TODAY)
    finally:
        event.remove(demo_db.app, "before_cursor_execute", spy)
        event.remove(demo_db.owner, "before_cursor_execute", owner_spy)
    # The resolver's and the conflict check's reads are pipelined (storage/pipelined.py); the spy
    # sees them because pipelined reads announce their statements to the same listeners.
    from policydesk.versions.repository import _read_statements, _sections_statement

    pipelined = [sql for sql, _ in _read_statements(demo_db.app.dialect, REP)]
    pipelined.append(_sections_statement(demo_db.app.dialect, REP)[0])
    assert all(sql in statements for sql in pipelined)
    # The scope's one settings statement names data_chunks only to size ef_search from pg_class; it reads no row.
    reads = [s for s in statements if ("document_versions" in s or "data_chunks" in s)
             and not s.lstrip().startswith("SELECT set_config(")]
    assert any("document_versions" in s for s in reads) and any("data_chunks" in s for s in reads)
    for s in reads:
        where = s[s.upper().index("WHERE"):]
        assert "access_level" in where, s
        assert "%(" in where or "$" in where  # bound parameters, never interpolated values
    assert owner_statements == []


def test_resolution_reads_are_limited_by_row_level_security_without_their_predicate(demo_db, monkeypatch):
    # The second layer: with the WHERE predicate gone from the resolver's statements, the scope
    # its pipelined read sets still hides POL-PA (internal) from a public-only caller.
    from sqlalchemy import true

    from policydesk.storage import sources
    from policydesk.versions import repository

    public = Clearance(role="test", levels=("public",), sensitive=False)
    caches = (repository._read_statements, repository._sections_statement)
    for cache in caches:
        cache.cache_clear()
    monkeypatch.setattr(sources, "access_clause", lambda clearance, model: true())
    lookup = VersionLookup(demo_db)
    try:
        assert "access_level" not in repository._read_statements(demo_db.app.dialect, public)[0][0]
        hidden = lookup.reads(["POL-PA"], {("POL-PA", "decision-timeframes")}, public)
        seen = lookup.reads(["POL-PA"], {("POL-PA", "decision-timeframes")}, REP)
        hidden_sections = lookup.sections_of([("POL-PA", 1)], public)
        seen_sections = lookup.sections_of([("POL-PA", 1)], REP)
    finally:
        for cache in caches:
            cache.cache_clear()
    assert hidden.versions == {} and hidden.section_rows == {}
    assert [v.version for v in seen.versions["POL-PA"]] == [1, 2] and len(seen.section_rows) == 2
    assert hidden_sections == {("POL-PA", 1): []} and seen_sections[("POL-PA", 1)]


def test_resolution_and_conflict_checks_each_read_in_one_transaction(demo_db, embed_model):
    # A 2025 date of service swaps every POL-TF version 2 chunk back to version 1: the swaps come
    # from the request's one read, not from a transaction per swapped chunk; the conflict check
    # reads every version in context in one transaction as well. (Counted as connections taken
    # from the pool: the resolver's read is a pipelined one that bypasses SQLAlchemy's begin.)
    # Retrieval keeps one version per section, so a deeper top k brings several version 2 sections.
    nodes = retrieve(demo_db, embed_model, SUITE["questions"]["POL-TF"], top_k=20)
    checkouts: list[int] = []
    listener = lambda *args: checkouts.append(1)  # noqa: E731
    lookup = VersionLookup(demo_db)
    r = Remembering(VersionResolver(lookup=lookup, clearance=REP, dates={"date_of_service": date(2025, 11, 3)},
                                    today=TODAY))
    event.listen(demo_db.app.pool, "checkout", listener)
    try:
        out = r.postprocess_nodes(nodes)
        resolved = len(checkouts)
        ConflictFlagger(lookup=lookup, clearance=REP).postprocess_nodes(out)
        flagged = len(checkouts) - resolved
    finally:
        event.remove(demo_db.app.pool, "checkout", listener)
    assert len(r.report.swaps) >= 2 and versions_in_context(out, "POL-TF") == {1}
    assert (resolved, flagged) == (1, 1)


def test_a_version_hidden_from_the_caller_is_never_stood_in_for(make_db, embed_model, settings, tmp_path):
    """POL-TF version 2 marked sensitive: a rep can read version 1 only.

    Ingest refuses versions of one policy that differ in access level or sensitivity; a database
    changed by hand (or by an older release) can still hold such a pair, and reads must not
    stand one version in for the other. The pair is made here by owner SQL after ingest.
    """
    from policydesk.ingest import ingest_directory

    corpus = tmp_path / "corpus"
    (corpus / "policies").mkdir(parents=True)
    manifest = yaml.safe_load((CORPUS / "manifest.yaml").read_text())
    sources = [s for s in manifest["sources"] if s["id"] == "POL-TF"]
    for s in sources:
        shutil.copy(CORPUS / s["file"], corpus / s["file"])
        s["related_policies"] = []
    (corpus / "manifest.yaml").write_text(yaml.safe_dump({"sources": sources}, sort_keys=False))
    db = make_db()
    ingest_directory(db, corpus, embed_model, settings)
    with db.owner.begin() as conn:
        conn.execute(text("UPDATE data_chunks SET metadata_ = jsonb_set(metadata_, '{sensitive}', 'true') "
                          "WHERE node_id LIKE 'POL-TF:v2:%'"))
        conn.execute(text("UPDATE document_versions SET sensitive = true WHERE doc_id = 'POL-TF' AND version = 2"))
    question = SUITE["questions"]["POL-TF"]

    lookup = VersionLookup(db)
    assert [v.version for v in lookup.versions(["POL-TF"], REP)["POL-TF"]] == [1]
    assert lookup.section("POL-TF", 2, "filing-limit", REP) is None

    # No date: the version in force today is hidden, so nothing of POL-TF is left (no v1 stand-in).
    nodes = retrieve(db, embed_model, question, REP)
    assert versions_in_context(nodes, "POL-TF") == {1}
    r = resolver(db, clearance=REP)
    assert versions_in_context(r.postprocess_nodes(nodes), "POL-TF") == set()
    assert r.report.swaps == [] and r.report.applied == []
    # A 2026 date of service: version 2 applied but is hidden; version 1 is not stood in for it.
    nodes = retrieve(db, embed_model, question, REP)
    r = resolver(db, clearance=REP, dates={"date_of_service": date(2026, 6, 1)})
    assert versions_in_context(r.postprocess_nodes(nodes), "POL-TF") == set()
    # A 2025 date of service: version 1 applied and is visible.
    nodes = retrieve(db, embed_model, question, REP)
    r = resolver(db, clearance=REP, dates={"date_of_service": date(2025, 6, 1)})
    assert versions_in_context(r.postprocess_nodes(nodes), "POL-TF") == {1}
    # Cleared for sensitive sources, the same 2026 date gets version 2.
    nodes = retrieve(db, embed_model, question, COMPLIANCE)
    r = resolver(db, clearance=COMPLIANCE, dates={"date_of_service": date(2026, 6, 1)})
    assert versions_in_context(r.postprocess_nodes(nodes), "POL-TF") == {2}
