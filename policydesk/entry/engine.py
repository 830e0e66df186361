"""PolicyDesk as a LlamaIndex query engine: every query is one whole `AskPipeline.ask` for one user.

`query_engine(user)` builds the pipeline once (models load once) over the configured database;
each query then runs every step the CLI, the web pages and the API run: the role re-read, the
refusal gate, the predicate and RLS, the clearance guard, version resolution, synthesis with
its checks, and the trace. The `Response` is the pipeline's answer and nothing else:

- `response`: the answer; without one, the refusal message or the reason there is no answer;
- `source_nodes`: the cited chunks, built from the answer's citations (text and metadata as
  stored); none when refused or abstained;
- `metadata`: the `ask --json` object (`AskResult.to_json`): `refused`, `refusal_code`,
  `abstained`, `abstain_code`, `warnings`, `versions_applied`, `trace_id`, claims, citations...

It works wherever LlamaIndex takes a query engine, e.g. `QueryEngineTool.from_defaults(engine)`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import date
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import Response
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import QueryEngineTool

from policydesk.answer import AskRequest, AskResult, Citation
from policydesk.entry.configured import entered_dates, open_configured, user_clearance
from policydesk.pipeline import AskPipeline, build_pipeline

DEFAULT_TOOL_DESCRIPTION = (
    "Answers questions about the health plan's written policies with the rule in force, the version it "
    "comes from and citations. Pass the question as plain text. It refuses member-specific questions "
    "(member identifiers, claim decisions): never send member data.")


def citation_node(citation: Citation) -> NodeWithScore:
    """A cited chunk as a node: the stored text under its chunk id, with the citation's fields as metadata."""
    meta = citation.model_dump(exclude={"text", "chunk_id"})
    meta = {k: v for k, v in meta.items() if v is not None}
    return NodeWithScore(node=TextNode(id_=citation.chunk_id, text=citation.text, metadata=meta), score=None)


def response_of(result: AskResult) -> Response:
    if result.refused:
        text = result.refusal_message or "Refused."
    elif result.answerable:
        text = result.answer
    else:
        text = result.abstain_reason or result.error or "No answer."
    cited = [citation_node(c) for c in result.citations] if result.answerable and not result.refused else []
    return Response(response=text, source_nodes=cited, metadata=result.to_json())


class PolicyDeskQueryEngine(BaseQueryEngine):
    def __init__(self, pipeline: AskPipeline, user: str, *, dates: Mapping[str, date | str | None] | None = None,
                 line_of_business: str | None = None, owns_database: bool = False, **kwargs: Any) -> None:
        """`pipeline` may be shared by engines for several users; `owns_database` closes its
        database with `close()`. The user and product are checked now (a clear error) and the
        role is still read again on every query."""
        self._pipeline, self.user = pipeline, user
        self.dates = {b: d.isoformat() for b, d in entered_dates(dates).items()}
        user_clearance(pipeline.db, user, line_of_business)  # EntryError now, not a failed query later
        self.line_of_business = line_of_business
        self._owns_database = owns_database
        super().__init__(callback_manager=kwargs.pop("callback_manager", None))

    @property
    def pipeline(self) -> AskPipeline:
        return self._pipeline

    def _get_prompt_modules(self) -> PromptMixinType:
        # The pipeline's own synthesizer: updating its prompt changes it for every engine (and
        # any server) sharing this pipeline.
        return {"response_synthesizer": self._pipeline.synthesizer}

    def as_tool(self, name: str = "policydesk", description: str = DEFAULT_TOOL_DESCRIPTION) -> QueryEngineTool:
        """This engine as a `QueryEngineTool` for an agent."""
        return QueryEngineTool.from_defaults(self, name=name, description=description)

    def _ask(self, query_bundle: QueryBundle) -> Response:
        result = self._pipeline.ask(AskRequest(user_name=self.user, question=query_bundle.query_str,
                                               dates=dict(self.dates), line_of_business=self.line_of_business))
        return response_of(result)

    def _query(self, query_bundle: QueryBundle) -> Response:
        return self._ask(query_bundle)

    async def _aquery(self, query_bundle: QueryBundle) -> Response:
        return await asyncio.to_thread(self._ask, query_bundle)  # the pipeline is sync; keep the loop free

    def close(self) -> None:
        if self._owns_database:
            self._pipeline.db.dispose()

    def __enter__(self) -> "PolicyDeskQueryEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def query_engine(user: str, *, dates: Mapping[str, date | str | None] | None = None,
                 line_of_business: str | None = None, settings=None,
                 pipeline: AskPipeline | None = None) -> PolicyDeskQueryEngine:
    """A query engine answering as `user` over the configured database (`policydesk.config`).

    With `pipeline`, that pipeline (and its database) is used instead, e.g. one shared by
    several users' engines."""
    if pipeline is not None:
        return PolicyDeskQueryEngine(pipeline, user, dates=dates, line_of_business=line_of_business)
    if settings is None:
        from policydesk.config import get_settings

        settings = get_settings()
    db = open_configured(settings)
    try:
        return PolicyDeskQueryEngine(build_pipeline(db, settings), user, dates=dates,
                                     line_of_business=line_of_business, owns_database=True)
    except BaseException:
        db.dispose()
        raise
