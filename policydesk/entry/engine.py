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

It works wherever LlamaIndex takes a query engine. For an agent, `engine.as_tool()` is a
`QueryEngineTool` with a typed schema (`PolicyQuestion`): the question, and the date of service,
denial notice date and line of business the agent may pass per call (checked and traced by the
pipeline, as the API's are). `QueryEngineTool.from_defaults(engine)` takes only `input`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from datetime import date
from typing import Any, Optional

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.response.schema import Response
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.tools import QueryEngineTool, ToolMetadata, ToolOutput
from pydantic import BaseModel, ConfigDict, Field

from policydesk.contract.answer import AskRequest, AskResult, Citation
from policydesk.entry.configured import entered_dates, open_configured, user_clearance
from policydesk.pipeline import AskPipeline, build_pipeline
from policydesk.versions.bases import BASIS_KEYS

DEFAULT_TOOL_DESCRIPTION = (
    "Answers questions about the health plan's written policies with the rule in force, the version it "
    "comes from and citations. Pass the question as plain text in `input`; when the rule depends on a date "
    "or a product, pass `date_of_service` or `denial_notice_date` (YYYY-MM-DD) and `line_of_business`. It "
    "refuses member-specific questions (member identifiers, claim decisions): never send member data.")


class PolicyQuestion(BaseModel):
    """What an agent may pass the PolicyDesk tool: the question, and the dates and product that
    pick the rule that applied. Dates and product are checked by the pipeline (a bad one is an
    error result, traced), never chosen by the model from the question."""

    model_config = ConfigDict(extra="forbid")
    input: str = Field(description="The question about the plan's written policies, in plain words. Never "
                                   "member identifiers or member data.")
    date_of_service: Optional[date] = Field(
        default=None, description="The member's date of service (YYYY-MM-DD): picks the version of a policy "
                                  "decided by date of service. Leave out for today's rule.")
    denial_notice_date: Optional[date] = Field(
        default=None, description="The date on the denial notice (YYYY-MM-DD): picks the version of a policy "
                                  "decided by the denial notice date (appeals).")
    line_of_business: Optional[str] = Field(
        default=None, description="The member's product (line of business), e.g. commercial or medicaid, when "
                                  "the rule differs by product.")


_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")


class PolicyDeskTool(QueryEngineTool):
    """A `QueryEngineTool` whose schema is `PolicyQuestion`: the agent's dates and product go to
    the pipeline with the question (per call, over the engine's own defaults)."""

    def _arguments(self, args: tuple, kwargs: dict) -> dict[str, Any] | str:
        given = dict(kwargs)
        if args:
            given = {"input": args[0], **given}
        unknown = sorted(set(given) - set(PolicyQuestion.model_fields))
        if unknown:  # only a plain field name is repeated back
            named = [k for k in unknown if _FIELD_NAME.fullmatch(str(k))]
            return (f"unknown argument(s){': ' + ', '.join(named) if named else ''}; this tool takes "
                    f"{', '.join(PolicyQuestion.model_fields)}")
        if not isinstance(given.get("input"), str) or not given["input"].strip():
            return "`input` is required: the question, as plain text"
        return given

    def _error(self, message: str, raw_input: dict) -> ToolOutput:
        return ToolOutput(content=message, tool_name=self.metadata.get_name(), raw_input=raw_input,
                          raw_output=None, is_error=True)

    def _output(self, response: Response, given: dict) -> ToolOutput:
        return ToolOutput(content=str(response), tool_name=self.metadata.get_name(), raw_input=given,
                          raw_output=response, is_error=bool(response.metadata.get("error")))

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        given = self._arguments(args, kwargs)
        if isinstance(given, str):
            return self._error(given, {})
        engine: PolicyDeskQueryEngine = self.query_engine  # type: ignore[assignment]
        return self._output(engine.ask(given["input"], dates={b: given.get(b) for b in BASIS_KEYS},
                                       line_of_business=given.get("line_of_business")), given)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        return await asyncio.to_thread(self.call, *args, **kwargs)  # the pipeline is sync


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

    def as_tool(self, name: str = "policydesk", description: str = DEFAULT_TOOL_DESCRIPTION,
                return_direct: bool = False) -> PolicyDeskTool:
        """This engine as a `QueryEngineTool` for an agent, with the typed `PolicyQuestion`
        schema: the agent can pass a date of service, a denial notice date and a product."""
        return PolicyDeskTool(self, ToolMetadata(name=name, description=description, fn_schema=PolicyQuestion,
                                                 return_direct=return_direct))

    def ask(self, question: str, *, dates: Mapping[str, date | str | None] | None = None,
            line_of_business: str | None = None) -> Response:
        """One query with this call's dates (by basis, over the engine's own) and product (else the
        engine's); the pipeline checks them and traces the request either way."""
        entered = dict(self.dates)
        entered.update({b: d.isoformat() if isinstance(d, date) else d
                        for b, d in (dates or {}).items() if d is not None})
        result = self._pipeline.ask(AskRequest(user_name=self.user, question=question, dates=entered,
                                               line_of_business=line_of_business or self.line_of_business))
        return response_of(result)

    def _ask(self, query_bundle: QueryBundle) -> Response:
        return self.ask(query_bundle.query_str)

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
