"""A model on the plan's own servers, through LlamaIndex's OpenAI-compatible integration.

A plan that keeps text in-house runs vLLM, Ollama, llama.cpp's server or TGI behind OpenAI's
chat completions API; `OPENAI_COMPATIBLE_BASE_URL` points PolicyDesk at it. The synthesizer
sends it the same prompt as Gemini and checks its reply the same way (quotes in the cited
chunks, values in the quotes, citations readable by the caller). Each request is bounded by
`PROVIDER_TIMEOUT_SECONDS`; a timeout fails closed at once (no client-side retry), and only
connection errors and 429/5xx are retried, `PROVIDER_MAX_RETRIES` times, by the OpenAI client.
"""

from __future__ import annotations

from typing import Any

from llama_index.llms.openai_like import OpenAILike

from policydesk.config import Settings
from policydesk.providers.kinds import OPENAI_COMPATIBLE
from policydesk.synthesis.schema import ModelAnswer

MAX_OUTPUT_TOKENS = 4096


class PlanServerLLM(OpenAILike):
    """OpenAILike that says what kind of provider it is (answers from it are not billed)."""

    @property
    def provider_kind(self) -> str:
        return OPENAI_COMPATIBLE


def response_format() -> dict[str, Any]:
    return {"type": "json_schema",
            "json_schema": {"name": "ModelAnswer", "schema": ModelAnswer.model_json_schema(), "strict": False}}


def openai_compatible_llm(settings: Settings, *, http_client: Any = None) -> PlanServerLLM:
    """`http_client`: an `httpx.Client` to send through (tests, a proxy, a private CA)."""
    if not settings.OPENAI_COMPATIBLE_BASE_URL:
        raise ValueError("OPENAI_COMPATIBLE_BASE_URL is not set")
    key = settings.OPENAI_COMPATIBLE_API_KEY
    extra = {"response_format": response_format()} if settings.OPENAI_COMPATIBLE_JSON_SCHEMA else {}
    return PlanServerLLM(
        model=settings.OPENAI_COMPATIBLE_MODEL,
        api_base=settings.OPENAI_COMPATIBLE_BASE_URL,
        api_key=key.get_secret_value() if key else "not-needed",
        temperature=0.0,
        max_tokens=MAX_OUTPUT_TOKENS,
        context_window=settings.OPENAI_COMPATIBLE_CONTEXT_WINDOW,
        is_chat_model=True,
        is_function_calling_model=False,
        timeout=settings.PROVIDER_TIMEOUT_SECONDS,
        max_retries=settings.PROVIDER_MAX_RETRIES,
        additional_kwargs=extra,
        http_client=http_client,
    )
