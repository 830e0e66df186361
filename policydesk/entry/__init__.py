"""In-process entry points for developers composing LlamaIndex parts (docs/extending.md).

- `query_engine(user)`: the whole pipeline as a `BaseQueryEngine`; `engine.as_tool()` a
  `QueryEngineTool` with a typed schema (`PolicyQuestion`: question, dates, product);
- `retriever(user, dates=...)` / `PolicyRetriever(..., clearance=..., dates=...)`: retrieval with
  the clearance guard and version resolution, for a `RetrieverQueryEngine` with
  `CitedAnswerSynthesizer`.
"""

from policydesk.entry.configured import EntryError
from policydesk.entry.engine import (
    DEFAULT_TOOL_DESCRIPTION, PolicyDeskQueryEngine, PolicyDeskTool, PolicyQuestion, query_engine,
)
from policydesk.entry.retriever import PolicyRetriever, retriever

__all__ = ["DEFAULT_TOOL_DESCRIPTION", "EntryError", "PolicyDeskQueryEngine", "PolicyDeskTool", "PolicyQuestion",
           "PolicyRetriever", "query_engine", "retriever"]
