"""The ask pipeline end to end on the demo corpus: CLI contract, walkthrough, traces, faults."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.contract.answer import AskRequest
from policydesk.pipeline import build_pipeline
from policydesk.proof.tracing import purge_traces
from policydesk.accounts.users import add_user, set_role
from tests.factories import TimeoutLLM

TODAY = date(2026, 11, 29)


@pytest.fixture(scope="module")
def users(demo_db):
    with Session(demo_db.owner) as s, s.begin():
        for name, role in (("p_rep", "rep"), ("p_sup", "supervisor"), ("p_comp", "compliance"), ("p_mover", "rep")):
            add_user(s, name=name, role=role, password="pipeline-pw-" + name)
    return True


@pytest.fixture(scope="module")
def pipeline(demo_db, settings, embed_model, users):
    return build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY)


def _trace(db, trace_id):
    with db.owner.connect() as conn:
        return conn.execute(text("SELECT * FROM traces WHERE id = :i"), {"i": trace_id}).mappings().one()


def test_timely_filing_without_date_is_90_days_version_2_with_recent_change(pipeline, demo_db):
    r = pipeline.ask(AskRequest("p_rep", "What is the timely filing limit?"))
    assert not r.refused and not r.abstained, r.abstain_reason
    assert "90 days" in r.answer
    tf = [c for c in r.citations if c.doc_id == "POL-TF"]
    assert tf and {c.version for c in tf} == {2}
    assert any(w.kind == "recent_change" and "2024-01-01" in w.message and "2025-12-31" in w.message for w in r.warnings)
    assert any(w.kind == "policy_text" for w in r.warnings)
    row = _trace(demo_db, r.trace_id)
    assert row["kind"] == "ask" and row["user_role"] == "rep" and row["permitted_levels"] == ["public", "internal"]
    assert row["answer_text"] == r.answer and row["chunk_ids"] == r.context_ids
    assert all(len(c["text_sha256"]) == 64 for c in row["citations"])
    assert row["dates"] == {"date_of_service": None, "denial_notice_date": None}


@pytest.mark.parametrize("question", [
    "What is the timely filing limit for submitting a claim?",
    "how long do we have to send in a claim",
    "timely filing?",
])
def test_plain_rephrasings_of_the_walkthrough_show_the_rule_in_force(pipeline, question):
    # The walkthrough holds however a rep words it: version 2 (90 days) today, version 1 (180 days)
    # for a 2025 date of service; the policy text shown holds the value.
    for dates, version, value in (({}, 2, "90 days"), ({"date_of_service": "2025-11-03"}, 1, "180 days")):
        r = pipeline.ask(AskRequest("p_rep", question, dates=dates))
        assert r.answerable, (question, dates, r.abstain_reason)
        assert {(c.doc_id, c.version) for c in r.citations} == {("POL-TF", version)}
        assert any(value in p.text for p in r.passages) and r.answer in " ".join(p.text for p in r.passages)


def test_an_over_long_question_from_a_python_entry_point_is_rejected_and_traced_without_its_text(
        pipeline, demo_db, settings):
    question = "What is the timely filing limit? " + "x" * settings.MAX_QUESTION_CHARS
    r = pipeline.ask(AskRequest("p_rep", question))
    assert r.error_code == "rejected" and not r.answerable
    assert "x" * 50 not in json.dumps(dict(_trace(demo_db, r.trace_id)), default=str)


def test_timely_filing_with_2025_date_of_service_is_180_days_version_1(pipeline):
    r = pipeline.ask(AskRequest("p_rep", "What is the timely filing limit?", dates={"date_of_service": "2025-11-03"}))
    assert "180 days" in r.answer and "90 days" not in r.answer
    assert {c.version for c in r.citations if c.doc_id == "POL-TF"} == {1}
    tf = next(c for c in r.citations if c.doc_id == "POL-TF")
    assert (tf.effective_from, tf.effective_to) == ("2024-01-01", "2025-12-31")
    assert not any(cid.startswith("POL-TF:v2") for cid in r.context_ids)


def test_topic_above_clearance_reads_like_a_question_the_sources_do_not_answer(pipeline, demo_db):
    # A restricted subject and a made-up one end the same way: nothing says a restricted document exists.
    # (tests/test_topic_oracle.py runs more pairs over the API, and keeps the one that still splits)
    gated = pipeline.ask(AskRequest("p_rep", "What is the SIU case scoring threshold?"))
    made_up = pipeline.ask(AskRequest("p_rep", "What is the XRQ case scoring threshold?"))
    for r in (gated, made_up):
        assert r.abstained and r.abstain_code == "not_answered" and not r.refused
        assert r.answer == "" and r.citations == []
    assert bool(gated.prompts) == bool(made_up.prompts)  # the same steps ran for both
    assert gated.abstain_reason.replace("SIU", "X") == made_up.abstain_reason.replace("XRQ", "X")
    for r in (gated, made_up):
        row = _trace(demo_db, r.trace_id)
        assert row["abstained"] and row["status"] == _trace(demo_db, made_up.trace_id)["status"]
        assert row["chunk_ids"] and not any(c.startswith("POL-SIU") for c in row["chunk_ids"])


def test_no_version_in_force_is_refused_in_code_naming_first_effective_date(pipeline):
    r = pipeline.ask(AskRequest("p_rep", "Is audio-only telehealth covered?", dates={"date_of_service": "2025-06-01"}))
    assert r.refused and r.refusal_code == "no_version_in_force"
    assert "Telehealth" in r.refusal_message and "2026-03-01" in r.refusal_message
    assert r.prompts == []


def test_prompt_injection_in_a_call_note_changes_nothing(pipeline):
    r = pipeline.ask(AskRequest("p_rep", "What did the provider office get told about the timely filing limit?"))
    assert "365" not in r.answer and "approved" not in r.answer.lower()
    if r.prompts:  # the injected text may be in context, but only inside a source block in the user turn
        assert all("Ignore previous instructions" not in p.split("<source")[0] for p in r.prompts)


def test_role_change_between_requests_uses_new_clearance(pipeline, demo_db):
    q = "What is the SIU case scoring threshold for a fraud referral?"
    first = pipeline.ask(AskRequest("p_mover", q))
    with Session(demo_db.owner) as s, s.begin():
        set_role(s, name="p_mover", role="supervisor")
    second = pipeline.ask(AskRequest("p_mover", q))
    assert first.abstain_code == "not_answered" and first.role == "rep"
    assert not second.refused and not second.abstained and second.role == "supervisor"
    assert any(cid.startswith("POL-SIU") for cid in second.context_ids)
    assert _trace(demo_db, second.trace_id)["user_role"] == "supervisor"


@pytest.mark.parametrize("dates,message", [
    ({"date_of_service": "2025-13-01"}, "is not a date"),
    ({"date_of_service": "1850-01-01"}, "outside 1900-2100"),
    ({"date_of_service": "2025-11-03", "denial_notice_date": "2025-10-01"}, "before the date of service"),
])
def test_bad_dates_get_a_clear_error_before_retrieval(pipeline, dates, message):
    r = pipeline.ask(AskRequest("p_rep", "What is the timely filing limit?", dates=dates))
    assert r.error and message in r.error and r.context_ids == [] and r.answer == ""


def test_unknown_user_gets_clear_error_and_no_retrieval(pipeline):
    r = pipeline.ask(AskRequest("nobody", "What is the timely filing limit?"))
    assert r.error == "unknown user 'nobody'" and r.context_ids == []


def test_provider_timeout_fails_closed_and_is_traced(demo_db, settings, embed_model, users):
    p = build_pipeline(demo_db, settings, embed_model=embed_model, llm=TimeoutLLM(), today=TODAY)
    r = p.ask(AskRequest("p_rep", "What is the timely filing limit?"))
    assert r.abstained and r.answer == "" and r.citations == []
    assert "did not respond in time" in r.abstain_reason or "provider" in r.abstain_reason.lower()
    row = _trace(demo_db, r.trace_id)
    assert row["abstained"] and len(row["attempts"]) >= 1


@pytest.mark.parametrize("claims", [
    [{"text": "Claims are due within 90 days.", "citations": ["POL-SIU:v1:scoring"]}],  # not in context
    [{"text": "Claims are due within 90 days.", "citations": []}],  # cites nothing
    [],  # answerable with no claims
], ids=["outside-context", "uncited", "no-claims"])
def test_a_badly_cited_draft_fails_closed_with_the_code_clients_see(demo_db, settings, embed_model, users, claims):
    """Citations are validated once, in the synthesizer: twice wrong, the answer fails closed
    (abstain code failed_closed), nothing is cited and post-flight never sees the draft."""
    from tests.test_synthesis import ScriptedLLM

    reply = json.dumps({"answerable": True, "answer": "Providers have 90 days.", "claims": claims,
                        "insufficient_evidence_reason": None})
    llm = ScriptedLLM(replies=[reply, reply])
    p = build_pipeline(demo_db, settings, embed_model=embed_model, llm=llm, today=TODAY)
    r = p.ask(AskRequest("p_rep", "What is the timely filing limit?"))
    body = r.to_json()
    assert body["abstained"] and body["abstain_code"] == "failed_closed" and not body["refused"], body
    assert body["answer"] == "" and body["citations"] == [] and len(llm.prompts) == 2
    assert "no answer was given" in body["abstain_reason"]


def test_what_changed_is_computed_from_both_versions(pipeline):
    r = pipeline.ask(AskRequest("p_rep", "What changed in the timely filing policy?"))
    assert "180 days" in r.answer and "90 days" in r.answer
    assert {c.version for c in r.citations if c.doc_id == "POL-TF"} == {1, 2}


def test_purge_deletes_old_traces_and_refuses_zero(pipeline, demo_db):
    r = pipeline.ask(AskRequest("p_rep", "What is the timely filing limit?"))
    with pytest.raises(ValueError):
        purge_traces(demo_db, older_than_days=0, actor="test")
    future = datetime.now(timezone.utc) + timedelta(days=400)
    n = purge_traces(demo_db, older_than_days=30, actor="test", now=future)
    assert n >= 1
    with demo_db.owner.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM traces WHERE id = :i"), {"i": r.trace_id}).scalar_one() == 0


def test_cli_ask_json_contract(settings, tmp_path):
    """The DESIGN.md contract, through the real console script on its own embedded Postgres."""
    env = dict(os.environ, POLICYDESK_DATA_DIR=str(tmp_path / "data"), POLICYDESK_TODAY="2026-11-29")
    env.pop("DATABASE_URL", None)
    bin_dir = os.path.dirname(sys.executable)
    cli = os.path.join(bin_dir, "policydesk")
    subprocess.run([cli, "demo", "--no-serve"], env=env, check=True, capture_output=True, timeout=300)
    out = subprocess.run([cli, "ask", "What is the timely filing limit?", "--as", "rep", "--json"],
                         env=env, check=True, capture_output=True, text=True, timeout=120)
    data = json.loads(out.stdout)
    for key in ("answer", "citations", "refused", "refusal_reason", "warnings", "degraded", "trace_id"):
        assert key in data
    assert "90 days" in data["answer"]
    c = data["citations"][0]
    assert {"chunk_id", "doc_id", "version", "effective_from", "effective_to", "text_sha256"} <= set(c)
    dated = json.loads(subprocess.run(
        [cli, "ask", "What is the timely filing limit?", "--as", "rep", "--date-of-service", "2025-11-03", "--json"],
        env=env, check=True, capture_output=True, text=True, timeout=120).stdout)
    assert "180 days" in dated["answer"] and {c["version"] for c in dated["citations"] if c["doc_id"] == "POL-TF"} == {1}
    bad = subprocess.run([cli, "ask", "x", "--as", "rep", "--date-of-service", "2025-02-30", "--json"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "not a date" in bad.stderr


def test_today_is_read_per_request_not_at_start(demo_db, settings, embed_model, users):
    # Regression: the pipeline captured today's date once, so a long-running server would keep
    # resolving versions for the day it started.
    moving = settings.model_copy(update={"TODAY": date(2025, 12, 31)})
    p = build_pipeline(demo_db, moving, embed_model=embed_model)
    before = p.ask(AskRequest("p_rep", "What is the timely filing limit?"))
    moving.TODAY = date(2026, 1, 2)
    after = p.ask(AskRequest("p_rep", "What is the timely filing limit?"))
    assert {c.version for c in before.citations if c.doc_id == "POL-TF"} == {1}
    assert {c.version for c in after.citations if c.doc_id == "POL-TF"} == {2}
