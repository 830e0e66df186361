"""Issue 9, the five field failures and the operator signals: for each, what the user sees, what
the trace row records and what the log says. Runs against the real demo database."""

from __future__ import annotations

import logging
import uuid
from datetime import date

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.proof import disputes

from policydesk.ops import metrics
from policydesk.evals.leaks import ChunkCatalog, LeakMatrix
from policydesk.ingest import check_staleness, ingest_directory
from policydesk.contract.answer import AskRequest
from policydesk.pipeline import build_pipeline
from policydesk.storage.models import Trace
from policydesk.accounts.users import add_user, set_role
from policydesk.web.app import create_app
from tests.test_ingest import _corpus, _entries
from tests.test_retrieval import _BrokenEmbedding
from tests.test_synthesis import ScriptedLLM
from tests.web_helpers import PASSWORD, by_class, sign_in, text_of, token_of
from tests.factories import TimeoutLLM

TODAY = date(2026, 11, 29)
TIMELY = "What is the timely filing limit?"
PIPELINE_LOG = "policydesk.pipeline"


@pytest.fixture(scope="module")
def names(demo_db) -> dict[str, str]:
    tag = uuid.uuid4().hex[:6]
    out = {"rep": f"fault-rep-{tag}", "mover": f"fault-mover-{tag}"}
    with Session(demo_db.owner) as s, s.begin():
        for name in out.values():
            add_user(s, name=name, role="rep", password=PASSWORD)
    return out


def _client(settings, db, pipeline, name) -> TestClient:
    return sign_in(create_app(settings, db=db, pipeline=pipeline), name)


def _ask(client: TestClient, question: str):
    return client.post("/ask", data={"question": question, "csrf_token": token_of(client)})


def _latest_trace(db, user: str):
    with db.owner.connect() as conn:
        return conn.execute(text("SELECT * FROM traces WHERE user_name = :u ORDER BY created_at DESC LIMIT 1"),
                            {"u": user}).mappings().one()


def _count(name: str, **labels) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels or None) or 0.0


def _messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == PIPELINE_LOG]


def _events(caplog) -> list[str]:
    """The `event` field each pipeline line carries into the JSON logs (policydesk/ops/logs.py)."""
    return [r.event for r in caplog.records if r.name == PIPELINE_LOG and hasattr(r, "event")]


# -- 1. a source changed after ingest ------------------------------------------------------------

def test_source_edited_after_ingest_is_flagged_on_new_answers_and_in_disputes(make_db, embed_model, settings,
                                                                              tmp_path, caplog):
    db = make_db()
    root = _corpus(tmp_path, _entries("wiki/claims-desk-quick-reference.md"))
    ingest_directory(db, root, embed_model, settings)
    with Session(db.owner) as s, s.begin():
        add_user(s, name="stale-rep", role="rep", password=PASSWORD)
    pipeline = build_pipeline(db, settings, embed_model=embed_model, today=TODAY)
    question = "How long do providers have to get an initial claim to us?"
    first = pipeline.ask(AskRequest("stale-rep", question))
    assert first.citations and {c.doc_id for c in first.citations} == {"WIKI-CLAIMS"}
    assert not any(w.kind == "stale_source" for w in first.warnings)

    page = root / "wiki/claims-desk-quick-reference.md"
    page.write_text(page.read_text().replace("180 days", "120 days"))
    assert [(s.doc_id, s.reason) for s in check_staleness(db, root)] == [("WIKI-CLAIMS", "changed")]

    with caplog.at_level(logging.INFO, logger=PIPELINE_LOG):
        second = pipeline.ask(AskRequest("stale-rep", question))
    stale = [w for w in second.warnings if w.kind == "stale_source"]
    assert stale and "Claims Desk Quick Reference version 1 changed on disk" in stale[0].message
    row = _latest_trace(db, "stale-rep")
    assert row["id"] == second.trace_id and "stale_source" in {w["kind"] for w in row["warnings"]}
    assert any("changed since ingest: WIKI-CLAIMS v1" in m for m in _messages(caplog))

    # Re-indexed, the text under the first answer's citation no longer has the hash it was cited with.
    ingest_directory(db, root, embed_model, settings)
    with Session(db.owner) as s:
        trace = s.get(Trace, first.trace_id)
        s.expunge(trace)
    verdicts = disputes.check(db, trace, date(2026, 1, 5), reviewer="stale-reviewer")
    assert {v.kind for v in verdicts} == {disputes.EDITED}
    assert verdicts[0].text == "right version, but the section was edited since it was cited"
    cited = trace.citations[0]
    assert cited["text_sha256"] != disputes.sha256_text(disputes._current_text(
        db, cited["chunk_id"], pipeline._resolve_role(AskRequest("stale-rep", ""))[1]))
    audit = disputes.audit_entries(db, reviewer="stale-reviewer")[0]
    assert audit.action == "check" and audit.details["verdicts"][0]["verdict"] == "edited"


# -- 2. malformed model output ------------------------------------------------------------------

def test_malformed_model_output_retries_once_then_fails_closed(demo_db, settings, embed_model, names, caplog):
    llm = ScriptedLLM(replies=["Sure! The limit is 90 days.", "{\"answer\": \"still not the schema\"}"])
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, llm=llm, today=TODAY)
    client = _client(settings, demo_db, pipeline, names["rep"])
    before = _count("policydesk_fail_closed_answers_total")
    with caplog.at_level(logging.INFO, logger=PIPELINE_LOG):
        r = _ask(client, TIMELY)
    assert r.status_code == 200
    assert by_class(r.text, "status-no_answer") and not by_class(r.text, "answer-text")
    assert "did not return valid JSON matching the schema twice; no answer was given" in text_of(r.text, "answer-reason")
    assert len(llm.prompts) == 2  # one retry, then no more calls
    row = _latest_trace(demo_db, names["rep"])
    assert row["abstained"] and row["answer_text"] == "" and row["citations"] == []
    assert [a["raw"] for a in row["attempts"]] == ["Sure! The limit is 90 days.", "{\"answer\": \"still not the schema\"}"]
    assert all(a["error"] for a in row["attempts"]) and row["model"] == "scripted"
    assert any("failed closed after 2 attempt(s)" in m and str(row["id"]) in m for m in _messages(caplog))
    assert _events(caplog).count("fail_closed") == 1
    assert _count("policydesk_fail_closed_answers_total") == before + 1


# -- 3. provider timeout ------------------------------------------------------------------------

def test_provider_timeout_fails_closed_with_no_partial_answer(demo_db, settings, embed_model, names, caplog):
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, llm=TimeoutLLM(), today=TODAY)
    client = _client(settings, demo_db, pipeline, names["rep"])
    with caplog.at_level(logging.INFO, logger=PIPELINE_LOG):
        r = _ask(client, TIMELY)
    assert r.status_code == 200
    assert "The model provider did not respond in time; no answer was given." in text_of(r.text, "answer-reason")
    assert not by_class(r.text, "answer-text") and not by_class(r.text, "citations")
    row = _latest_trace(demo_db, names["rep"])
    assert row["abstained"] and not row["refused"] and row["status"] == "ok"
    assert row["answer_text"] == "" and row["citations"] == [] and row["answer"]["claims"] == []
    assert len(row["attempts"]) == 1 and row["attempts"][0]["error"].startswith("TimeoutError")
    assert row["chunk_ids"], "retrieval ran; only generation failed"
    assert any("failed closed after 1 attempt(s)" in m and "did not respond in time" in m for m in _messages(caplog))
    assert _events(caplog).count("fail_closed") == 1


# -- 4. a role change mid-session, over HTTP -----------------------------------------------------

def test_role_change_mid_session_ends_it_and_the_next_sign_in_retrieves_under_the_new_role(
        demo_db, settings, embed_model, names, caplog):
    # test_web.py pins the disputes gate; this pins retrieval. A role change ends the session at
    # once, so no ask runs under the old role after it, and the next sign-in reads the new one.
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY)
    app = create_app(settings, db=demo_db, pipeline=pipeline)
    client = sign_in(app, names["mover"])
    question = "What is the SIU case scoring threshold for a fraud referral?"
    assert by_class(_ask(client, question).text, "status-no_answer")  # a subject above the rep: not answered
    assert _latest_trace(demo_db, names["mover"])["user_role"] == "rep"
    token = token_of(client)

    with Session(demo_db.owner) as s, s.begin():
        set_role(s, name=names["mover"], role="supervisor")
    stale = client.post("/ask", data={"question": question, "csrf_token": token})
    assert stale.status_code == 303 and stale.headers["location"].startswith("/login")
    assert _latest_trace(demo_db, names["mover"])["user_role"] == "rep"  # nothing asked in between
    client = sign_in(app, names["mover"])
    with caplog.at_level(logging.INFO, logger=PIPELINE_LOG):
        r = _ask(client, question)
    assert r.status_code == 200 and by_class(r.text, "status-answered")
    row = _latest_trace(demo_db, names["mover"])
    assert row["user_role"] == "supervisor" and "restricted" in row["permitted_levels"]
    assert any(c.startswith("POL-SIU") for c in row["chunk_ids"])
    assert any(f"user={names['mover']} role=supervisor" in m for m in _messages(caplog))


# -- 5. an out-of-scope question ----------------------------------------------------------------

def test_out_of_scope_question_is_refused_without_a_model_call(demo_db, settings, embed_model, names, caplog):
    llm = ScriptedLLM(replies=[])  # any call would be recorded in llm.prompts
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, llm=llm, today=TODAY)
    client = _client(settings, demo_db, pipeline, names["rep"])
    before = _count("policydesk_refusals_total", reason="out_of_scope")
    with caplog.at_level(logging.INFO, logger=PIPELINE_LOG):
        r = _ask(client, "What's a good recipe for banana bread?")
    assert llm.prompts == []
    assert by_class(r.text, "status-refused")
    assert "PolicyDesk can't help with that question" in text_of(r.text, "answer-reason")
    row = _latest_trace(demo_db, names["rep"])
    assert row["refused"] and row["chunk_ids"] == [] and row["attempts"] == [] and row["model"] == ""
    assert row["answer"]["refusal_code"] == "out_of_scope"
    assert any(m.startswith("refused (out_of_scope)") for m in _messages(caplog))
    assert _events(caplog).count("refused") == 1
    assert _count("policydesk_refusals_total", reason="out_of_scope") == before + 1


# -- operator signals at /metrics ----------------------------------------------------------------

def test_degraded_answer_moves_its_counter_and_shows_on_metrics(demo_db, settings, names, caplog):
    pipeline = build_pipeline(demo_db, settings, embed_model=_BrokenEmbedding(), today=TODAY)
    client = _client(settings, demo_db, pipeline, names["rep"])
    before = _count("policydesk_degraded_answers_total")
    with caplog.at_level(logging.INFO, logger=PIPELINE_LOG):
        r = _ask(client, TIMELY)
    assert "Retrieval ran degraded" in text_of(r.text, "warnings")
    assert _latest_trace(demo_db, names["rep"])["degraded"] is True
    assert any("retrieval degraded" in m and "RESOURCE_EXHAUSTED" in m for m in _messages(caplog))
    assert _events(caplog).count("degraded") == 1
    assert _count("policydesk_degraded_answers_total") == before + 1
    assert f"policydesk_degraded_answers_total {before + 1}" in client.get("/metrics").text


class _FailsOnce:
    """The production classifier, except that its first call raises (a local-model hiccup)."""

    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, 0

    def classify(self, question, vector=None):
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("onnxruntime: session failed")
        return self.inner.classify(question, vector)


def test_a_classifier_failure_degrades_that_request_only(demo_db, settings, embed_model, names, caplog):
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY)
    flaky = pipeline.gate.intent = _FailsOnce(pipeline.gate.intent)
    user = names["rep"]
    before = _count("policydesk_intent_classifier_failures_total")
    with caplog.at_level(logging.INFO):
        first = pipeline.ask(AskRequest(user_name=user, question=TIMELY))
    assert first.degraded and first.answerable  # screened by the rules, answered, and says so
    assert [w.kind for w in first.warnings].count("degraded") == 1
    assert "screened by rules only" in next(w.message for w in first.warnings if w.kind == "degraded")
    assert _latest_trace(demo_db, user)["degraded"] is True
    assert _count("policydesk_intent_classifier_failures_total") == before + 1
    assert any(getattr(r, "event", None) == "degraded" and "intent classifier failed" in r.getMessage()
               for r in caplog.records)
    second = pipeline.ask(AskRequest(user_name=user, question=TIMELY))
    assert flaky.calls == 2 and pipeline.gate.intent is flaky  # the next request tried the classifier again
    assert not second.degraded and "degraded" not in [w.kind for w in second.warnings]
    assert _latest_trace(demo_db, user)["degraded"] is False
    assert _count("policydesk_intent_classifier_failures_total") == before + 1
    assert second.answer == first.answer


def test_rules_still_refuse_a_claim_action_while_the_classifier_fails(demo_db, settings, embed_model, names):
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY)
    pipeline.gate.intent = _FailsOnce(pipeline.gate.intent)
    result = pipeline.ask(AskRequest(user_name=names["rep"], question="Please approve this claim."))
    assert result.refused and result.refusal_code == "claim_action" and result.degraded


@pytest.mark.parametrize("question,reason", [
    ("Member CVM12345678 wants to know the timely filing limit.", "member_identifier"),
    ("Please approve this claim for the provider.", "claim_action"),
    ("What's a good recipe for banana bread?", "out_of_scope"),
])
def test_refusals_are_counted_by_reason(demo_db, settings, embed_model, names, question, reason):
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY)
    before = _count("policydesk_refusals_total", reason=reason)
    result = pipeline.ask(AskRequest(names["rep"], question))
    assert result.refused and result.refusal_code == reason
    assert _count("policydesk_refusals_total", reason=reason) == before + 1
    body = TestClient(create_app(settings, db=demo_db, pipeline=pipeline)).get("/metrics").text
    assert f'policydesk_refusals_total{{reason="{reason}"}} {before + 1}' in body


def test_fail_closed_counter_shows_on_metrics(demo_db, settings, embed_model, names):
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model,
                              llm=ScriptedLLM(replies=["nope", "nope"]), today=TODAY)
    before = _count("policydesk_fail_closed_answers_total")
    assert pipeline.ask(AskRequest(names["rep"], TIMELY)).abstained
    body = TestClient(create_app(settings, db=demo_db, pipeline=pipeline)).get("/metrics").text
    assert f"policydesk_fail_closed_answers_total {before + 1}" in body


def test_planted_leak_moves_the_leak_failure_counter(demo_db, settings, embed_model):
    catalog = ChunkCatalog(demo_db)
    siu = "POL-SIU:v1:case-scoring-threshold"
    before = _count("policydesk_leak_test_failures_total")
    LeakMatrix().record(catalog, "supervisor", "clean", [siu], [catalog.chunks[siu].text], "", [siu])
    assert _count("policydesk_leak_test_failures_total") == before  # supervisor may read it: no failure
    LeakMatrix().record(catalog, "rep", "planted", [siu], [catalog.chunks[siu].text], "", [siu])
    assert _count("policydesk_leak_test_failures_total") == before + 1
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY)
    body = TestClient(create_app(settings, db=demo_db, pipeline=pipeline)).get("/metrics").text
    assert f"policydesk_leak_test_failures_total {before + 1}" in body
