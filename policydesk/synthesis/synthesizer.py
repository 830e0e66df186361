"""Generate a cited JSON answer from the sources in context, or abstain.

Every citation must name a chunk that was in context and every claim must cite
one: a reply that breaks this is retried once with a message naming the
offending ids, then the synthesizer fails closed (no answer, a stated reason).
A provider error or timeout fails closed at once.

A LlamaIndex `BaseSynthesizer`: `synthesize` / `asynthesize` take the query and the
context nodes (their ids are what citations must match; `notes=` adds PolicyDesk's notes
about them) and return a `Response` (`synthesis/response.py`), so it drops into a
`RetrieverQueryEngine`. The pipeline, which needs the validated `ModelAnswer` itself, calls
`synthesize_outcome` / `asynthesize_outcome`. All four open a span and fire LlamaIndex's
synthesize start and end events. Its prompt is one `ChatPromptTemplate`
(`get_prompts()["cited_answer_prompt"]`), swappable through `update_prompts` only in a
layout that keeps the sources in the user turn (`prompt.checked_prompt`).

The flow is written once, as a generator that yields the messages to send and
receives the provider's reply; the sync and async entry points only drive it.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import llama_index.core.instrumentation as instrument
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.base.response.schema import Response
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.callbacks.schema import CBEventType, EventPayload
from llama_index.core.instrumentation.events.synthesis import SynthesizeEndEvent, SynthesizeStartEvent
from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.response_synthesizers import BaseSynthesizer
from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, QueryType
from pydantic import ValidationError

from policydesk.storage.guard_read import CallerChunks
from policydesk.synthesis.grounding import Problem, check
from policydesk.synthesis.outcome import SynthesisOutcome
from policydesk.synthesis.prompt import (
    SYSTEM_PROMPT,
    build_retry_message,
    checked_prompt,
    cited_answer_prompt,
    prompt_variables,
)
from policydesk.synthesis.response import cited_response
from policydesk.synthesis.schema import ModelAnswer

__all__ = ["CitedAnswerSynthesizer", "SynthesisOutcome", "PROMPT_KEY"]

dispatcher = instrument.get_dispatcher(__name__)

NO_CONTEXT_REASON = "No sources the caller may see answered this question."
TIMEOUT_REASON = "The model provider did not respond in time; no answer was given."
PROVIDER_ERROR_REASON = "The model provider returned an error ({error}); no answer was given."
MODEL_ABSTAINED_REASON = "The sources in context do not answer this question."

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class DraftRequest:
    """What one model call is asked with: the messages, and the context they render (as stored)."""

    messages: list[ChatMessage]
    context: list[NodeWithScore]


@dataclass(frozen=True)
class _Reply:
    response: ChatResponse | None = None
    error: BaseException | None = None


def _strip_fences(text: str) -> str:
    m = _FENCE.match(text)
    return m.group(1) if m else text.strip()


def validate_reply(text: str, readable: Mapping[str, BaseNode]) -> tuple[ModelAnswer | None, Problem | None]:
    """Parse one reply and check it against the chunks the caller may read that were in context:
    the one place a draft is validated (`grounding.check`)."""
    try:
        answer = ModelAnswer.model_validate_json(_strip_fences(text))
    except ValidationError as exc:
        first = exc.errors()[0]["msg"] if exc.errors() else str(exc)
        return None, Problem(
            "invalid_json",
            f"it was not one JSON object matching the schema ({first}).",
            "The model did not return valid JSON matching the schema",
        )
    if not answer.answerable:
        return answer, None
    return answer, check(answer, readable)


def fail_closed_reason(problems: Sequence[Problem]) -> str:
    last = problems[-1]
    repeated = len(problems) > 1 and all(p.kind == last.kind for p in problems)
    return f"{last.summary}{' twice' if repeated else ' after a retry'}; no answer was given."


def _is_timeout(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):  # walk the cause chain, bounded
        if seen is None:
            return False
        if isinstance(seen, TimeoutError) or "timeout" in type(seen).__name__.lower():
            return True
        if getattr(seen, "code", None) in (408, 504):  # google.genai APIError: deadline exceeded
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def provider_failure_reason(exc: BaseException) -> str:
    if _is_timeout(exc):
        return TIMEOUT_REASON
    code = getattr(exc, "code", None)
    label = type(exc).__name__ + (f" {code}" if isinstance(code, int) else "")
    return PROVIDER_ERROR_REASON.format(error=label)


def _words(text: str | None) -> int:
    return len((text or "").split())


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def token_usage(response: ChatResponse, sent: Sequence[ChatMessage]) -> tuple[int, int]:
    """(tokens_in, tokens_out) from the provider's usage, else a word-count estimate."""
    raw = response.raw or {}
    gemini = _get(raw, "usage_metadata")
    if gemini and _get(gemini, "prompt_token_count") is not None:
        out = (_get(gemini, "candidates_token_count") or 0) + (_get(gemini, "thoughts_token_count") or 0)
        return int(_get(gemini, "prompt_token_count")), int(out)
    usage = _get(raw, "usage")
    if usage:
        tin = _get(usage, "prompt_tokens") or _get(usage, "input_tokens")
        tout = _get(usage, "completion_tokens") or _get(usage, "output_tokens")
        if tin is not None and tout is not None:
            return int(tin), int(tout)
    return sum(_words(m.content) for m in sent), _words(response.message.content)


PROMPT_KEY = "cited_answer_prompt"  # its name in get_prompts / update_prompts


MISSING_CHUNKS = ("CitedAnswerSynthesizer needs the caller's chunks (chunks=policydesk.retriever(user).chunks, or "
                  "CallerChunks(engine, clearance)): it re-reads every node it is given under the caller's clearance "
                  "before the model sees it, whatever assembled the context.")


class CitedAnswerSynthesizer(BaseSynthesizer):
    """Ask the LLM for a `ModelAnswer` over the given nodes; check it; retry once; fail closed.

    The last gate: every node handed in is re-read from the store under the caller's clearance
    (`chunks`), and only what the caller may read, with its stored text and metadata, reaches
    the prompt and the checks. A node that does not exist or is above the clearance is dropped.
    """

    def __init__(self, llm: LLM, *, chunks: CallerChunks | None = None, system_prompt: str = SYSTEM_PROMPT,
                 prompt: BasePromptTemplate | None = None, max_attempts: int = 2,
                 llm_kwargs: dict[str, Any] | None = None, callback_manager: CallbackManager | None = None) -> None:
        if not isinstance(llm, LLM):
            raise TypeError(f"CitedAnswerSynthesizer needs a LlamaIndex LLM, not {type(llm).__name__}")
        if max_attempts < 1:
            raise ValueError("max_attempts (the first try plus retries after a rejected reply) must be at least 1")
        if chunks is not None and not isinstance(chunks, CallerChunks):
            raise TypeError(MISSING_CHUNKS)
        super().__init__(llm=llm, callback_manager=callback_manager)
        self.chunks = chunks
        self.max_attempts = max_attempts
        self.llm_kwargs = dict(llm_kwargs or {})  # extra kwargs for llm.chat
        self._system_prompt = system_prompt  # behind a plain PromptTemplate given as the user turn
        self._prompt = checked_prompt(prompt or cited_answer_prompt(system_prompt), system_prompt)

    @property
    def llm(self) -> LLM:
        return self._llm

    @property
    def model_name(self) -> str:
        return self._llm.metadata.model_name

    @property
    def prompt(self) -> BasePromptTemplate:
        return self._prompt

    # -- PromptMixin ------------------------------------------------------------------------------
    def _get_prompts(self) -> PromptDictType:
        return {PROMPT_KEY: self._prompt}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        if PROMPT_KEY in prompts:
            self._prompt = checked_prompt(prompts[PROMPT_KEY], self._system_prompt)

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    # -- BaseSynthesizer: a Response with the cited nodes ------------------------------------------
    @dispatcher.span
    def synthesize(self, query: QueryType, nodes: list[NodeWithScore],
                   additional_source_nodes: Sequence[NodeWithScore] | None = None, **response_kwargs: Any) -> Response:
        with self._synthesis(query, additional_source_nodes, response_kwargs) as (question, notes, done):
            return done(self._drive(self._flow(question, nodes, notes, self._chunks())))[1]

    @dispatcher.span
    async def asynthesize(self, query: QueryType, nodes: list[NodeWithScore],
                          additional_source_nodes: Sequence[NodeWithScore] | None = None,
                          **response_kwargs: Any) -> Response:
        with self._synthesis(query, additional_source_nodes, response_kwargs) as (question, notes, done):
            return done(await self._adrive(self._flow(question, nodes, notes, self._chunks())))[1]

    # -- the pipeline's entry points: the outcome itself -------------------------------------------
    @dispatcher.span
    def synthesize_outcome(self, question: str, nodes: Sequence[NodeWithScore], notes: Sequence[str] = (),
                           chunks: CallerChunks | None = None) -> SynthesisOutcome:
        """`chunks`: this request's caller (the pipeline shares one synthesizer across callers)."""
        with self._synthesis(question, None, {"notes": notes}) as (question, notes, done):
            return done(self._drive(self._flow(question, nodes, notes, self._chunks(chunks))))[0]

    @dispatcher.span
    async def asynthesize_outcome(self, question: str, nodes: Sequence[NodeWithScore], notes: Sequence[str] = (),
                                  chunks: CallerChunks | None = None) -> SynthesisOutcome:
        with self._synthesis(question, None, {"notes": notes}) as (question, notes, done):
            return done(await self._adrive(self._flow(question, nodes, notes, self._chunks(chunks))))[0]

    def _chunks(self, given: CallerChunks | None = None) -> CallerChunks:
        chunks = given or self.chunks
        if not isinstance(chunks, CallerChunks):
            raise TypeError(MISSING_CHUNKS)
        return chunks

    def get_response(self, query_str: str, text_chunks: Sequence[str], **response_kwargs: Any) -> str:
        raise NotImplementedError(_TEXT_ONLY)

    async def aget_response(self, query_str: str, text_chunks: Sequence[str], **response_kwargs: Any) -> str:
        raise NotImplementedError(_TEXT_ONLY)

    @contextmanager
    def _synthesis(self, query: QueryType, additional: Sequence[NodeWithScore] | None,
                   response_kwargs: dict[str, Any]) -> Iterator[tuple]:
        """The start event and callback around one synthesis; `done(outcome)` builds the Response
        and fires the end event, returning (outcome, response)."""
        unknown = sorted(set(response_kwargs) - {"notes"})
        if unknown:
            raise TypeError(f"CitedAnswerSynthesizer.synthesize got unexpected keyword(s): {', '.join(unknown)}")
        notes = list(response_kwargs.get("notes") or ())
        bundle = QueryBundle(query_str=query) if isinstance(query, str) else query
        dispatcher.event(SynthesizeStartEvent(query=bundle))
        with self._callback_manager.event(CBEventType.SYNTHESIZE,
                                          payload={EventPayload.QUERY_STR: bundle.query_str}) as event:
            def done(outcome: SynthesisOutcome) -> tuple[SynthesisOutcome, Response]:
                response = cited_response(outcome, additional)
                event.on_end(payload={EventPayload.RESPONSE: response})
                dispatcher.event(SynthesizeEndEvent(query=bundle, response=response))
                return outcome, response

            yield bundle.query_str, notes, done

    # -- one flow, two drivers --------------------------------------------------------------------
    def _chat(self, request: DraftRequest) -> ChatResponse:
        """One draft. The only seam a subclass needs to draft differently (the evals' oracle)."""
        return self._llm.chat(request.messages, **self.llm_kwargs)

    async def _achat(self, request: DraftRequest) -> ChatResponse:
        return await self._llm.achat(request.messages, **self.llm_kwargs)

    def _drive(self, flow: Generator[DraftRequest, _Reply, SynthesisOutcome]) -> SynthesisOutcome:
        return _run(flow, lambda request: _Reply(response=self._chat(request)))

    async def _adrive(self, flow: Generator[DraftRequest, _Reply, SynthesisOutcome]) -> SynthesisOutcome:
        try:
            request = next(flow)
            while True:
                request = flow.send(await _areply(lambda: self._achat(request)))
        except StopIteration as done:
            return done.value

    def _flow(
        self, question: str, nodes: Sequence[NodeWithScore], notes: Sequence[str], chunks: CallerChunks
    ) -> Generator[DraftRequest, _Reply, SynthesisOutcome]:
        attempts: list[dict] = []
        prompts: list[str] = []
        # The context is what the caller may read, as stored; the rest never reaches the model.
        context, dropped = chunks.reread(nodes)

        def outcome(answer: ModelAnswer | None, reason: str | None, failed: bool = False) -> SynthesisOutcome:
            return SynthesisOutcome(
                answer=answer,
                abstain_reason=reason,
                attempts=attempts,
                prompts=prompts,
                tokens_in=sum(a["tokens_in"] for a in attempts),
                tokens_out=sum(a["tokens_out"] for a in attempts),
                model=self.model_name,
                failed_closed=failed,
                context=context,
                dropped=dropped,
            )

        if not context:
            return outcome(None, NO_CONTEXT_REASON)
        readable = {n.node.node_id: n.node for n in context}
        allowed = list(readable)
        messages = self._prompt.format_messages(**prompt_variables(question, context, notes))
        problems: list[Problem] = []
        for _ in range(self.max_attempts):
            prompts.append("\n".join(str(m.content) for m in messages))
            reply = yield DraftRequest(messages, context)
            if reply.error is not None or reply.response is None:
                error = reply.error or RuntimeError("no reply")
                attempts.append(
                    {"raw": None, "error": f"{type(error).__name__}: {error}", "tokens_in": 0, "tokens_out": 0}
                )
                return outcome(None, provider_failure_reason(error), failed=True)
            text = reply.response.message.content or ""
            tokens_in, tokens_out = token_usage(reply.response, messages)
            answer, problem = validate_reply(text, readable)
            attempts.append({
                "raw": text,
                "error": problem.detail if problem else None,
                "tokens_in": tokens_in,
                "tokens_out": tokens_out,
            })
            if problem is None and answer is not None:
                if not answer.answerable:
                    return outcome(None, answer.reason or MODEL_ABSTAINED_REASON)
                return outcome(answer, None)
            problems.append(problem)
            messages = [
                *messages,
                ChatMessage(role=MessageRole.ASSISTANT, content=text or "(empty reply)"),
                build_retry_message(problem.detail, allowed),
            ]
        return outcome(None, fail_closed_reason(problems), failed=True)


_TEXT_ONLY = ("CitedAnswerSynthesizer answers over nodes, not bare text chunks: citations must name the id of a "
              "node in context. Call synthesize(query, nodes).")


def _run(flow: Generator[DraftRequest, _Reply, SynthesisOutcome],
         ask: Callable[[DraftRequest], _Reply]) -> SynthesisOutcome:
    try:
        request = next(flow)
        while True:
            try:
                reply = ask(request)
            except Exception as exc:  # any provider failure fails closed
                reply = _Reply(error=exc)
            request = flow.send(reply)
    except StopIteration as done:
        return done.value


async def _areply(call: Callable[[], Awaitable[ChatResponse]]) -> _Reply:
    try:
        return _Reply(response=await call())
    except Exception as exc:  # any provider failure fails closed
        return _Reply(error=exc)
