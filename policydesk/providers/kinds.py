"""What kind of provider an LLM is, as the provider itself says (`provider_kind`), never read
from its model name.

- extractive: the offline extractive answerer (quoted sentences, not a model); answers say so.
- gemini: Gemini, billed per token at the configured prices (`PRICE_*_PER_MTOK`).
- other: any LLM that does not name its kind (a test double, an extension's); not billed.
"""

from __future__ import annotations

from typing import Any

EXTRACTIVE = "extractive"
GEMINI = "gemini"
OTHER = "other"


def provider_kind(llm: Any) -> str:
    return getattr(llm, "provider_kind", OTHER)


def is_extractive(llm: Any) -> bool:
    return provider_kind(llm) == EXTRACTIVE


def is_priced(llm: Any) -> bool:
    """True when the configured per-token prices apply to this provider's calls."""
    return provider_kind(llm) == GEMINI
