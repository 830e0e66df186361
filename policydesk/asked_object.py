"""What a question asks a value *of*: the thing a copay, number, form or limit is for ("the copay
for an inpatient stay", "what does the plan pay for a lipid panel"), or the benefit a coverage question
asks about, and whether a passage speaks of it.

A passage that states the asked kind of value about something else does not answer: the copay for
an office visit is not the copay for an inpatient stay. Nothing here names a plan or a document.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from policydesk.words import STOPWORDS, everyday_words, normalize, run_initials

# What a value is asked *of*: "the copay for an inpatient stay", "the fax number for the state's
# dental vendor", "which modifier goes on a claim for a rented CPAP". Up to seven words after the
# ask's noun and its "for/of/on/to", ending at punctuation or where a new clause starts.
_OBJECT_AFTER = {  # the ask's noun, and the words that lead to what it is of ("a form to deny" is a purpose)
    "duration": (r"(?:limit|deadline|window|time\s*frame|timeframe|tfl)s?", "for|of|on|to"),
    "amount": (r"(?:copay|co-pay|copayment|coinsurance|deductible|premium|price|cost|fee|rate|payment|charge|pay|paid)s?",
               "for|of|on"),
    "number": (r"(?:fax|phone|telephone|number|line|tty)", "for|of|to"),
    "contact": (r"(?:e-?mail|address|po\s+box|website|url)", "for|of|to"),
    "code": (r"(?:form|code|modifier|box|field|taxonomy)s?", "for|of|on"),
}
_OBJECT = {kind: re.compile(
    rf"\b{noun}\b(?:\s+[\w'-]+){{0,4}}?\s+(?P<lead>{lead})\s+((?:[\w'-]+\s*){{1,7}}?)"
    r"(?=\s*(?:[?,.;:]|$|\b(?:when|if|under|in|with|at|by|after|before|and|or|that|who|which|is|are|do|does|"
    r"should|must|we|they|to)\b))", re.IGNORECASE) for kind, (noun, lead) in _OBJECT_AFTER.items()}
# "Does the plan cover a gym membership", "the copay for an ambulance ride": the benefit asked about.
_BENEFIT_ASKED = re.compile(
    r"\b(?:cover|covers|pay\s+for|pays\s+for|reimburse|reimburses|(?:copay|co-pay|copayment|cost|price|fee)s?\s+"
    r"(?:for|of))\s+(?:(?:a|an|the|their|his|her|my|our|any)\s+)?((?:[A-Za-z][\w'-]*\s+){0,2}?[A-Za-z][\w'-]*)"
    r"(?=\s*(?:[?,.;]|$|\b(?:for|when|if|to|at|with|under|in|on|and|or)\b))", re.I)
# "Is IVF covered", "are massage sessions covered for ...": the passive form of the same.
_BENEFIT_COVERED = re.compile(
    r"\b(?:is|are|isn't|aren't)\s+(?:(?:a|an|the|their|his|her|my|our|any)\s+)?((?:[A-Za-z][\w'-]*\s+){0,2}?"
    r"[A-Za-z][\w'-]*)\s+(?:still\s+|ever\s+|also\s+)?covered"
    r"(?=\s*(?:[?,.;]|$|\b(?:for|under|by|in|if|when|with|at|on|as)\b))", re.I)
# "How many speech therapy visits a year are covered": the benefit a count of covered units asks about.
_BENEFIT_COUNTED = re.compile(
    r"\bhow\s+many\s+((?:[A-Za-z][\w'-]*\s+){0,2}?[A-Za-z][\w'-]*)\s+(?:(?:a|an|per|each)\s+[a-z]+\s+)?"
    r"(?:are|is|will\s+be)\s+(?:still\s+|also\s+)?covered\b", re.IGNORECASE)
# Share of the object's words a passage must use to be speaking of it ("rented CPAP" is spoken of
# by "CPAP devices are rented"; "inpatient hospital stay" is not by "an office visit").
OBJECT_SHARE = 2 / 3


def benefit_asked(question: str) -> list[str]:
    """The words of the benefit a coverage or price question asks about ("gym membership")."""
    return [w for rx in (_BENEFIT_ASKED, _BENEFIT_COVERED, _BENEFIT_COUNTED) for m in rx.finditer(question)
            for w in m.group(1).split()]


def object_of(question: str, kind: str, qualifiers: Iterable[re.Pattern]) -> frozenset[str]:
    """The folded content words of what the asked value is of (or the benefit a coverage question
    asks about), without the programs and sides the question names (a sentence silent on those is the general rule, so it need not use them)."""
    rx = _OBJECT.get(kind)
    found = rx.search(question) if rx else None
    phrase = found.group(2) if found else " ".join(benefit_asked(question))
    if found and found.group("lead").lower() == "to":  # "the deadline to get the claim in": a verb, then its object
        phrase = phrase.split(None, 1)[1] if len(phrase.split()) > 1 else ""
    for pattern in qualifiers:
        phrase = pattern.sub(" ", phrase)
    return frozenset(w.removesuffix("'s") for w in normalize(phrase) if w not in STOPWORDS and len(w) > 2)


def speaks_of(words: frozenset[str], text: str) -> bool:
    """The text uses most of the words (OBJECT_SHARE), a word counting when a text word starts with
    it or it with a text word ("auth" for "authorization"), or when, not being an everyday word,
    it is the initials of words the text runs together ("qio": "Quality Improvement Organization")."""
    tokens = normalize(text)
    used = set(tokens)
    # an everyday word ("fee") is never read as initials ("for each enrollee")
    acronyms = {w for w in words if len(w) <= 5 and w not in everyday_words()}
    initials = run_initials(tokens) if acronyms else set()
    hits = sum((w in acronyms and w in initials) or any(u.startswith(w) or (len(u) >= 4 and w.startswith(u)) for u in used) for w in words)
    return hits >= OBJECT_SHARE * len(words)
