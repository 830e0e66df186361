"""Model providers: Gemini when a key is configured, offline defaults otherwise.

- `policydesk.providers.local`: the offline embedding model and LlamaIndex's offline tokenizer.
- `policydesk.providers.extractive`: the offline extractive answerer (a LlamaIndex `CustomLLM`).
- `policydesk.providers.gemini`: Gemini embeddings and LLM wiring; imported on demand here,
  only when a key is configured, because it pulls in google-genai.
"""

from __future__ import annotations

from llama_index.core.base.embeddings.base import BaseEmbedding

from policydesk.config import Settings
from policydesk.providers.kinds import is_extractive, is_priced, provider_kind
from policydesk.providers.local import OFFLINE_EMBEDDING_NAME, configure_llama_index, local_embedding, offline_embedding

__all__ = [
    "OFFLINE_EMBEDDING_NAME",
    "configure_llama_index",
    "embedding_for",
    "is_extractive",
    "is_priced",
    "llm_for",
    "local_embedding",
    "offline_embedding",
    "provider_kind",
]


def embedding_for(settings: Settings) -> BaseEmbedding:
    configure_llama_index()
    if settings.GEMINI_API_KEY:
        from policydesk.providers.gemini import gemini_embedding

        return gemini_embedding(settings)
    return local_embedding(settings)


def llm_for(settings: Settings, embed_model: BaseEmbedding | None = None):
    """The answering LLM: Gemini when a key is configured, else the offline extractive answerer.

    The extractive answerer chooses sentences with `embed_model` (the offline model by default).
    """
    configure_llama_index()
    if settings.GEMINI_API_KEY:
        from policydesk.providers.gemini import gemini_llm

        return gemini_llm(settings)
    from policydesk.providers.extractive import ExtractiveAnswerer

    if embed_model is None:
        embed_model = local_embedding(settings)
    return ExtractiveAnswerer(embed_model=embed_model)

