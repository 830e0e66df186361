"""Out of scope: questions that are plainly not about a health plan.

Pure text detection for the refusal gate. Conservative on purpose: any
health-plan vocabulary (plan, claim, member, provider, benefit, coverage, ...)
passes, even if the rest of the question looks unrelated; retrieval then
abstains if nothing applies.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE

_DOMAIN = re.compile(
    r"\b(?:plans?|polic(?:y|ies)|claims?|members?|providers?|benefits?|cover(?:ed|age|s)?|"
    r"appeals?|authori[sz]ations?|auth|pre-?auth|pre-?cert\w*|referrals?|copays?|co-?pays?|"
    r"coinsurance|deductibles?|out-of-pocket|premiums?|(?:in|out-of)-?network|network|"
    r"formular(?:y|ies)|pharmacy|prescriptions?|eligib\w*|enroll\w*|timely\s+filing|filing\s+limits?|"
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


# Clinical advice (a dose, a diagnosis, what to take) is out of scope even when it names a member;
# a coverage question about a drug or a diagnosis is not.
_CLINICAL_ADVICE = re.compile(
    r"\b(?:what|which)\s+(?:[\w-]+\s+){0,3}(?:dose|dosage|medication|medicine|antibiotic|drug)\s+should\b"
    r"|\bshould\s+(?:i|he|she|they|the\s+member|the\s+patient)\s+take\b"
    r"|\bwhat'?s\s+wrong\s+with\b|\bdiagnos(?:e|is)\b|\bsymptoms?\s+of\b|\blook\s+cancerous\b"
    # is a reading or a symptom normal / dangerous; is it safe to take, stop, skip or double a dose
    r"|\bis\s+(?:it|that|this|a|an|the|her|his|their)\b[^?.!]{0,50}\b(?:normal|dangerous|serious|contagious)\b"
    r"|\b(?:safe|ok(?:ay)?|dangerous)\s+(?:for\s+(?:[\w'-]+\s+){1,3})?to\s+(?:take|stop|skip|double|mix|combine)\b"
    r"|\b(?:a\s+heart\s+attack|a\s+stroke|cancer)\s*\?", _I)
_COVERAGE = re.compile(
    r"\b(?:cover(?:ed|age|s)?|polic(?:y|ies)|formular(?:y|ies)|auth\w*|benefits?|limits?|copays?|claims?|"
    r"cost|pay|billing|code|icd|referral)\b", _I)


def has_plan_vocabulary(question: str) -> bool:
    """Any health-plan word at all (plan, claim, member, provider, benefit, ...)."""
    return bool(_DOMAIN.search(question))


def is_out_of_scope(question: str) -> bool:
    """Off-topic words and no health-plan vocabulary at all."""
    if _CLINICAL_ADVICE.search(question) and not _COVERAGE.search(question):
        return True
    if _DOMAIN.search(question):
        return False
    return any(p.search(question) for p in _OFF_TOPIC)
