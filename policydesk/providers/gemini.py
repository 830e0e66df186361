"""Gemini through LlamaIndex's GoogleGenAI: structured JSON, a timeout, retries on quota, and cost;
and Gemini embeddings sized to the chunk table.

How the pieces reach google-genai (llama-index-llms-google-genai 0.11, google-genai 2.x):
- `generation_config` (a `GenerateContentConfig`) is stored by `GoogleGenAI` and sent with
  every chat call; `response_mime_type` + `response_schema` become the request's
  `generationConfig.responseMimeType` / `responseSchema`.
- The first (system) message becomes `systemInstruction`; the other messages become `contents`.
- `http_options.timeout` is in milliseconds and bounds each HTTP request (it is also sent as
  the `X-Server-Timeout` header). It is passed as a dict because `GoogleGenAI` serialises an
  `HttpOptions` object to JSON, which fails on a custom `httpx_client` (the test seam).
- Passing both `max_tokens` and `context_window` stops `GoogleGenAI` from fetching model
  metadata over the network when it is constructed.
- Retries: `GoogleGenAI`'s own retry decorator never retries quota errors: it tests
  `ClientError.status in (429, 408)`, but `status` is the string "RESOURCE_EXHAUSTED" (the
  number is in `.code`). So it is switched off (`max_retries=0`) and `RetryingGoogleGenAI`
  retries 429/503 by `.code`, with exponential backoff and jitter. google-genai's own retry
  layer stays off too (no `retry_options`): it would also retry read timeouts, and a
  timeout must fail closed at once.
"""

from __future__ import annotations

from typing import Any, Sequence

import tenacity
from google.genai import errors, types
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import Field
from llama_index.llms.google_genai import GoogleGenAI

from policydesk.config import Settings
from policydesk.providers.kinds import GEMINI
from policydesk.synthesis.schema import ModelAnswer

# Gemini 2.5 counts thinking tokens against max_output_tokens; leave room beyond the JSON.
MAX_OUTPUT_TOKENS = 8192
# gemini-2.5-flash input limit (ai.google.dev/gemini-api/docs/models).
CONTEXT_WINDOW = 1_048_576
# 429 RESOURCE_EXHAUSTED (quota) and 503 UNAVAILABLE (overloaded) say "try again later".
RETRYABLE_CODES = (429, 503)


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, errors.APIError) and (
        exc.code in RETRYABLE_CODES or exc.status == "RESOURCE_EXHAUSTED"
    )


class RetryingGoogleGenAI(GoogleGenAI):
    """GoogleGenAI that retries quota errors with backoff, bounded in attempts and time."""

    quota_retries: int = Field(default=3, ge=0, description="Retries after a 429/503 reply.")
    backoff_seconds: float = Field(default=1.0, ge=0, description="First backoff; doubles, with jitter.")
    retry_budget_seconds: float = Field(default=30.0, gt=0, description="Stop retrying after this long.")

    @property
    def provider_kind(self) -> str:
        return GEMINI

    def _retry_kwargs(self) -> dict[str, Any]:
        return {
            "stop": tenacity.stop_after_attempt(self.quota_retries + 1)
            | tenacity.stop_after_delay(self.retry_budget_seconds),
            "wait": tenacity.wait_exponential_jitter(
                initial=self.backoff_seconds, max=self.backoff_seconds * 16, jitter=self.backoff_seconds
            ),
            "retry": tenacity.retry_if_exception(_is_retryable),
            "reraise": True,
        }

    def _chat(self, messages: Sequence[ChatMessage], **kwargs: Any):
        return tenacity.Retrying(**self._retry_kwargs())(super()._chat, messages, **kwargs)

    async def _achat(self, messages: Sequence[ChatMessage], **kwargs: Any):
        return await tenacity.AsyncRetrying(**self._retry_kwargs())(super()._achat, messages, **kwargs)


def generation_config() -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        temperature=0.0,
        max_output_tokens=MAX_OUTPUT_TOKENS,
        response_mime_type="application/json",
        response_schema=ModelAnswer,
    )


def gemini_llm(
    settings: Settings,
    *,
    httpx_client: Any = None,
    httpx_async_client: Any = None,
    backoff_seconds: float = 1.0,
) -> RetryingGoogleGenAI:
    """A Gemini LLM that asks for a `ModelAnswer` JSON object.

    `httpx_client` / `httpx_async_client` replace the transport (tests stub HTTP with them).
    """
    http_options: dict[str, Any] = {"timeout": int(settings.PROVIDER_TIMEOUT_SECONDS * 1000)}
    if httpx_client is not None:
        http_options["httpx_client"] = httpx_client
    if httpx_async_client is not None:
        http_options["httpx_async_client"] = httpx_async_client
    return RetryingGoogleGenAI(
        model=settings.GEMINI_MODEL,
        api_key=settings.GEMINI_API_KEY.get_secret_value(),
        temperature=0.0,
        max_tokens=MAX_OUTPUT_TOKENS,
        context_window=CONTEXT_WINDOW,
        max_retries=0,  # upstream retry is off; see the module docstring
        quota_retries=settings.PROVIDER_MAX_RETRIES,
        backoff_seconds=backoff_seconds,
        retry_budget_seconds=settings.PROVIDER_TIMEOUT_SECONDS,
        http_options=http_options,
        generation_config=generation_config(),
        file_mode="inline",
    )


def gemini_embedding(settings: Settings) -> BaseEmbedding:
    from llama_index.embeddings.google_genai import GoogleGenAIEmbedding

    return GoogleGenAIEmbedding(
        model_name=settings.GEMINI_EMBEDDING_MODEL,
        api_key=settings.GEMINI_API_KEY.get_secret_value(),
        embed_batch_size=settings.EMBED_BATCH_SIZE,
        # The chunk table is vector(384); Gemini embeddings are Matryoshka-truncatable.
        embedding_config=types.EmbedContentConfig(output_dimensionality=settings.EMBED_DIM),
        retries=settings.PROVIDER_MAX_RETRIES,
        timeout=int(settings.PROVIDER_TIMEOUT_SECONDS),
    )
