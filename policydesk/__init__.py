"""PolicyDesk: the rule that applied, and proof of what was said.

The names a developer composing LlamaIndex parts starts from (docs/extending.md), imported on
first use so that `import policydesk.config` stays light:

- `query_engine(user)` -> `PolicyDeskQueryEngine`: the whole pipeline per query;
- `retriever(user, dates=...)` / `PolicyRetriever`: retrieval with the clearance guard and
  version resolution; `CitedAnswerSynthesizer`: the cited-answer `BaseSynthesizer`;
- `HybridArmsRetriever`, `DenseArmRetriever`, `TextArmRetriever`: the bare arms (predicate and
  RLS only: no guard, no version resolution, so both versions of a policy can come back);
- `Clearance`, `clearance_for`.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "query_engine": "policydesk.entry",
    "PolicyDeskQueryEngine": "policydesk.entry",
    "retriever": "policydesk.entry",
    "PolicyRetriever": "policydesk.entry",
    "EntryError": "policydesk.entry",
    "CitedAnswerSynthesizer": "policydesk.synthesis",
    "PolicyTextSynthesizer": "policydesk.providers.policy_text",
    "HybridArmsRetriever": "policydesk.retrievers",
    "DenseArmRetriever": "policydesk.retrievers",
    "TextArmRetriever": "policydesk.retrievers",
    "Clearance": "policydesk.accounts.access",
    "clearance_for": "policydesk.accounts.access",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'policydesk' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
