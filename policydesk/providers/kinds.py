"""What kind of provider an LLM is, as the provider itself says (`provider_kind`), never read
from its model name.

- gemini: Gemini, billed per token at the configured prices (`PRICE_*_PER_MTOK`).
- openai_compatible: a model on the plan's own server; not billed per token here.
- other: any LLM that does not name its kind (a test double, an extension's); not billed.
"""

from __future__ import annotations

from typing import Any

GEMINI = "gemini"
OPENAI_COMPATIBLE = "openai_compatible"
OTHER = "other"


def provider_kind(llm: Any) -> str:
    return getattr(llm, "provider_kind", OTHER)


def is_priced(llm: Any) -> bool:
    """True when the configured per-token prices apply to this provider's calls."""
    return provider_kind(llm) == GEMINI
