"""Redaction, the second layer (issue 15): what the gate lets through reaches no model, no retriever
and no trace row with an identifier in it."""

from __future__ import annotations

from datetime import date

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.pipeline import AskRequest, build_pipeline
from policydesk.screening.refusal import RefusalGate
from policydesk.accounts.users import add_user
from tests.stored_chunks import DecliningLLM

TODAY = date(2026, 11, 29)
# A format no built-in detector knows (letters only, no digits), declared as the plan's own.
NEW_FORMAT = r"ZQ-[A-Z]{4}"
MEMBER_CARD = "ZQ-KXWT"


@pytest.fixture(scope="module")
def user(demo_db):
    with Session(demo_db.owner) as s, s.begin():
        add_user(s, name="redact_rep", role="rep", password="redaction-pw-rep-1")
    return "redact_rep"


def _trace(db, trace_id):
    with db.owner.connect() as conn:
        return conn.execute(text("SELECT * FROM traces WHERE id = :i"), {"i": trace_id}).mappings().one()


def test_identifier_the_gate_misses_is_redacted_in_prompt_and_trace(demo_db, settings, embed_model, user):
    # The gate is made to miss (its identifier check switched off), and the identifier has a
    # format absent from every built-in detector, injected here as a plan format setting: the
    # redaction layer alone must keep it from the model and the trace.
    plan_settings = settings.model_copy(update={"PLAN_ID_PATTERNS": [NEW_FORMAT]})
    blind_gate = RefusalGate(plan_patterns=[NEW_FORMAT], detect_identifiers=False)
    pipeline = build_pipeline(demo_db, plan_settings, embed_model=embed_model, today=TODAY, gate=blind_gate,
                              llm=DecliningLLM())  # a model, so there is a prompt to check
    question = f"For the member with card {MEMBER_CARD}, what is the timely filing limit?"
    r = pipeline.ask(AskRequest(user, question))
    assert not r.refused, r.refusal_message
    assert r.prompts, "the question reached the model"
    assert all(MEMBER_CARD not in p for p in r.prompts)
    assert any("[ID]" in p for p in r.prompts)
    row = _trace(demo_db, r.trace_id)
    assert MEMBER_CARD not in row["question"] and "[ID]" in row["question"]
    assert row["answer"]["redactions"] == ["member_id"]
    assert any(w["kind"] == "redacted" for w in row["warnings"])
    assert MEMBER_CARD not in str(dict(row))


def test_uncued_identifier_passes_the_gate_but_not_into_prompt_or_trace(demo_db, settings, embed_model, user):
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY, llm=DecliningLLM())
    token = "7QX-4410-882B"
    r = pipeline.ask(AskRequest(user, f"what's the timely filing limit on {token}?"))
    assert not r.refused, r.refusal_message
    assert r.prompts and all(token not in p for p in r.prompts)
    row = _trace(demo_db, r.trace_id)
    assert token not in row["question"] and row["answer"]["redactions"] == ["id_shaped"]


@pytest.mark.parametrize("token", ["mbr_88213-q", "7719-2045-AA"])
def test_identifier_shapes_test_v5_let_through_the_gate_are_redacted(demo_db, settings, embed_model, user, token):
    # Two identifiers the gate passed on the frozen test_v5 split, in new sentences: an underscore
    # as separator (once missed by redaction too) and a number after a cue the rules do not list.
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY, llm=DecliningLLM())
    r = pipeline.ask(AskRequest(user, f"record locator {token} came up, how fast must an ER admission be reported?"))
    assert not r.refused, r.refusal_message
    assert r.prompts and all(token not in p for p in r.prompts)
    row = _trace(demo_db, r.trace_id)
    assert token not in str(dict(row)) and "[ID]" in row["question"]


def test_refused_identifier_question_is_stored_redacted(demo_db, settings, embed_model, user):
    pipeline = build_pipeline(demo_db, settings, embed_model=embed_model, today=TODAY)
    r = pipeline.ask(AskRequest(user, "The member's email is kim.lee77@example.org, how long to appeal?"))
    assert r.refused and r.refusal_code == "member_identifier"
    assert not r.prompts
    row = _trace(demo_db, r.trace_id)
    assert "kim.lee77" not in row["question"] and "[EMAIL]" in row["question"]
    assert row["answer"]["redactions"] == ["email"]
