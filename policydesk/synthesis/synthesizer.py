"""Generate a cited JSON answer from the sources in context, or abstain.

Every citation must name a chunk that was in context and every claim must cite
one: a reply that breaks this is retried once with a message naming the
offending ids, then the synthesizer fails closed (no answer, a stated reason).
A provider error or timeout fails closed at once.

Not a `BaseSynthesizer`: its `get_response` sees only chunk text (the ids the
citations must match are gone) and its `synthesize` returns a `Response`, while
callers here need the validated `ModelAnswer` and the attempts for the trace.

The flow is written once, as a generator that yields the messages to send and
receives the provider's reply; `synthesize` and `asynthesize` only drive it.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import llama_index.core.instrumentation as instrument
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field
from llama_index.core.llms import LLM
from llama_index.core.schema import NodeWithScore
from pydantic import ValidationError

from policydesk.synthesis.prompt import SYSTEM_PROMPT, build_messages, build_retry_message
from policydesk.synthesis.schema import ModelAnswer

dispatcher = instrument.get_dispatcher(__name__)

NO_CONTEXT_REASON = "No sources the caller may see answered this question."
TIMEOUT_REASON = "The model provider did not respond in time; no answer was given."
PROVIDER_ERROR_REASON = "The model provider returned an error ({error}); no answer was given."
MODEL_ABSTAINED_REASON = "The sources in context do not answer this question."

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)


@dataclass
class SynthesisOutcome:
    answer: ModelAnswer | None
    abstain_reason: str | None
    attempts: list[dict] = field(default_factory=list)  # raw, error, tokens_in, tokens_out
    tokens_in: int = 0
    tokens_out: int = 0
    model: str = ""
    # True when the model was asked but no answer survived: provider failure or twice-invalid reply
    # (not when the context was empty or the model itself said the sources do not answer).
    failed_closed: bool = False

    @property
    def answered(self) -> bool:
        return self.answer is not None


@dataclass(frozen=True)
class Problem:
    """Why a reply was rejected: `detail` goes to the model, `summary` into the fail-closed reason."""

    kind: str
    detail: str
    summary: str


@dataclass(frozen=True)
class _Reply:
    response: ChatResponse | None = None
    error: BaseException | None = None


def _strip_fences(text: str) -> str:
    m = _FENCE.match(text)
    return m.group(1) if m else text.strip()


def _quoted(ids: Sequence[str]) -> str:
    return ", ".join(f'"{i}"' for i in ids)


def validate_reply(text: str, allowed_ids: Sequence[str]) -> tuple[ModelAnswer | None, Problem | None]:
    """Parse and check one reply against the ids that were in context."""
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
    allowed = set(allowed_ids)
    unknown = list(dict.fromkeys(c for claim in answer.claims for c in claim.citations if c not in allowed))
    if unknown:
        label = "id" if len(unknown) == 1 else "ids"
        return answer, Problem(
            "unknown_citation",
            f"it cited {label} {_quoted(unknown)}, which {'is' if len(unknown) == 1 else 'are'} "
            "not the id of any source block in this conversation.",
            f"The model cited a source that was not in context ({label} {', '.join(unknown)})",
        )
    uncited = [i + 1 for i, claim in enumerate(answer.claims) if not claim.citations]
    if uncited:
        return answer, Problem(
            "uncited_claim",
            f"claim {', '.join(map(str, uncited))} had no citations; every claim must cite at least one source id.",
            "The model made a claim without citing a source",
        )
    if not answer.claims or not answer.answer.strip():
        return answer, Problem(
            "no_claims",
            'it said the question was answerable but gave no answer text or no cited claims.',
            "The model gave an answer without cited claims",
        )
    return answer, None


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


class CitedAnswerSynthesizer(BaseModel):
    """Ask the LLM for a `ModelAnswer` over the given nodes; validate; retry once; fail closed."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    llm: LLM
    system_prompt: str = SYSTEM_PROMPT
    max_attempts: int = Field(default=2, ge=1, description="First try plus retries after a rejected reply.")
    llm_kwargs: dict[str, Any] = Field(default_factory=dict, description="Extra kwargs for llm.chat.")

    @property
    def model_name(self) -> str:
        return self.llm.metadata.model_name

    @dispatcher.span
    def synthesize(
        self, question: str, nodes: Sequence[NodeWithScore], notes: Sequence[str] = ()
    ) -> SynthesisOutcome:
        flow = self._flow(question, nodes, notes)
        try:
            messages = next(flow)
            while True:
                try:
                    reply = _Reply(response=self.llm.chat(messages, **self.llm_kwargs))
                except Exception as exc:  # any provider failure fails closed
                    reply = _Reply(error=exc)
                messages = flow.send(reply)
        except StopIteration as done:
            return done.value

    @dispatcher.span
    async def asynthesize(
        self, question: str, nodes: Sequence[NodeWithScore], notes: Sequence[str] = ()
    ) -> SynthesisOutcome:
        flow = self._flow(question, nodes, notes)
        try:
            messages = next(flow)
            while True:
                try:
                    reply = _Reply(response=await self.llm.achat(messages, **self.llm_kwargs))
                except Exception as exc:  # any provider failure fails closed
                    reply = _Reply(error=exc)
                messages = flow.send(reply)
        except StopIteration as done:
            return done.value

    def _flow(
        self, question: str, nodes: Sequence[NodeWithScore], notes: Sequence[str]
    ) -> Generator[list[ChatMessage], _Reply, SynthesisOutcome]:
        attempts: list[dict] = []

        def outcome(answer: ModelAnswer | None, reason: str | None, failed: bool = False) -> SynthesisOutcome:
            return SynthesisOutcome(
                answer=answer,
                abstain_reason=reason,
                attempts=attempts,
                tokens_in=sum(a["tokens_in"] for a in attempts),
                tokens_out=sum(a["tokens_out"] for a in attempts),
                model=self.model_name,
                failed_closed=failed,
            )

        if not nodes:
            return outcome(None, NO_CONTEXT_REASON)
        allowed = list(dict.fromkeys(n.node.node_id for n in nodes))
        messages = build_messages(question, nodes, notes, self.system_prompt)
        problems: list[Problem] = []
        for _ in range(self.max_attempts):
            reply = yield messages
            if reply.error is not None or reply.response is None:
                error = reply.error or RuntimeError("no reply")
                attempts.append(
                    {"raw": None, "error": f"{type(error).__name__}: {error}", "tokens_in": 0, "tokens_out": 0}
                )
                return outcome(None, provider_failure_reason(error), failed=True)
            text = reply.response.message.content or ""
            tokens_in, tokens_out = token_usage(reply.response, messages)
            answer, problem = validate_reply(text, allowed)
            attempts.append({
                "raw": text,
                "error": problem.detail if problem else None,
                "tokens_in": tokens_in,
                "tokens_out": tokens_out,
            })
            if problem is None and answer is not None:
                if not answer.answerable:
                    return outcome(None, answer.insufficient_evidence_reason or MODEL_ABSTAINED_REASON)
                return outcome(answer, None)
            problems.append(problem)
            messages = [
                *messages,
                ChatMessage(role=MessageRole.ASSISTANT, content=text or "(empty reply)"),
                build_retry_message(problem.detail, allowed),
            ]
        return outcome(None, fail_closed_reason(problems), failed=True)
