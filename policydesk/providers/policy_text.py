"""With no model configured, a developer's own LlamaIndex composition shows policy text too.

`PolicyTextSynthesizer` is the offline twin of `CitedAnswerSynthesizer`: it re-reads every node
it is given under the caller's clearance (`chunks`), then shows, per question part, the passage
in force with its likely sentence marked (`providers.passages.PassageReader`). The `Response`
text is the marked sentences; `source_nodes` are the passages' chunks as stored; `metadata`
holds the passages and a citation record per chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.llms import MockLLM
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.response_synthesizers import BaseSynthesizer
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType

from policydesk.providers.passages import PassageReader
from policydesk.storage.guard_read import CallerChunks
from policydesk.synthesis.response import NO_ANSWER_PREFIX, citation_record


class PolicyTextSynthesizer(BaseSynthesizer):
    def __init__(self, embed_model, *, chunks: CallerChunks) -> None:
        if not isinstance(chunks, CallerChunks):
            raise TypeError("PolicyTextSynthesizer needs the caller's chunks (policydesk.retriever(user).chunks)")
        # BaseSynthesizer wants an LLM (None would resolve LlamaIndex's global default, OpenAI);
        # this synthesizer calls none, so it holds LlamaIndex's inert MockLLM.
        super().__init__(llm=MockLLM(), callback_manager=None)
        self.chunks = chunks
        self._reader = PassageReader(embed_model)

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        pass

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def synthesize(self, query: QueryType, nodes: list[NodeWithScore],
                   additional_source_nodes: Sequence[NodeWithScore] | None = None, **kwargs: Any) -> Response:
        question = query.query_str if isinstance(query, QueryBundle) else query
        context, _ = self.chunks.reread(nodes)
        passages = self._reader.read(question, context)
        if not passages:
            return Response(response=NO_ANSWER_PREFIX + "no source the caller may read is in context.",
                            source_nodes=[], metadata={"passages": [], "citations": []})
        by_id = {n.node.node_id: n for n in context}
        cited = [by_id[i] for i in dict.fromkeys(p.chunk_id for p in passages)]
        return Response(response=" ".join(p.marked_text for p in passages),
                        source_nodes=[*cited, *(additional_source_nodes or [])],
                        metadata={"passages": [p.model_dump() for p in passages],
                                  "citations": [citation_record(n) for n in cited]})

    async def asynthesize(self, query: QueryType, nodes: list[NodeWithScore],
                          additional_source_nodes: Sequence[NodeWithScore] | None = None, **kwargs: Any) -> Response:
        return self.synthesize(query, nodes, additional_source_nodes)

    def get_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        raise NotImplementedError("PolicyTextSynthesizer shows stored chunks: call synthesize(query, nodes)")

    async def aget_response(self, query_str: str, text_chunks: Sequence[str], **kwargs: Any) -> str:
        raise NotImplementedError("PolicyTextSynthesizer shows stored chunks: call synthesize(query, nodes)")
