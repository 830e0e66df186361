"""The oracle row: the production checks run on a perfect draft.

A synthesizer whose "model" drafts the gold answer from the context it was given (as stored):
for an answerable item, the sentence of an expected chunk that holds the key fact, quoted and
cited; for an item that must be declined, the sentence the offline reader finds closest, stated
as an answer. Everything after the draft (parsing, the grounding checks, the retry, the pipeline's
post-flight and what it shows) is the production code. So the row measures how many correct
drafts the checks withhold (target: none), and how many plausible wrong drafts they catch.
"""

from __future__ import annotations

import json
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, ChatResponse, CompletionResponse, LLMMetadata, MessageRole
from llama_index.core.llms import CustomLLM

from policydesk.evals.golden import GoldenItem
from policydesk.evals.metrics import key_fact_present
from policydesk.reading.language import sentences
from policydesk.providers.passages import PassageReader
from policydesk.synthesis.synthesizer import CitedAnswerSynthesizer, DraftRequest

ORACLE_MODEL_NAME = "oracle-gold-draft"


class _NoModel(CustomLLM):
    """Stands in the synthesizer's `llm` slot; the oracle never calls it."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=ORACLE_MODEL_NAME, is_chat_model=True)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise RuntimeError("the oracle drafts from the context, it calls no model")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any):
        raise RuntimeError("the oracle drafts from the context, it calls no model")


class OracleSynthesizer(CitedAnswerSynthesizer):
    """Set `item` before each ask (the harness is single-threaded)."""

    def __init__(self, embed_model) -> None:
        super().__init__(llm=_NoModel())
        self._item: GoldenItem | None = None
        self._reader = PassageReader(embed_model)
        self.gold_in_context = False  # the last draft's expected chunk was in context

    @property
    def item(self) -> GoldenItem | None:
        return self._item

    @item.setter
    def item(self, item: GoldenItem) -> None:
        self._item, self.gold_in_context = item, False

    def _chat(self, request: DraftRequest) -> ChatResponse:
        draft = self.draft(request)
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=json.dumps(draft)))

    async def _achat(self, request: DraftRequest) -> ChatResponse:
        return self._chat(request)

    def draft(self, request: DraftRequest) -> dict:
        item, context = self.item, request.context
        if item is None:
            raise RuntimeError("OracleSynthesizer.item is not set")
        question = item.question
        if not item.expect_refusal:
            expected = set(item.expected_sections)
            self.gold_in_context = any(n.node.node_id in expected for n in context)
            found = []  # each key fact's sentence, from an expected chunk in context
            for fact in item.expected_key_facts:
                found += [next(((s, n.node.node_id) for n in context if n.node.node_id in expected
                                for s in sentences(n.node.get_content()) if key_fact_present(s, fact)), None)]
            if None in found:
                return {"answers": "no", "reason": "no expected chunk in context states the key fact"}
            # Every expected chunk in context is cited: a cross-document answer rests on each.
            quoted = {c for _, c in found}
            found += [(next(iter(sentences(n.node.get_content())[1:2] or sentences(n.node.get_content())), ""),
                       n.node.node_id) for n in context if n.node.node_id in expected and n.node.node_id not in quoted]
            return _answer(list(dict.fromkeys(q for q in found if q[0])))
        passages = self._reader.read(question, context)
        if not passages:
            return {"answers": "no", "reason": "nothing in context"}
        return _answer([(sentence, passages[0].chunk_id) for sentence in passages[0].marked_sentences])


def _answer(quoted: list[tuple[str, str]]) -> dict:
    return {"answers": "yes", "answer": " ".join(s for s, _ in quoted),
            "claims": [{"text": s, "quotes": [{"chunk_id": c, "text": s}]} for s, c in quoted]}
