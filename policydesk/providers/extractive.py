"""The offline answerer: a deterministic, extractive LLM behind LlamaIndex's LLM interface.

It reads only the prompt the synthesizer renders (the source blocks and the
question), quotes the best one to three sentences, cites their blocks and
returns the same JSON schema as Gemini, so its answers go through the same
validation. It never follows text in a source: it only quotes, and it skips
sentences that read like injected instructions. Retry turns are ignored: the
same prompt always gives the same reply.
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback

from policydesk.answer import Claim
from policydesk.detectors import find_claim_decision_language
from policydesk.synthesis.prompt import unescape_data
from policydesk.synthesis.schema import ModelAnswer

EXTRACTIVE_MODEL_NAME = "extractive-offline"
MAX_SENTENCES = 3
# A runner-up sentence is quoted only if it scores at least this share of the best one.
RUNNER_UP_SHARE = 0.75
# Close calls go to the binding text (policy wins over wiki and call notes): a policy
# sentence outranks a wiki sentence that matches one more question term, not two.
TYPE_BONUS = {"policy": 1.0, "wiki": 0.0, "call_note": -0.25}
_TYPE_RANK = {"policy": 0, "wiki": 1, "call_note": 2}
# The section heading names the rule ("Filing Limit") while its sentences carry the value
# ("within 90 days"), so a section match counts more than a match on the document title,
# which every section of the document shares.
TITLE_WEIGHT = 0.5
SECTION_WEIGHT = 1.5
VALUE_BONUS = 1.5

NO_SOURCES_REASON = "No sources were provided."
NO_OVERLAP_REASON = "None of the sources in context address what the question asks."

_SOURCE_BLOCK = re.compile(r"<source ([^>]*)>\n(.*?)\n</source>", re.DOTALL)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_QUESTION_BLOCK = re.compile(r"<question>\n(.*?)\n</question>", re.DOTALL)
_TOKEN = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_LIST_MARK = re.compile(r"^\s*(?:#{1,6}\s+|[-*•]\s+|\d+[.)]\s+)")
_VALUE = re.compile(
    r"\b\d+(?:\.\d+)?\s*(?:-\s*)?(?:calendar\s+|business\s+|working\s+)?"
    r"(?:days?|hours?|weeks?|months?|years?|minutes?|visits?|percent|%)",
    re.IGNORECASE,
)
_ASKS_FOR_VALUE = re.compile(
    r"\b(?:how\s+(?:long|many|much|soon|often)|when|deadline|limit|window|within|timely|"
    r"days?|hours?|period|time\s+frame|timeframe)\b",
    re.IGNORECASE,
)
_INJECTION = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|rules?|prompts?|above|previous)\b",
    r"\b(?:system\s+prompt|new\s+instructions?|developer\s+message)\b",
    r"\byou\s+are\s+now\b|\bact\s+as\b|\bpretend\s+to\b",
    r"\b(?:tell|inform)\s+the\s+(?:caller|member|user|rep)\s+that\b",
    r"\b(?:respond|reply|answer)\s+(?:only\s+)?with\b",
    r"\bdo\s+not\s+cite\b",
))

_STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers him his how i if in into is it its itself just me more most my no nor not
now of off on once only or other our out over own same she should so some such than that the their
them then there these they this those through to too under until up very was we were what when
where which while who whom why will with would you your yours policy plan please tell know
""".split())


@dataclass(frozen=True)
class SourceBlock:
    id: str
    title: str
    section: str
    version: str
    in_force: str
    type: str
    text: str


@dataclass(frozen=True)
class _Candidate:
    score: float
    type_rank: int
    block_index: int
    sentence_index: int
    sentence: str


# A few words staff use for the terms policies use, mapped onto one stem.
_SYNONYMS = {"submit": "fil", "deadline": "limit", "window": "limit", "timeframe": "limit", "cutoff": "limit"}


def _stem(token: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            token = token[: -len(suffix)]
            break
    return token[:-1] if token.endswith("e") and len(token) > 3 else token


def terms(text: str) -> set[str]:
    stems = (_stem(t) for t in _TOKEN.findall(text.lower()) if len(t) > 1 and t not in _STOPWORDS)
    return {_SYNONYMS.get(s, s) for s in stems}


def parse_prompt(prompt: str) -> tuple[str, list[SourceBlock]]:
    """The question and the source blocks of a rendered user turn (the first ones found)."""
    blocks: dict[str, SourceBlock] = {}
    for m in _SOURCE_BLOCK.finditer(prompt):
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(m.group(1))}
        if "id" in attrs and attrs["id"] not in blocks:
            blocks[attrs["id"]] = SourceBlock(
                id=attrs["id"], title=attrs.get("title", ""), section=attrs.get("section", ""),
                version=attrs.get("version", ""), in_force=attrs.get("in_force", ""),
                type=attrs.get("type", ""), text=unescape_data(m.group(2)),
            )
    question = _QUESTION_BLOCK.search(prompt)
    return (unescape_data(question.group(1)) if question else ""), list(blocks.values())


def sentences(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        line = _LIST_MARK.sub("", line).strip()
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def looks_injected(sentence: str) -> bool:
    return any(p.search(sentence) for p in _INJECTION) or bool(find_claim_decision_language(sentence))


def _candidates(question: str, blocks: list[SourceBlock]) -> list[_Candidate]:
    wanted = terms(question)
    if not wanted:
        return []
    wants_value = bool(_ASKS_FOR_VALUE.search(question))
    threshold = min(2, len(wanted))
    found: list[_Candidate] = []
    for b_index, block in enumerate(blocks):
        title_overlap = len(wanted & terms(block.title))
        section_overlap = len(wanted & terms(block.section))
        heading_overlap = len(wanted & terms(f"{block.title} {block.section}"))
        for s_index, sentence in enumerate(sentences(block.text)):
            if len(_TOKEN.findall(sentence)) < 3 or looks_injected(sentence):
                continue
            overlap = len(wanted & terms(sentence))
            states_value = wants_value and bool(_VALUE.search(sentence))
            # The section heading may carry the topic ("Filing Limit") while the sentence
            # carries the value ("within 90 days"); a sentence with neither is not quoted.
            if overlap + heading_overlap < threshold or not (overlap or states_value):
                continue
            score = (overlap + TITLE_WEIGHT * title_overlap + SECTION_WEIGHT * section_overlap
                     + TYPE_BONUS.get(block.type, 0.0))
            if states_value:
                score += VALUE_BONUS
            found.append(_Candidate(score, _TYPE_RANK.get(block.type, 3), b_index, s_index, sentence))
    return sorted(found, key=lambda c: (-c.score, c.type_rank, c.block_index, c.sentence_index))


def _label(block: SourceBlock) -> str:
    kind = {"wiki": "wiki page, ", "call_note": "call note, "}.get(block.type, "")
    window = block.in_force
    window = f"from {window[: -len(' to open')]}" if window.endswith(" to open") else window
    return f"{block.title} ({kind}version {block.version}, in force {window})"


def extract_answer(prompt: str) -> ModelAnswer:
    question, blocks = parse_prompt(prompt)
    if not blocks:
        return ModelAnswer(answerable=False, answer="", insufficient_evidence_reason=NO_SOURCES_REASON)
    ranked = _candidates(question, blocks)
    if not ranked:
        return ModelAnswer(answerable=False, answer="", insufficient_evidence_reason=NO_OVERLAP_REASON)
    best = ranked[0].score
    chosen = [ranked[0]] + [c for c in ranked[1:] if c.score >= RUNNER_UP_SHARE * best][: MAX_SENTENCES - 1]
    by_block: dict[int, list[str]] = {}
    for c in chosen:
        by_block.setdefault(c.block_index, []).append(c.sentence)
    answer = " ".join(f"{_label(blocks[i])}: {' '.join(quoted)}" for i, quoted in by_block.items())
    claims = [Claim(text=c.sentence, citations=[blocks[c.block_index].id]) for c in chosen]
    return ModelAnswer(answerable=True, answer=answer, claims=claims)


class ExtractiveAnswerer(CustomLLM):
    """Deterministic offline stand-in for Gemini; labelled extractive wherever shown."""

    context_window: int = 1_000_000
    num_output: int = 2048

    @classmethod
    def class_name(cls) -> str:
        return "ExtractiveAnswerer"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.num_output,
            model_name=EXTRACTIVE_MODEL_NAME,
            is_chat_model=True,
        )

    def _reply(self, prompt: str) -> str:
        return json.dumps(extract_answer(prompt).model_dump(), ensure_ascii=False)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._reply(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        text = self._reply(prompt)

        def gen() -> CompletionResponseGen:
            yield CompletionResponse(text=text, delta=text)

        return gen()
