"""Every source is date-checked (issue 16 item 1): wiki pages and call notes too, with and
without an entered date, and a policy with no version in force is refused or dropped with a
visible warning, never stood in for by a note."""

from __future__ import annotations

import asyncio
from datetime import date

import pytest
from sqlalchemy.orm import Session

from policydesk.accounts.access import clearance_for
from policydesk.contract.answer import AskRequest
from policydesk.pipeline import build_pipeline
from policydesk.postprocessors import VersionResolver
from policydesk.postprocessors.versions import doc_id_of
from policydesk.accounts.users import add_user
from policydesk.versions import NoVersionInForce, VersionLookup
from policydesk.retrievers import HybridRetriever, chunk_vector_store
from tests.findings import Remembering

REP = clearance_for("rep")
TELEHEALTH = "What is the copay for a telehealth visit?"
WIKI_TH = "WIKI-TH"


@pytest.fixture(scope="module")
def rep(demo_db):
    with Session(demo_db.owner) as s, s.begin():
        add_user(s, name="sd_rep", role="rep", password="source-dates-pw")
    return "sd_rep"


def _pipeline(demo_db, settings, embed_model, today):
    return build_pipeline(demo_db, settings, embed_model=embed_model, today=today)


def _cited_docs(result) -> set[str]:
    return {c.doc_id for c in result.citations}


def test_not_yet_in_force_wiki_never_answers_without_a_date(demo_db, settings, embed_model, rep):
    # Issue 16 probe: today 2026-01-15, no date: answered "0 dollar copay" from the Telehealth FAQ
    # (in force from 2026-03-05), no warning. POL-TH itself only takes effect 2026-03-01.
    r = _pipeline(demo_db, settings, embed_model, date(2026, 1, 15)).ask(AskRequest(rep, TELEHEALTH))
    assert r.refused and r.refusal_code == "no_version_in_force", (r.answer, r.abstain_reason, r.refusal_message)
    assert "Telehealth Services (POL-TH)" in r.refusal_message and "2026-03-01" in r.refusal_message
    assert "in force today (2026-01-15)" in r.refusal_message
    assert not r.answer or "0 dollar" not in r.answer
    assert WIKI_TH not in _cited_docs(r)


def test_not_yet_in_force_wiki_never_answers_with_a_date(demo_db, settings, embed_model, rep):
    # Issue 16 probe: date of service 2025-06-01: POL-TH was dropped but its wiki page stayed and answered.
    r = _pipeline(demo_db, settings, embed_model, date(2026, 11, 29)).ask(
        AskRequest(rep, TELEHEALTH, dates={"date_of_service": "2025-06-01"}))
    assert r.refused and r.refusal_code == "no_version_in_force", (r.answer, r.abstain_reason, r.refusal_message)
    assert "(POL-TH)" in r.refusal_message and "2026-03-01" in r.refusal_message
    assert WIKI_TH not in _cited_docs(r) and WIKI_TH not in " ".join(r.context_ids)


def test_once_both_are_in_force_the_wiki_may_answer(demo_db, settings, embed_model, rep):
    # The positive control: the same question after both took effect is answered, so the
    # refusals above are about dates, not about the question.
    r = _pipeline(demo_db, settings, embed_model, date(2026, 11, 29)).ask(AskRequest(rep, TELEHEALTH))
    assert not r.refused and not r.abstained, r.abstain_reason
    assert "POL-TH" in _cited_docs(r) | {doc for doc in (i.split(":")[0] for i in r.context_ids)}


def _retrieve(db, embed_model, question):
    return HybridRetriever(chunk_vector_store(db), embed_model, clearance=REP).retrieve(question)


def _resolver(db, today, dates=None):
    return Remembering(VersionResolver(lookup=VersionLookup(db), clearance=REP, dates=dates or {}, today=today))


def test_wiki_written_after_the_date_is_left_out_while_its_policy_answers(demo_db, embed_model):
    # 2026-03-02: POL-TH (from 2026-03-01) applies, the Telehealth FAQ (from 2026-03-05) did not exist yet.
    nodes = _retrieve(demo_db, embed_model, TELEHEALTH)
    assert WIKI_TH in {doc_id_of(n.node) for n in nodes}
    r = _resolver(demo_db, date(2026, 11, 29), {"date_of_service": date(2026, 3, 2)})
    out = r.postprocess_nodes(nodes)
    docs = {doc_id_of(n.node) for n in out}
    assert "POL-TH" in docs and WIKI_TH not in docs
    assert any(d["chunk_id"].startswith(WIKI_TH) and "not in force on 2026-03-02" in d["reason"] for d in r.report.dropped)
    # The same without a date, today 2026-03-02.
    out = _resolver(demo_db, date(2026, 3, 2)).postprocess_nodes(_retrieve(demo_db, embed_model, TELEHEALTH))
    assert WIKI_TH not in {doc_id_of(n.node) for n in out}


def test_note_ranked_first_for_a_policy_not_in_force_refuses_naming_the_policy(demo_db, embed_model):
    # Only the wiki page in context (its policy not retrieved at all): the page is dropped and
    # POL-TH is held back for the pipeline to refuse, never answered from the page. Sync and async.
    wiki = [n for n in _retrieve(demo_db, embed_model, TELEHEALTH) if doc_id_of(n.node) == WIKI_TH]
    assert wiki
    r = _resolver(demo_db, date(2026, 11, 29), {"date_of_service": date(2025, 6, 1)})
    assert r.postprocess_nodes(list(wiki)) == []
    held = r.report.held_back
    assert isinstance(held, NoVersionInForce)
    assert held.doc_id == "POL-TH" and held.first_effective_from == date(2026, 3, 1)
    r = _resolver(demo_db, date(2026, 1, 15))
    assert asyncio.run(r.apostprocess_nodes(list(wiki))) == [] and r.report.held_back.doc_id == "POL-TH"


def test_lower_ranked_policy_and_its_notes_dropped_with_a_visible_warning(demo_db, embed_model):
    # Issue 16: NoVersionInForce fired only for the top-ranked policy; the others vanished with
    # no word. A timely filing question on 2025-06-01 with POL-TH's chunks and wiki page below it.
    tf = _retrieve(demo_db, embed_model, "What is the timely filing limit for an initial claim?")
    th = [n for n in _retrieve(demo_db, embed_model, TELEHEALTH) if doc_id_of(n.node) in ("POL-TH", WIKI_TH)]
    assert {doc_id_of(n.node) for n in th} == {"POL-TH", WIKI_TH}
    r = _resolver(demo_db, date(2026, 11, 29), {"date_of_service": date(2025, 6, 1)})
    out = r.postprocess_nodes(tf + th)
    docs = {doc_id_of(n.node) for n in out}
    assert "POL-TF" in docs and not docs & {"POL-TH", WIKI_TH}
    left_out = [w.message for w in r.report.warnings if w.kind == "not_in_force"]
    assert left_out == ["Telehealth Services (POL-TH) was left out of this answer: no version was in force on "
                        "2025-06-01 (date of service); its first version took effect 2026-03-01."]


def test_notes_in_force_with_their_policy_pass_through(demo_db, embed_model):
    # 2026-06-01: the Claims Desk page (from 2025-03-10) and CN-01 (from 2026-01-14) both stand.
    nodes = _retrieve(demo_db, embed_model, "What is the timely filing limit for an initial claim?")
    out = _resolver(demo_db, date(2026, 11, 29), {"date_of_service": date(2026, 6, 1)}).postprocess_nodes(nodes)
    notes_in = [n.node.node_id for n in nodes if n.node.metadata["source_type"] != "policy"]
    notes_out = [n.node.node_id for n in out if n.node.metadata["source_type"] != "policy"]
    assert notes_out == notes_in and "WIKI-CLAIMS:v1:timely-filing" in notes_out
