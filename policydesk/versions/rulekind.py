"""Which rule a duration belongs to, read from the words around it: the kind of a rule.

A note's "90 days" is compared with a policy's "180 days" only when both state the same kind of
rule (both a filing limit), never just because both are in days. The kind is not looked up in
a list of the plan's rules: it is the set of content words of the sentence that states the
duration, plus the words of its section heading (when the heading says more than the
document's title), reduced to crude stems. Two durations state the same kind of rule when
these sets share a word.

Left out as saying nothing about which rule: English function words; the words of time
itself (days, within, calendar); reporting words of a call note ("the representative
explained"); and capitalised words inside a sentence (the plan's or a department's name, which
any sentence may carry).

A note's duration must also read like a rule ("within 90 days", "have 180 days", "is valid for
12 months", "a 90-day limit"): "mailed the claim 2 days after the visit" states no rule.
"""

from __future__ import annotations

import re

from policydesk.versions.durations import Duration

_STOP = frozenset("""
a about above after again against all also an and any are as at be because been before being below between
both but by can cannot could did do does doing done down during each either every few for from further had
has have having he her here hers him his how i if in into is it its itself just least less like long many may
might more most much must my no nor not now of off on once one only or other our ours out over own per same
shall she should so some such than that the their them then there these they this those through to too under
until up upon us very was we were what when where whether which while who whom whose why will with within
without would you your yes also again ever even still yet get got gets make made use used using able
day days hour hours hrs minute minutes week weeks month months year years calendar business working time
times period date dates number first second third next last new current currently
zero two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand
representative representatives rep caller callers call explained explain explains told tell tells said say
says asked ask asks confirmed note notes policy policies plan plans member members
""".split())
_RULE_CUE = re.compile(
    r"\b(?:within|up\s+to|no\s+(?:later|more|less)\s+than|not\s+(?:later|more)\s+than|at\s+(?:least|most)|"
    r"more\s+than|less\s+than|fewer\s+than|under|for|is|are|was|were|be|has|have|had|gets?|allows?|"
    r"limit\s+of|deadline\s+of|every|each|takes?|lasts?)\s+"
    r"(?:(?:a|an|the|only|just|about|approximately|roughly|exactly|up\s+to|at\s+(?:least|most))\s+)*$",
    re.IGNORECASE)
_RULE_NOUN_AFTER = re.compile(
    r"\s*(?:limit|window|deadline|period|timeframe|time\s+frame|rule|standard|requirement|notice|supply|"
    r"lookback|look-back|grace|cap|maximum|minimum)\b"
    r"|\s+to\s+(?!the\b|a\b|an\b)[a-z]+", re.IGNORECASE)  # "90 days to appeal"
# "of the date of service": the day most limits count from, whatever the rule.
_ANCHOR = re.compile(r"\bdates?\s+of\s+(?:the\s+)?services?\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\u2019-]*")
_SUFFIXES = ("ations", "ation", "ions", "ion", "ings", "ing", "ied", "ies", "ed", "es", "s", "e", "y")


def stem(word: str) -> str:
    w = word.lower().replace("\u2019", "'").split("'")[0]
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    return w[:4]


_STOP_STEMS = frozenset(stem(w) for w in _STOP)  # once per process: every chunk's terms drop them


def _terms(text: str, *, keep_capitalised: bool) -> set[str]:
    out = set()
    text = _ANCHOR.sub(" ", text)
    for i, m in enumerate(_WORD.finditer(text)):
        word = m.group(0)
        if word.lower() in _STOP or len(word) < 3:
            continue
        if not keep_capitalised and i > 0 and word[0].isupper():
            continue  # a name inside a sentence, not a word about the rule
        out.add(stem(word))
    return out - _STOP_STEMS


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence (or clause ended by a semicolon) holding text[start:end]."""
    begin = 0
    for m in _SENTENCE_END.finditer(text):
        if m.end() <= start:
            begin = m.end()
        elif m.start() >= end:
            return text[begin:m.start()]
    return text[begin:]


def heading_terms(section: str | None, title: str | None) -> set[str]:
    """Words of a section heading, unless the heading only repeats the document's title."""
    if not section or (title and title.lower() in section.lower()):
        return set()
    return _terms(section, keep_capitalised=True)


def rule_terms(text: str, duration: Duration, heading: set[str] | frozenset[str] = frozenset()) -> frozenset[str]:
    """The kind of rule `duration` (read from `text`) states: stems of its sentence and heading."""
    sentence = sentence_around(text, duration.start, duration.end)
    return frozenset(_terms(sentence, keep_capitalised=False) | set(heading))


def reads_as_rule(text: str, duration: Duration) -> bool:
    """'within 90 days', 'have 180 days', 'a 90-day limit': a stated rule, not a story."""
    if duration.narrative:
        return False
    before = text[max(0, duration.start - 40):duration.start]
    return bool(_RULE_CUE.search(before) or _RULE_NOUN_AFTER.match(text, duration.end))


def same_kind(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a & b)


def title_terms(text: str) -> set[str]:
    """Stems of the content words of a title or question, names included ("Interpreter Services")."""
    return _terms(text, keep_capitalised=True)
