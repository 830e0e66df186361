"""The offline answerer: a deterministic, extractive LLM behind LlamaIndex's LLM interface.

It reads only the prompt the synthesizer renders (the source blocks and the question), quotes
the sentences that answer each part of the question (chosen by meaning with the local
embedding model, see `policydesk.providers.choice`), cites their blocks and returns the same
JSON schema as Gemini, so its answers go through the same validation. It never follows text in
a source: it only quotes, and it skips sentences that read like injected instructions. Retry
turns are ignored: the same prompt always gives the same reply.
"""

from __future__ import annotations

import json
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from pydantic import Field, PrivateAttr

from policydesk.answer import Claim
from policydesk.providers.blocks import SourceBlock, parse_prompt, prompt_dates, prompt_programs
from policydesk.providers.choice import SentenceChooser
from policydesk.providers.kinds import EXTRACTIVE
from policydesk.synthesis.schema import ModelAnswer

__all__ = ["EXTRACTIVE_MODEL_NAME", "ExtractiveAnswerer", "extract_answer", "parse_prompt"]

EXTRACTIVE_MODEL_NAME = "extractive-offline"
NO_SOURCES_REASON = "No sources were provided."
NO_OVERLAP_REASON = "None of the sources in context address what the question asks."


def _label(block: SourceBlock) -> str:
    kind = {"wiki": "wiki page, ", "call_note": "call note, "}.get(block.type, "")
    window = block.in_force
    window = f"from {window[: -len(' to open')]}" if window.endswith(" to open") else window
    return f"{block.title} ({kind}version {block.version}, in force {window})"


def extract_answer(prompt: str, chooser: SentenceChooser) -> ModelAnswer:
    question, blocks = parse_prompt(prompt)
    if not blocks:
        return ModelAnswer(answerable=False, answer="", insufficient_evidence_reason=NO_SOURCES_REASON)
    programs, chosen_program = prompt_programs(prompt)
    chosen = chooser.choose(question, blocks, programs, chosen_program, prompt_dates(prompt))
    if not chosen:
        return ModelAnswer(answerable=False, answer="", insufficient_evidence_reason=NO_OVERLAP_REASON)
    # Consecutive quotes from one block share its label; the order stays the question's order.
    runs: list[tuple[int, list[str]]] = []
    for c in chosen:
        if runs and runs[-1][0] == c.block_index:
            runs[-1][1].append(c.quote)
        else:
            runs.append((c.block_index, [c.quote]))
    answer = " ".join(f"{_label(blocks[i])}: {' '.join(quoted)}" for i, quoted in runs)
    claims = [Claim(text=c.quote, citations=[blocks[c.block_index].id]) for c in chosen]
    return ModelAnswer(answerable=True, answer=answer, claims=claims)


class ExtractiveAnswerer(CustomLLM):
    """Deterministic offline stand-in for Gemini; labelled extractive wherever shown.

    `embed_model` is the embedding used to choose sentences; the offline MiniLM by default,
    and the pipeline passes the one it retrieves with so the model is loaded once.
    """

    context_window: int = 1_000_000
    num_output: int = 2048
    embed_model: BaseEmbedding | None = Field(default=None, exclude=True)
    _chooser: SentenceChooser | None = PrivateAttr(default=None)

    @classmethod
    def class_name(cls) -> str:
        return "ExtractiveAnswerer"

    @property
    def provider_kind(self) -> str:
        return EXTRACTIVE

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.num_output,
            model_name=EXTRACTIVE_MODEL_NAME,
            is_chat_model=True,
        )

    def _reply(self, prompt: str) -> str:
        if self._chooser is None:
            if self.embed_model is None:
                from policydesk.config import get_settings
                from policydesk.providers.local import local_embedding

                self.embed_model = local_embedding(get_settings())
            self._chooser = SentenceChooser(self.embed_model)
        return json.dumps(extract_answer(prompt, self._chooser).model_dump(), ensure_ascii=False)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._reply(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self._reply(prompt)

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=text, delta=text)

        return gen()
