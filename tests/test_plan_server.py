"""A model on the plan's own server: PolicyDesk against a small OpenAI-compatible HTTP server this
test starts on localhost with scripted replies, through the whole pipeline (real database)."""

from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from policydesk.contract.answer import AskRequest
from policydesk.pipeline import build_pipeline
from policydesk.providers import llm_for
from policydesk.providers.openai_compatible import PlanServerLLM
from tests.conftest import WEB_TODAY
from tests.stored_chunks import V2_ID, V2_QUOTE

QUESTION = "What is the timely filing limit for submitting a claim?"


def answer(text: str, quote: str = V2_QUOTE, chunk_id: str = V2_ID) -> str:
    return json.dumps({"answers": "yes", "answer": text,
                       "claims": [{"text": text, "quotes": [{"chunk_id": chunk_id, "text": quote}]}]})


class Script:
    """Replies served in order; each request's JSON body is kept."""

    def __init__(self) -> None:
        self.replies: list = []
        self.requests: list[dict] = []


def _handler(script: Script):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            script.requests.append(body)
            reply = script.replies.pop(0) if script.replies else "{}"
            if isinstance(reply, float):  # a reply that comes too late
                time.sleep(reply)
                reply = answer("Too late.")
            payload = json.dumps({
                "id": "cmpl-1", "object": "chat.completion", "created": 0, "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": reply}}],
                "usage": {"prompt_tokens": 900, "completion_tokens": 60, "total_tokens": 960}}).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


@contextmanager
def scripted_plan_server():
    """A plan's OpenAI-compatible server on a free local port, answering from its `Script`:
    yields (script, base URL)."""
    script = Script()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield script, f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()


@pytest.fixture(scope="module")
def plan_server():
    with scripted_plan_server() as served:
        yield served


@pytest.fixture
def ask(plan_server, demo_db, settings, embed_model):
    script, url = plan_server
    script.replies.clear()
    script.requests.clear()
    configured = settings.model_copy(update={"OPENAI_COMPATIBLE_BASE_URL": url, "OPENAI_COMPATIBLE_MODEL": "plan-llm",
                                             "PROVIDER_TIMEOUT_SECONDS": 2.0, "PROVIDER_MAX_RETRIES": 0})
    llm = llm_for(configured)
    assert isinstance(llm, PlanServerLLM)
    pipeline = build_pipeline(demo_db, configured, embed_model=embed_model, llm=llm, today=WEB_TODAY)

    def run(*replies, question: str = QUESTION):
        script.replies[:] = list(replies)
        return pipeline.ask(AskRequest(user_name="rep", question=question)), script.requests

    return run


@pytest.fixture(scope="module", autouse=True)
def _rep(demo_db):
    from sqlalchemy.orm import Session

    from policydesk.accounts.users import add_user, get_active_user

    with Session(demo_db.owner) as session, session.begin():
        if get_active_user(session, name="rep") is None:
            add_user(session, name="rep", role="rep", password="not-used-here-123")


def test_a_valid_answer_is_shown_with_its_citation_and_the_schema_was_sent(ask):
    result, requests = ask(answer("Timely Filing of Claims version 2: 90 days from the date of service."))
    assert result.answerable and "90 days" in result.answer
    assert [c.chunk_id for c in result.citations] == [V2_ID]
    assert result.claims[0].quotes[0].text == V2_QUOTE
    body = requests[0]
    assert body["model"] == "plan-llm" and body["response_format"]["type"] == "json_schema"
    assert body["messages"][0]["role"] == "system" and V2_QUOTE not in body["messages"][0]["content"]


def test_a_quote_not_in_the_chunk_retries_then_fails_closed(ask):
    bad = answer("90 days.", quote="Claims must be filed within 90 days, no exceptions.")
    result, requests = ask(bad, bad)
    assert not result.answerable and result.abstain_code == "failed_closed" and len(requests) == 2
    assert "not in source block" in requests[1]["messages"][-1]["content"]


def test_a_value_not_in_any_quote_retries_and_the_corrected_draft_is_shown(ask):
    result, requests = ask(answer("You have 120 days."), answer("You have 90 days."))
    assert result.answerable and "90 days" in result.answer and len(requests) == 2
    assert "120" in requests[1]["messages"][-1]["content"]


def test_a_citation_outside_context_fails_closed(ask):
    # CN-03 is a restricted, sensitive call note: never in a rep's context, whatever the model says.
    bad = answer("90 days.", chunk_id="CN-03:v1:call-note-cn-03-difficulty-finding-a-therapy-appointment")
    result, requests = ask(bad, bad)
    assert not result.answerable and result.abstain_code == "failed_closed"
    assert "CN-03" not in result.answer and result.citations == []


def test_malformed_json_retries_then_fails_closed(ask):
    result, requests = ask("The limit is 90 days.", "{not json")
    assert not result.answerable and result.abstain_code == "failed_closed" and len(requests) == 2


def test_a_timeout_fails_closed_at_once(ask):
    result, requests = ask(5.0)
    assert not result.answerable and result.abstain_code == "failed_closed"
    assert "did not respond in time" in result.abstain_reason and len(requests) == 1


def test_sources_dont_answer_is_not_answered(ask):
    result, _ = ask(json.dumps({"answers": "no", "reason": "The sources do not cover this."}))
    assert not result.answerable and result.abstain_code == "not_answered" and result.citations == []


def test_a_conditional_answer_carries_its_condition(ask):
    reply = json.dumps({"answers": "conditional", "condition": "for an initial claim", "answer": "90 days.",
                        "claims": [{"text": "90 days.", "quotes": [{"chunk_id": V2_ID, "text": V2_QUOTE}]}]})
    result, _ = ask(reply)
    assert result.answerable and result.condition == "for an initial claim"
    assert result.to_json()["condition"] == "for an initial claim"
