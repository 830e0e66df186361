"""Row factories shared by tests that build context by hand (no database)."""

from __future__ import annotations

from llama_index.core.llms import CustomLLM, LLMMetadata
from llama_index.core.schema import NodeWithScore

from policydesk.ingest.chunks import make_node


def chunk(chunk_id: str, text: str, *, title="Timely Filing of Claims", section="Filing Limit",
          source_type="policy", effective_from="2026-01-01", effective_to="9999-12-31") -> NodeWithScore:
    """A context node with the metadata ingest writes; chunk_id is DOC:vN:section-id."""
    doc_id, version, section_id = chunk_id.split(":")
    meta = {
        "chunk_id": chunk_id, "title": title, "version": int(version[1:]), "section": section,
        "section_id": section_id, "source_type": source_type, "effective_from": effective_from,
        "effective_to": effective_to, "access_level": "public", "sensitive": False, "text_sha256": "x",
    }
    return NodeWithScore(node=make_node(doc_id, text, meta), score=1.0)


class TimeoutLLM(CustomLLM):
    """A provider that never answers in time."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="gemini-test-timeout", is_chat_model=True)

    def complete(self, prompt, formatted=False, **kw):
        raise TimeoutError("provider timed out after 30s")

    def stream_complete(self, prompt, formatted=False, **kw):
        raise TimeoutError("provider timed out after 30s")
