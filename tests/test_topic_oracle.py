"""The topic gate is no oracle: over the JSON API, a question on a subject only sources above the
caller's clearance cover gets exactly what a question on a made-up subject gets: the same code and
message, no citations, the same steps run (retrieval and the answerer), the same trace shape."""

from __future__ import annotations

import uuid

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from policydesk.accounts.users import add_user
from policydesk.web.app import create_app
from tests.api_helpers import bearer, make_token
from tests.web_helpers import PASSWORD

# (role, question on a subject above the role, the same question on a subject nobody's sources cover,
#  the word that differs)
PAIRS = [
    ("rep", "What does the fraud referral procedure say?", "What does the fitness referral procedure say?",
     ("fraud", "fitness")),
    ("rep", "What is the SIU case scoring threshold?", "What is the XRQ case scoring threshold?", ("SIU", "XRQ")),
    ("rep", "How quickly must member complaints be reported to the state?",
     "How quickly must member compliments be reported to the state?", ("complaints", "compliments")),
    ("supervisor", "What is the dispute review procedure?", "What is the parade review procedure?",
     ("dispute", "parade")),
]
# What the caller sees, and what the trace row holds, that must not tell the two apart (the versions
# applied name what retrieval read for these words, all of it within the caller's clearance).
SHOWN = ("answer", "answerable", "claims", "citations", "refused", "refusal_reason", "refusal_code", "abstained",
         "abstain_code", "degraded", "dates", "line_of_business", "model")
TRACE_SHAPE = ("status", "refused", "abstained", "model", "degraded")


@pytest.fixture(scope="module")
def tokens(demo_db) -> dict[str, str]:
    tag = uuid.uuid4().hex[:6]
    with Session(demo_db.owner) as session, session.begin():
        for role in ("rep", "supervisor"):
            add_user(session, name=f"oracle-{role}-{tag}", role=role, password=PASSWORD)
    return {role: make_token(demo_db, f"oracle-{role}-{tag}") for role in ("rep", "supervisor")}


@pytest.fixture(scope="module")
def api(settings, demo_db, pipeline) -> TestClient:
    return TestClient(create_app(settings.model_copy(update={"API_RATE_LIMIT": 10_000}), db=demo_db, pipeline=pipeline))


def _trace(db, trace_id: str) -> dict:
    with db.owner.connect() as conn:
        return dict(conn.execute(text("SELECT * FROM traces WHERE id = :i"), {"i": trace_id}).mappings().one())


@pytest.mark.parametrize("role,gated_q,made_up_q,words", PAIRS)
def test_restricted_subject_and_made_up_subject_read_alike(api, tokens, demo_db, role, gated_q, made_up_q, words):
    gated, made_up = (api.post("/api/v1/ask", json={"question": q}, headers=bearer(tokens[role])).json()
                      for q in (gated_q, made_up_q))
    assert gated["abstain_code"] == made_up["abstain_code"] == "not_answered", (gated, made_up)
    assert {k: gated[k] for k in SHOWN} == {k: made_up[k] for k in SHOWN}
    assert gated["abstain_reason"].replace(words[0], "*") == made_up["abstain_reason"].replace(words[1], "*")
    assert [w["kind"] for w in gated["warnings"]] == [w["kind"] for w in made_up["warnings"]]
    rows = [_trace(demo_db, r["trace_id"]) for r in (gated, made_up)]
    assert [{k: row[k] for k in TRACE_SHAPE} for row in rows] == [{k: rows[1][k] for k in TRACE_SHAPE}] * 2
    # the same steps ran for both: retrieval read the caller's sources and the answerer was asked
    assert all(row["chunk_ids"] for row in rows)
    assert [bool(row["attempts"]) for row in rows] == [bool(rows[1]["attempts"])] * 2


def test_the_gate_still_fires_for_the_restricted_subject(demo_db, pipeline):
    # Without this the pairs above would pass on a gate that never fires.
    from policydesk.accounts.access import clearance_for

    assert pipeline.gate.screen("What does the fraud referral procedure say?", clearance_for("rep")).topic_gated
    assert not pipeline.gate.screen("What does the fitness referral procedure say?", clearance_for("rep")).topic_gated
