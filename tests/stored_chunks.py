"""Stored demo chunks for synthesizer tests: the synthesizer re-reads every node it is given
under the caller's clearance, so its tests quote text as the demo database stores it."""

from __future__ import annotations

from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
from llama_index.core.bridge.pydantic import Field
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback

from policydesk.accounts.access import clearance_for
from policydesk.storage.guard_read import CallerChunks

V2_ID = "POL-TF:v2:filing-limit"
V1_ID = "POL-TF:v1:filing-limit"
WIKI_ID = "WIKI-CLAIMS:v1:timely-filing"
# Sentences of those chunks as stored (corpus/): what a model may quote.
V2_QUOTE = "An initial claim must be received by Cascade Valley Health Plan within 90 days of the date of service."
V1_QUOTE = "An initial claim must be received by Cascade Valley Health Plan within 180 days of the date of service."
WIKI_QUOTE = "Providers have 180 days from the date of service to get an initial claim to us."
QUOTES = {V2_ID: V2_QUOTE, V1_ID: V1_QUOTE, WIKI_ID: WIKI_QUOTE}


def rep_chunks(db) -> CallerChunks:
    return CallerChunks(db.app, clearance_for("rep"))


class ScriptedLLM(CustomLLM):
    """A real LLM subclass that returns (or raises) queued replies and records each prompt."""

    replies: list = Field(default_factory=list)
    prompts: list = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted", is_chat_model=True)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs) -> CompletionResponse:
        self.prompts.append(prompt)
        next_reply = self.replies.pop(0)
        if isinstance(next_reply, BaseException):
            raise next_reply
        return CompletionResponse(text=next_reply)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
        raise NotImplementedError


class DecliningLLM(CustomLLM):
    """A model that reads the prompt it is sent and says the sources don't answer: for tests of what
    reaches a model (the prompts the trace instrumentation records)."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="declining-test-model", is_chat_model=True)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs) -> CompletionResponse:
        return CompletionResponse(text='{"answers": "no", "reason": "test model"}')

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
        raise NotImplementedError
