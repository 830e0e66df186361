"""Model providers: Gemini when a key is configured, offline defaults otherwise.

- `policydesk.providers.local`: the offline embedding model and LlamaIndex's offline tokenizer.
- `policydesk.providers.passages`: the offline reader (the policy text in force, its likely
  sentence marked), used when no model is configured; `policy_text.PolicyTextSynthesizer` is
  its LlamaIndex synthesizer for a developer's own composition.
- `policydesk.providers.gemini`: Gemini embeddings and LLM wiring; imported on demand here,
  only when a key is configured, because it pulls in google-genai.
- `policydesk.providers.openai_compatible`: a model on the plan's own OpenAI-compatible server.
"""

from __future__ import annotations

from llama_index.core.base.embeddings.base import BaseEmbedding

from policydesk.config import Settings
from policydesk.providers.kinds import is_priced, provider_kind
from policydesk.providers.local import OFFLINE_EMBEDDING_NAME, configure_llama_index, local_embedding, offline_embedding

__all__ = [
    "OFFLINE_EMBEDDING_NAME",
    "configure_llama_index",
    "embedding_for",
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


def llm_for(settings: Settings):
    """The LLM that writes answers: Gemini when a key is configured, else the plan's own
    OpenAI-compatible server when one is set, else None (the offline reader shows policy text)."""
    configure_llama_index()
    if settings.GEMINI_API_KEY:
        from policydesk.providers.gemini import gemini_llm

        return gemini_llm(settings)
    if settings.OPENAI_COMPATIBLE_BASE_URL:
        from policydesk.providers.openai_compatible import openai_compatible_llm

        return openai_compatible_llm(settings)
    return None
