"""Gemini wiring through the real GoogleGenAI and google-genai request code, with HTTP stubbed.

The stub is an httpx transport handed to google-genai through `HttpOptions.httpx_client`,
so every request body here is the one that would go over the wire. No network.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from llama_index.core.schema import NodeWithScore

from policydesk.config import Settings
from policydesk.ingest.chunks import make_node
from policydesk.providers import llm_for
from policydesk.providers.gemini import RetryingGoogleGenAI, gemini_llm
from policydesk.synthesis.synthesizer import TIMEOUT_REASON, CitedAnswerSynthesizer
from policydesk.proof.tracing import cost_usd

from tests.stored_chunks import V2_ID, V2_QUOTE as V2_TEXT, rep_chunks
QUESTION = "How long do providers have to file a claim?"
GOOD = json.dumps({
    "answers": "yes",
    "answer": "Timely Filing of Claims, version 2: providers have 90 days from the date of service.",
    "claims": [{"text": V2_TEXT, "quotes": [{"chunk_id": V2_ID, "text": V2_TEXT}]}],
})
CHUNKS = None


@pytest.fixture(autouse=True)
def _stored_chunks(demo_db):
    global CHUNKS
    CHUNKS = rep_chunks(demo_db)


def v2() -> NodeWithScore:
    meta = {
        "chunk_id": V2_ID, "title": "Timely Filing of Claims", "version": 2, "section": "Filing Limit",
        "section_id": "filing-limit", "source_type": "policy", "effective_from": "2026-01-01",
        "effective_to": "9999-12-31", "access_level": "all_staff", "sensitive": False, "text_sha256": "x",
    }
    return NodeWithScore(node=make_node("POL-TF", V2_TEXT, meta), score=1.0)


def gemini_reply(text: str, prompt_tokens=1200, candidates=250, thoughts=50) -> httpx.Response:
    return httpx.Response(200, json={
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": prompt_tokens, "candidatesTokenCount": candidates,
                          "thoughtsTokenCount": thoughts, "totalTokenCount": prompt_tokens + candidates + thoughts},
    })


def quota_exhausted() -> httpx.Response:
    return httpx.Response(429, json={"error": {"code": 429, "message": "Resource has been exhausted",
                                               "status": "RESOURCE_EXHAUSTED"}})


class StubGemini:
    """Scripted HTTP replies (or exceptions to raise); records every request."""

    def __init__(self, *script):
        self.script = list(script)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.script.pop(0)
        if isinstance(step, type) and issubclass(step, Exception):
            raise step("stubbed transport failure", request=request)
        return step

    def body(self, i: int = 0) -> dict:
        return json.loads(self.requests[i].content)


@pytest.fixture
def gsettings(monkeypatch) -> Settings:
    for var in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(var, raising=False)
    return Settings(GEMINI_API_KEY="test-key", PROVIDER_TIMEOUT_SECONDS=7, PROVIDER_MAX_RETRIES=2,
                    ENVIRONMENT="test", _env_file=None)


def synthesizer(gsettings: Settings, stub: StubGemini) -> CitedAnswerSynthesizer:
    llm = gemini_llm(gsettings, httpx_client=httpx.Client(transport=httpx.MockTransport(stub)), backoff_seconds=0)
    return CitedAnswerSynthesizer(llm=llm, chunks=CHUNKS)


def test_request_asks_for_schema_json_and_keeps_sources_out_of_system_instruction(gsettings):
    stub = StubGemini(gemini_reply(GOOD))
    notes = ["Version resolved for date of service 2026-02-01"]
    outcome = synthesizer(gsettings, stub).synthesize_outcome(QUESTION, [v2()], notes)
    assert outcome.answer is not None and outcome.model == "gemini-2.5-flash"
    assert len(stub.requests) == 1
    request = stub.requests[0]
    assert request.url.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert request.headers["x-goog-api-key"] == "test-key"
    body = stub.body()
    config = body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert set(config["responseSchema"]["properties"]) == {
        "answers", "condition", "answer", "claims", "reason"
    }
    system_text = " ".join(p["text"] for p in body["systemInstruction"]["parts"])
    assert V2_TEXT not in system_text and V2_ID not in system_text
    assert [c["role"] for c in body["contents"]] == ["user"]
    user_text = body["contents"][0]["parts"][0]["text"]
    assert f'<source id="{V2_ID}"' in user_text and V2_TEXT in user_text and QUESTION in user_text


def test_timeout_setting_reaches_each_request(gsettings):
    stub = StubGemini(gemini_reply(GOOD))
    synthesizer(gsettings, stub).synthesize_outcome(QUESTION, [v2()])
    request = stub.requests[0]
    assert request.extensions["timeout"]["read"] == 7.0
    assert request.headers["x-server-timeout"] == "7"


def test_malformed_reply_takes_the_retry_path_then_fails_closed(gsettings):
    stub = StubGemini(gemini_reply("The limit is 90 days."), gemini_reply("still not json"))
    outcome = synthesizer(gsettings, stub).synthesize_outcome(QUESTION, [v2()])
    assert len(stub.requests) == 2 and len(outcome.attempts) == 2
    assert outcome.answer is None
    assert outcome.abstain_reason == (
        "The model did not return valid JSON matching the schema twice; no answer was given."
    )
    retry_contents = stub.body(1)["contents"]
    assert [c["role"] for c in retry_contents] == ["user", "model", "user"]
    assert "JSON" in retry_contents[2]["parts"][0]["text"]
    assert retry_contents[1]["parts"][0]["text"] == "The limit is 90 days."


def test_read_timeout_fails_closed_at_once(gsettings):
    stub = StubGemini(httpx.ReadTimeout, gemini_reply(GOOD))
    outcome = synthesizer(gsettings, stub).synthesize_outcome(QUESTION, [v2()])
    assert outcome.answer is None and outcome.abstain_reason == TIMEOUT_REASON
    assert len(stub.requests) == 1 and outcome.attempts[0]["error"].startswith("ReadTimeout")


def test_quota_error_is_retried_with_backoff_then_answers(gsettings):
    # Regression: GoogleGenAI's own retry compares ClientError.status ("RESOURCE_EXHAUSTED")
    # with 429, so it never retried quota errors.
    stub = StubGemini(quota_exhausted(), gemini_reply(GOOD))
    outcome = synthesizer(gsettings, stub).synthesize_outcome(QUESTION, [v2()])
    assert outcome.answer is not None and len(stub.requests) == 2


def test_quota_still_exhausted_after_retries_fails_closed(gsettings):
    stub = StubGemini(*(quota_exhausted() for _ in range(gsettings.PROVIDER_MAX_RETRIES + 1)))
    outcome = synthesizer(gsettings, stub).synthesize_outcome(QUESTION, [v2()])
    assert len(stub.requests) == gsettings.PROVIDER_MAX_RETRIES + 1
    assert outcome.answer is None
    assert outcome.abstain_reason == (
        "The model provider returned an error (ClientError 429); no answer was given."
    )


def test_cost_is_computed_from_usage_metadata(gsettings):
    stub = StubGemini(gemini_reply(GOOD, prompt_tokens=1200, candidates=250, thoughts=50))
    outcome = synthesizer(gsettings, stub).synthesize_outcome(QUESTION, [v2()])
    assert (outcome.tokens_in, outcome.tokens_out) == (1200, 300)  # thinking tokens bill as output
    assert cost_usd(outcome.tokens_in, outcome.tokens_out, gsettings) == pytest.approx(
        1200 * 0.30 / 1e6 + 300 * 2.50 / 1e6
    )
    priced = gsettings.model_copy(update={"PRICE_INPUT_PER_MTOK": 1.0, "PRICE_OUTPUT_PER_MTOK": 10.0})
    assert cost_usd(1_000_000, 100_000, priced) == pytest.approx(2.0)


def test_async_path_uses_the_same_wiring(gsettings):
    stub = StubGemini(gemini_reply("nope"), gemini_reply(GOOD))

    async def handler(request: httpx.Request) -> httpx.Response:
        await request.aread()
        return stub(request)

    llm = gemini_llm(gsettings, httpx_async_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)),
                     backoff_seconds=0)
    outcome = asyncio.run(CitedAnswerSynthesizer(llm=llm, chunks=CHUNKS).asynthesize_outcome(QUESTION, [v2()]))
    assert outcome.answer is not None and len(stub.requests) == 2
    assert stub.body(0)["generationConfig"]["responseMimeType"] == "application/json"


def test_llm_for_with_a_key_builds_gemini_without_calling_the_network(gsettings):
    llm = llm_for(gsettings)  # constructing must not fetch model metadata
    assert isinstance(llm, RetryingGoogleGenAI)
    assert llm.max_retries == 0 and llm.quota_retries == gsettings.PROVIDER_MAX_RETRIES


def test_providers_say_what_they_are_and_a_model_name_decides_nothing(gsettings):
    from llama_index.core.llms import MockLLM

    from policydesk.providers import is_priced, provider_kind
    from policydesk.proof.tracing import request_cost

    gemini = llm_for(gsettings)
    assert (provider_kind(gemini), is_priced(gemini)) == ("gemini", True)
    assert llm_for(gsettings.model_copy(update={"GEMINI_API_KEY": None})) is None  # no model: the offline reader

    class NamedLikeBoth(MockLLM):  # an extension's LLM whose name happens to read like ours
        @property
        def metadata(self):
            return super().metadata.model_copy(update={"model_name": "gemini-extractive-offline"})

    lookalike = NamedLikeBoth()
    assert lookalike.metadata.model_name == "gemini-extractive-offline"
    assert (provider_kind(lookalike), is_priced(lookalike)) == ("other", False)
    assert request_cost(is_priced(lookalike), 1200, 300, gsettings) == 0.0
    assert request_cost(is_priced(gemini), 1200, 300, gsettings) == pytest.approx(cost_usd(1200, 300, gsettings))
