"""Early refusal: screen a question before retrieval, in code, with no model call.

Order: empty -> too long -> member identifier -> claim action -> topic gate
(role) -> out of scope. The first check that fires decides the refusal.

Topic-gated questions get the same reason and byte-identical message as
out-of-scope ones, so a refusal never reveals that a restricted document
exists.

Borderline decisions (pinned in tests/data/refusal_cases.yaml):
- Questions about how a rule works pass even when they use claim-action verbs
  ("how are claims priced for out-of-network providers?", "when does the plan
  pay secondary claims?", "can a claim be denied for late filing?"). Only a
  request addressed to PolicyDesk (imperative, "please ...", "can you ...") or
  a decision asked about one specific claim ("should this claim be denied?")
  is a claim action.
- Toll-free numbers (800, 833, 844, 855, 866, 877, 888) are plan or provider
  service lines, not member phone numbers, and are not flagged.
- Any run of 8+ digits near the words claim / reference / member / subscriber
  is treated as an identifier, except an 8-digit run that is a valid YYYYMMDD
  date ("claims filed between 20250101 and 20251231"). A 10-digit number
  labelled NPI is a public provider identifier and is not flagged.
- A date of birth is flagged only when it is a full date next to DOB words;
  "born on or after 2000-01-01" (an eligibility rule) passes.
- The out-of-scope check is conservative: any health-plan vocabulary (plan,
  claim, member, provider, benefit, coverage, ...) passes it, even if the rest
  of the question looks unrelated. Retrieval then abstains if nothing applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from enum import Enum

from policydesk.access import clearance_for, topic_denied

DEFAULT_MAX_CHARS = 1000


class RefusalReason(str, Enum):
    member_identifier = "member_identifier"
    claim_action = "claim_action"
    out_of_scope = "out_of_scope"
    empty_question = "empty_question"
    question_too_long = "question_too_long"


@dataclass(frozen=True)
class Refusal:
    reason: RefusalReason
    message: str


MEMBER_IDENTIFIER_MESSAGE = (
    "This question contains what looks like a member identifier (member or "
    "subscriber ID, SSN, phone number, claim number, or a name with a date of "
    "birth). PolicyDesk answers policy questions only; remove personal details "
    "and ask about the rule."
)
CLAIM_ACTION_MESSAGE = (
    "PolicyDesk explains policy; it cannot approve, deny, pay, price, adjudicate "
    "or override a claim. Use the claims platform for claim actions."
)
# Also used, unchanged, for topic-gated questions (no existence leak).
OUT_OF_SCOPE_MESSAGE = (
    "PolicyDesk can't help with that question. Ask about a plan policy you work "
    "with, or contact your supervisor."
)
EMPTY_QUESTION_MESSAGE = "Type a policy question to ask PolicyDesk."
QUESTION_TOO_LONG_MESSAGE = (
    "This question is longer than {max_chars} characters. Ask about one policy "
    "rule at a time, in a shorter question."
)

_I = re.IGNORECASE

# ---------------------------------------------------------------- identifiers

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE = (
    r"(?:\d{1,2}[/.-]\d{1,2}[/.-](?:\d{4}|\d{2})"
    r"|\d{4}-\d{1,2}-\d{1,2}"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH},?\s+\d{{4}})"
)
_DOB_WORDS = r"(?:d\.?o\.?b\b\.?|date\s+of\s+birth|birth\s*date|birthday|born(?:\s+on)?)"
# Case-sensitive on purpose: a capitalized "First Last" (optional middle initial).
_NAME = r"\b[A-Z][a-z]+(?:\s+[A-Z]\.?)?\s+[A-Z][a-z'-]+\b"
_TOLL_FREE = {"800", "833", "844", "855", "866", "877", "888"}

_MEMBER_ID = re.compile(r"\bCVM[-\s]?\d{8}(?!\d)", _I)
_SUBSCRIBER_ID = re.compile(r"\bCVS[-\s]?\d{8}(?!\d)", _I)
_CLAIM_ID = re.compile(r"\bCLM[-\s]?\d{9}(?!\d)", _I)
_LONG_NUMBER = re.compile(r"(?<![\w-])#?\d{8,}(?![\w-])")
_CLAIM_CONTEXT = re.compile(r"\b(?:claims?|ref(?:erence)?|icn|dcn)\b", _I)
_MEMBER_CONTEXT = re.compile(r"\b(?:member|subscriber|patient|account|policy\s*holder)\b", _I)
_SSN_DASHED = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")
_SSN_CONTEXT = re.compile(
    r"\b(?:ssn\b|ss#|social\s+security\b(?:\s+(?:number|no\.?|#))?)[^.?!\d]{0,25}"
    r"(?:\d{3}[\s.-]?\d{2}[\s.-]?\d{4}|(?:ending|last\s+(?:4|four))[^.?!\d]{0,12}\d{4})(?!\d)",
    _I,
)
_PHONE = re.compile(
    r"(?<![\w-])(?:\+?1[\s.-]?)?(?:\((?P<a1>\d{3})\)\s?|(?P<a2>\d{3})[\s.-]?)"
    r"\d{3}[\s.-]?\d{4}(?![\w-])"
)
_DOB_WORD_RE = re.compile(rf"\b{_DOB_WORDS}", _I)
_DATE_RE = re.compile(_DATE, _I)
# "born on or after 2000-01-01" states an eligibility rule, not someone's birth date.
_DOB_GAP_RULE = re.compile(
    r"[.?!]|\b(?:or|and|before|after|prior|since|until|between|earlier|later|than|from|to)\b", _I
)
_NAME_DATE_DOB = re.compile(rf"{_NAME}[\s,:(]+(?i:{_DATE})[\s,)]*(?i:{_DOB_WORDS})")


def _has_date_of_birth(text: str) -> bool:
    for m in _DOB_WORD_RE.finditer(text):
        found = _DATE_RE.search(text, m.end(), m.end() + 60)
        if found and found.start() - m.end() <= 40 and not _DOB_GAP_RULE.search(
            text, m.end(), found.start()
        ):
            return True
    return bool(_NAME_DATE_DOB.search(text))


# An NPI is a public provider identifier, not member PHI.
_NPI_LABEL = re.compile(r"\bNPI\b[\s:#]*$", _I)


def _is_compact_date(digits: str) -> bool:
    """'20250101': an 8-digit YYYYMMDD date, not a claim or member number."""
    if len(digits) != 8:
        return False
    try:
        date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
    except ValueError:
        return False
    return 1900 <= int(digits[:4]) <= 2099


def _identifier_numbers(text: str) -> list[re.Match[str]]:
    return [
        m for m in _LONG_NUMBER.finditer(text)
        if not _is_compact_date(m.group(0).lstrip("#"))
        and not _NPI_LABEL.search(text, max(0, m.start() - 12), m.start())
    ]


def _is_member_phone(text: str, m: re.Match[str]) -> bool:
    if (m.group("a1") or m.group("a2")) in _TOLL_FREE:
        return False
    return not _NPI_LABEL.search(text, max(0, m.start() - 12), m.start())


def _near(text: str, start: int, end: int, pattern: re.Pattern[str], width: int = 40) -> bool:
    return bool(pattern.search(text[max(0, start - width):end + width]))


def find_member_identifiers(text: str) -> list[str]:
    """Kinds of member identifier found in text, in a fixed order, no repeats.

    Shared with the ingester and the post-flight check to keep PHI out.
    """
    kinds: list[str] = []
    if _MEMBER_ID.search(text):
        kinds.append("member_id")
    if _SUBSCRIBER_ID.search(text):
        kinds.append("subscriber_id")
    numbers = _identifier_numbers(text)
    if _CLAIM_ID.search(text) or any(_near(text, m.start(), m.end(), _CLAIM_CONTEXT) for m in numbers):
        kinds.append("claim_number")
    if "member_id" not in kinds and any(
        _near(text, m.start(), m.end(), _MEMBER_CONTEXT) for m in numbers
    ):
        kinds.append("member_id")
    if _SSN_DASHED.search(text) or _SSN_CONTEXT.search(text):
        kinds.append("ssn")
    if any(_is_member_phone(text, m) for m in _PHONE.finditer(text)):
        kinds.append("phone_number")
    if _has_date_of_birth(text):
        kinds.append("date_of_birth")
    return kinds


# --------------------------------------------------------------- claim action

_ACT_VERB = (
    r"(?:approve|deny|pay|price|re-?price|adjudicate|re-?adjudicate|override|overturn|"
    r"reprocess|re-?process|reverse|void|mark)"
)
# A request addressed to PolicyDesk: start of a clause, "please", "can you", ...
_REQUEST = (
    r"(?:^|[.!?;]\s*|,\s*(?:and\s+|then\s+|so\s+)?|\b(?:please|pls|kindly|just)\s+"
    r"|\b(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?(?:go\s+ahead\s+and\s+)?"
    r"|\bi\s+(?:need|want|would\s+like)\s+(?:you|u)\s+to\s+"
    r"|\b(?:you|u)\s+(?:need|have)\s+to\s+|\bgo\s+ahead\s+and\s+|\blet'?s\s+)"
)
_DEICTIC = r"(?:this|that|these|those|my|his|her|their|our|the\s+member'?s)"
# The object of a request: a definite claim ("the claim", "this denied claim"),
# a bare singular "claim" ("please pay claim"), or "it". An indefinite or generic
# object ("can you deny a claim for ...", "pay parity for telehealth claims") is
# a question about the rule and passes.
_CLAIM_OBJECT = (
    r"(?:(?:the|your|{d})\s+(?:[\w'-]+\s+){{0,2}}?(?:claims?|denial|payment)\b"
    r"|claim\b|it\b|them\b)"
).format(d=_DEICTIC)
_DECISION = (
    r"(?:approved|denied|paid|priced|re-?priced|adjudicated|overturned|overridden|"
    r"reprocessed|reversed|voided|payable)"
)
_CLAIM_ACTION_PATTERNS = tuple(re.compile(p, _I) for p in (
    # "approve this claim", "can you deny the claim", "please pay claim", "override the denial"
    rf"{_REQUEST}(?:please\s+)?{_ACT_VERB}\s+{_CLAIM_OBJECT}",
    # "mark the claim as paid"
    rf"\bmark\s+(?:the|{_DEICTIC})?\s*claims?\s+(?:as\s+)?{_DECISION}\b",
    # "get this claim approved", "I need my claim paid"
    rf"\b(?:get|have|want|need)\s+{_DEICTIC}\s+claims?\s+{_DECISION}\b",
    # "should this claim be denied?", "will that claim get paid?"
    rf"\b(?:should|can|could|will|would|must)\s+{_DEICTIC}\s+claims?\s+"
    rf"(?:be\s+|get\s+){_DECISION}\b",
    # "is this claim payable?"
    rf"\bis\s+{_DEICTIC}\s+claims?\s+payable\b",
    # "this claim should be approved", "my claim needs to be paid"
    rf"\b{_DEICTIC}\s+claims?\s+(?:should|must|needs?\s+to|has\s+to|ought\s+to)\s+"
    rf"(?:be\s+|get\s+){_DECISION}\b",
))

_DECISION_LANGUAGE_PATTERNS = tuple(re.compile(p, _I) for p in (
    # "your claim is approved", "the claim will be denied", "this claim will be paid"
    r"\b(?:your|the|this|that|their|his|her|my)\s+claims?\s+(?:is|are|has\s+been|have\s+been|"
    r"was|were|will\s+be|would\s+be|shall\s+be|should\s+be|'s)\s+(?:now\s+)?"
    r"(?:approved|denied|paid|payable|rejected|adjudicated|overturned|reprocessed)\b",
    # "we will pay", "we'll approve"
    r"\bwe(?:\s+will|'ll|\s+are\s+going\s+to|\s+shall)\s+(?:pay|approve|deny|reimburse|"
    r"reprocess|overturn|cover)\b",
    # "we have approved the claim", "I denied your claim"
    r"\b(?:i|we)\s+(?:have\s+|'ve\s+)?(?:approved|denied|paid|adjudicated|overridden|"
    r"overturned|reprocessed)\s+(?:your|the|this|that|their)\s+claims?\b",
    # "is approved for payment"
    r"\b(?:approved|cleared|released)\s+for\s+payment\b",
))


def find_claim_decision_language(text: str) -> list[str]:
    """Phrases in a drafted answer that announce a decision on a claim."""
    found: list[str] = []
    for pattern in _DECISION_LANGUAGE_PATTERNS:
        for m in pattern.finditer(text):
            phrase = " ".join(m.group(0).lower().split())
            if phrase not in found:
                found.append(phrase)
    return found


def _is_claim_action(question: str) -> bool:
    return any(p.search(question) for p in _CLAIM_ACTION_PATTERNS)


# --------------------------------------------------------------- out of scope

_DOMAIN = re.compile(
    r"\b(?:plans?|polic(?:y|ies)|claims?|members?|providers?|benefits?|cover(?:ed|age|s)?|"
    r"appeals?|authori[sz]ations?|auth|pre-?auth|pre-?cert\w*|referrals?|copays?|co-?pays?|"
    r"coinsurance|deductibles?|out-of-pocket|premiums?|(?:in|out-of)-?network|network|"
    r"formular(?:y|ies)|pharmacy|prescriptions?|eligib\w*|enroll\w*|timely\s+filing|"
    r"denials?|denied|grievances?|complaints?|eob|explanation\s+of\s+benefits|cob|"
    r"coordination\s+of\s+benefits|subscribers?|dependents?|medicare|medicaid|cpt|hcpcs|"
    r"icd-?10|modifiers?|billing|billed|reimburs\w*|adjudicat\w*|wiki|call\s+notes?|pcp|"
    r"specialists?|telehealth|dme|utilization|hipaa|phi|escalat\w*|supervisor|exclusions?|"
    r"waiting\s+period|cobra|hsa|fsa|hra|date\s+of\s+service|prior\s+auth\w*|"
    r"procedures?|services?|visits?|rep|reps|caller|compliance|audit|fraud|siu|"
    r"effective\s+date|version|in\s+force|superseded|notice|letter)\b",
    _I,
)
_OFF_TOPIC = tuple(re.compile(p, _I) for p in (
    r"\b(?:weather|forecast|temperature\s+outside|rain(?:ing)?|snow(?:ing)?)\b",
    r"\b(?:nfl|nba|mlb|nhl|super\s+bowl|world\s+series|world\s+cup|playoffs?|football|"
    r"baseball|basketball|soccer|hockey|tennis|golf)\b|\bwho\s+won\b|\bscore\s+of\s+the\b",
    r"\b(?:recipes?|bake|baking|cook(?:ing)?|ingredients?)\b",
    r"\b(?:stocks?|share\s+price|ticker|nasdaq|dow\s+jones|s&p\s+500|crypto\w*|bitcoin|"
    r"invest(?:ing|ment)?)\b",
    r"\b(?:write|compose|tell)\s+(?:me\s+)?(?:a|an)\s+(?:poem|song|story|joke|essay|haiku|limerick)\b",
    r"\b(?:dose|dosage)\b|\bhow\s+(?:much|many)\b[^.?!]{0,40}\bshould\s+i\s+take\b|"
    r"\bshould\s+i\s+take\b|\bdiagnos(?:e|is)\b|\bsymptoms?\b|\bdo\s+i\s+have\s+(?:a|an)\b",
    r"\blegal\s+advice\b|\b(?:can|should)\s+i\s+sue\b|\b(?:lawyer|attorney|lawsuit|divorce|"
    r"custody)\b",
    r"\b(?:movies?|restaurants?|horoscope|lottery|vacation|capital\s+of)\b",
))


def _is_out_of_scope(question: str) -> bool:
    if _DOMAIN.search(question):
        return False
    return any(p.search(question) for p in _OFF_TOPIC)


# ---------------------------------------------------------------------- screen

def screen_question(question: str, role: str, max_chars: int = DEFAULT_MAX_CHARS) -> Refusal | None:
    """The refusal for this question and role, or None if it may go to retrieval.

    Raises UnknownRoleError for a role that is not one of access.ROLES.
    """
    clearance_for(role)  # unknown roles fail loudly before anything else
    text = (question or "").strip()
    if not text:
        return Refusal(RefusalReason.empty_question, EMPTY_QUESTION_MESSAGE)
    if len(text) > max_chars:
        return Refusal(
            RefusalReason.question_too_long,
            QUESTION_TOO_LONG_MESSAGE.format(max_chars=max_chars),
        )
    if find_member_identifiers(text):
        return Refusal(RefusalReason.member_identifier, MEMBER_IDENTIFIER_MESSAGE)
    if _is_claim_action(text):
        return Refusal(RefusalReason.claim_action, CLAIM_ACTION_MESSAGE)
    if topic_denied(role, text) is not None or _is_out_of_scope(text):
        return Refusal(RefusalReason.out_of_scope, OUT_OF_SCOPE_MESSAGE)
    return None
