"""Post-flight: code checks on a drafted answer before anyone sees it.

Post-flight can only make a decision stricter: allow < abstain < refuse, and the
request's final action is the strictest of the pre-flight and post-flight ones.

An identifier-shaped string in the draft that appears verbatim in the text of a source in
context (a plan's fax line quoted from its contacts page) is not a member identifier: that text
passed ingest screening, which runs the same detector with the source type in view. One that is
in no source text was made up or carried in, and refuses.

Citations are not re-checked here: the synthesizer admits an answer only when every claim cites
a chunk that was in context (`synthesizer.validate_reply`, retried once, then failed closed), so
a draft that reaches post-flight is already cited.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from policydesk.detectors import find_claim_decision_language
from policydesk.detectors.identifiers import find_identifier_spans
from policydesk.synthesis.grounding import comparable
from policydesk.synthesis.schema import ModelAnswer

Action = Literal["allow", "abstain", "refuse"]
ACTION_ORDER: dict[str, int] = {"allow": 0, "abstain": 1, "refuse": 2}


@dataclass(frozen=True)
class PostflightVerdict:
    action: Action
    reasons: list[str] = field(default_factory=list)


def combine(preflight_action: Action, postflight_action: Action) -> Action:
    """The stricter of the two actions: post-flight escalates, never relaxes."""
    return max(preflight_action, postflight_action, key=ACTION_ORDER.__getitem__)


def _answer_text(answer: ModelAnswer) -> str:
    return "\n".join([answer.answer, *(claim.text for claim in answer.claims)])


def _squeeze(text: str) -> str:
    return " ".join(text.split())


def unsourced_identifier_kinds(text: str, context_texts: Iterable[str] = ()) -> list[str]:
    """Kinds of identifier found in text, leaving out every span that some context text holds verbatim
    (whitespace runs aside), in first-seen order, no repeats."""
    sources = [_squeeze(t) for t in context_texts]
    kinds = []
    for finding in find_identifier_spans(text):
        span = _squeeze(text[finding.start:finding.end])
        if not any(span in source for source in sources):
            kinds.append(finding.kind)
    return list(dict.fromkeys(kinds))


def _own_words(answer: ModelAnswer, sources: list[str]) -> str:
    """The answer's text less the parts that are a source's words verbatim: a policy's own
    "a late claim is denied" is the rule being explained, not a decision on someone's claim."""
    parts = [answer.answer, *(claim.text for claim in answer.claims)]
    return "\n".join(p for p in parts if not any(comparable(p) in source for source in sources))


def check_draft(answer: ModelAnswer, context_texts: Iterable[str] = ()) -> PostflightVerdict:
    """Refuse an answer that leaks a member identifier (one no context text holds) or announces a
    claim decision in its own words; abstain from one that says the sources do not answer."""
    refuse: list[str] = []
    abstain: list[str] = []
    context_texts = list(context_texts)
    text = _answer_text(answer)
    if kinds := unsourced_identifier_kinds(text, context_texts):
        refuse.append(f"The drafted answer contains a member identifier ({', '.join(kinds)}).")
    if phrases := find_claim_decision_language(_own_words(answer, [comparable(t) for t in context_texts])):
        refuse.append(f"The drafted answer announces a claim decision ({'; '.join(phrases)}).")
    if not answer.answerable:
        abstain.append(answer.reason or "The drafted answer says the sources do not answer.")
    if refuse:
        return PostflightVerdict("refuse", refuse + abstain)
    if abstain:
        return PostflightVerdict("abstain", abstain)
    return PostflightVerdict("allow", [])
