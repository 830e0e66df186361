"""Does a sentence answer what the question asks? Decided in code, for every answerer.

A question has an *ask* (a duration or deadline, an amount, a contact point, a count, a date,
or something open) and *qualifiers*: the program it names, and a side on the axes on which
health-plan rules differ (participating or not, standard or expedited, initial or corrected,
the member or the provider, filing vs the plan deciding). A sentence, read with its lead-in,
heading, title and the products its source applies to, *meets* the question when it states the
asked kind of value, speaks of what that value is asked of ("the copay for an inpatient stay" is
not met by the copay for an office visit), and takes no other side of an axis or program the
question chose (a sentence silent on an axis is the general rule and meets it). `preference`
counts the sides and programs it names explicitly, so the specific rule beats the general one.

The axes are the vocabulary of US health-plan rules, not of one plan's documents; program
names come from the corpus (`policydesk.plan_names`). Nothing here names a document.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from policydesk.asked_object import object_of, speaks_of
from policydesk.plan_names import (
    Programs,
    as_programs,
    plan_acts,
    plan_has_to,
    program_patterns,
    programs_named,
)
from policydesk.words import STOPWORDS, normalize

# Each axis: its sides, each a pattern for how documents and staff write that side. A side's
# pattern never matches the other side's words ("non-participating" is not "participating").
AXES: dict[str, dict[str, str]] = {
    "network": {
        "participating": r"(?<![-\w])(?<!non )(?<!not )(?:participating|contracted|in[- ]network|par)\b",
        "non_participating": (r"\b(?:non-?\s?participating|non-?\s?contracted|non-?par|not\s+(?:participating|"
                              r"contracted|in\s+(?:the\s+)?network)|out[- ]of[- ]network|oon)\b"),
    },
    "urgency": {
        "expedited": r"\b(?:expedited|urgent|fast[- ]track|rush)\b",
        "standard": r"\b(?:standard|routine|non-?urgent|non-?expedited)\b",
    },
    "submission": {
        "corrected": r"\b(?:corrected|correction|replacement|resubmi\w*|re-submi\w*|void(?:ed)?)\b",
        "initial": r"\b(?:initial|original|first[- ]time)\s+(?:claims?|submissions?|bills?)\b",
        # a claim sent after another payer paid first: its own limit, not the initial claim's
        "secondary": r"\bsecondary\s+(?:claims?|submissions?|bills?|billing)\b",
    },
    "action": {
        # "request" files only as a verb ("may request a hearing", "to request one"): "a request for
        # payment is decided" is the plan deciding
        "file": (r"(?:(?:(?<=\bto\s)|(?<=\bmay\s)|(?<=\bmust\s)|(?<=\bcan\s)|(?<=\bwill\s)|(?<=\bshould\s))"
                 r"(?:requests?|ask)\b|\brequests?(?=\s+(?:a|an|the|one|it|this|that|these|those|their|his|her|its|any|our|"
                 r"my|your)\b)|(?:(?<=\bthe\s)|(?<=\ba\s))requests?(?=\s+(?:must|should|has\s+to)\s+be\s+"
                 r"(?:made|filed|sent|submitted)\b))|"
                 r"\b(?:file|files|filed|filing|submit|submits|submitted|requested|send|sends|sent|"
                 r"ask\s+for|get\s+(?:the|a|an|our|their|it|this|that)?\s*(?:\w+\s+)?(?:claims?|appeals?|requests?|"
                 r"forms?|bills?)\s+(?:to|in)\b)\b"),
        "decide": (r"\b(?:decides?|decided|deciding|decisions?|determinations?|resolves?|resolved|resolution|"
                   r"responds?|response|notif(?:y|ies|ied)|rule\s+on|render\w*|process(?:es|ed)?|"
                   r"(?:paid|pays|approved|approves)\s+or\s+denie[sd]|(?:denial|notice|decision|determination|letter)s?\s+"
                   r"(?:is|are|will\s+be)\s+(?:sent|mailed|issued|given))\b"),
    },
    "party": {
        "member": r"\b(?:members?|enrollees?|beneficiar(?:y|ies)|patients?|subscribers?)\b",
        "provider": r"\b(?:providers?|practitioners?|physicians?|facilit(?:y|ies)|suppliers?|prescribers?)\b",
    },
}
_AXIS_RE = {axis: {side: re.compile(p, re.IGNORECASE) for side, p in sides.items()} for axis, sides in AXES.items()}

# Who does the asking on the "action" axis: a question about the plan's own clock ("how long does
# the plan have to decide") takes the decide side even when it also says "appeal request".
# "we" is the plan when staff speak, unless the question also says "we" file or submit (a provider's office).
_PLAN_ACTS = re.compile(r"\b(?:plan|health\s+plan|payer|insurer|carrier)\s+(?:have|has|get|gets|must|need|needs|take|takes)"
                        r"\s+to\b|\bturn-?around\b", re.IGNORECASE)
_WE_ACT = re.compile(r"\bwe\s+(?:have|get|must|need)\s+to\b", re.IGNORECASE)
# "How long do we have to get the claim in": the asker's own clock. A sentence in which the plan acts
# ("the plan verifies ... within 10 days") is on the plan's clock and does not answer it.
_ASKER_ACTS = re.compile(r"\b(?:we|i|you|they|providers?|members?|suppliers?)\s+(?:have|has|get|gets|must|need|needs)\s+to\b",
                         re.IGNORECASE)

_TIME_UNIT = r"(?:calendar\s+|business\s+|working\s+)?(?:days?|hours?|hrs?|weeks?|months?|years?|minutes?|seconds?)"
_NUMBER_WORD = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fourteen|fifteen|eighteen|"
                r"twenty|thirty|forty|forty-five|sixty|ninety|hundred|a|an)")
# "13 continuous months", "14 additional calendar days", "ninety (90) days", "a 30-day window".
_DURATION = re.compile(r"(?:\b\d+(?:\.\d+)?\)?|\b" + _NUMBER_WORD + r")\s*(?:\(\d+\)\s*)?(?:-\s*)?"
                       r"(?:[a-z]+\s+){0,2}?" + _TIME_UNIT + r"\b", re.IGNORECASE)
# A deadline stated as a time of day ("no later than noon of the day before", "by 5 p.m."): a when.
_TIME_OF_DAY_DEADLINE = re.compile(r"\b(?:by|before|until|no\s+later\s+than)\s+(?:noon|midnight|"
                                   r"\d{1,2}(?::\d{2})?\s*[ap]\.?\s?m\b)", re.IGNORECASE)
_MONTHS = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b" + _MONTHS + r"\s+\d{1,2},?\s+\d{4}\b",
                   re.IGNORECASE)
_AMOUNT = re.compile(r"\$\s?\d|\b\d+(?:\.\d+)?\s*(?:%|percent\b|dollars?\b|cents?\b)", re.IGNORECASE)
_CONTACT = re.compile(
    r"\(\d{3}\)\s?\d{3}-\d{4}|\b\d{3}[-.]\d{3}[-.]\d{4}\b|\b1-8\d\d-|\bp\.?\s?o\.?\s+box\b|\bhttps?://|\bwww\.|"
    r"\b[\w.-]+@[\w-]+\.\w+|\bportal\b|\bfax(?:ed)?\b|\bmail(?:ed)?\s+(?:to|it)\b|\bsuite\s+\d|\b\d+\s+\w+\s+"
    r"(?:street|st|avenue|ave|road|rd|boulevard|blvd|drive|dr|way|lane|ln)\b|\btty\b|(?<!\bthe\s)(?<!\ba\s)\bcall\b|\bphone\b|\bemail\b|"
    r"\bonline\b|\belectronically\b|\bedi\b|\bclearinghouse\b",
    re.IGNORECASE,
)
_DISTANCE = re.compile(r"\b\d+(?:\.\d+)?\s*(?:miles?|mi|kilometers?|km)\b|\b(?:miles?|minutes?)\s+(?:away|drive|of)\b",
                       re.IGNORECASE)
_CONDITION = re.compile(r"\b(?:when|whenever|if|once|unless|after|as\s+soon\s+as)\b", re.IGNORECASE)
_PHONE = re.compile(r"\(\d{3}\)\s?\d{3}-\d{4}|\b\d{3}[-.]\d{3}[-.]\d{4}\b|\b1-8\d\d-[\dA-Z-]{7,}|\b711\b")
_NUMBER = re.compile(r"\b\d+\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|thirty)\b",
                     re.IGNORECASE)

# What the question asks for: the first ask in its question clause ("how much is the fee after the filing
# limit" asks an amount; "late on the premium, how long is the grace period" a duration), ties to the
# earlier pattern ("how much time" is a duration, "how much" an amount).
_ASKS: tuple[tuple[str, re.Pattern], ...] = (
    # what a limit runs from ("when does the filing limit start"), not its length: any text may say it
    ("start", re.compile(r"\bwhen\s+(?:does|do|did|will)\s+(?:the\s+|a\s+|my\s+|our\s+)?(?:[\w-]+\s+){0,3}?(?:start|begin|"
                         r"run|kick\s+in)\b|\b(?:counted|measured|runs?|starts?)\s+from\s+(?:what|when|which)\b|"
                         r"\bfrom\s+(?:what|which)\s+(?:date|day)\b", re.IGNORECASE)),
    # the trigger of a rule ("at what point do we refer ..."): a sentence stating its condition
    ("condition", re.compile(r"\bat\s+what\s+point\b|\bunder\s+what\s+(?:circumstances|conditions)\b|"
                             r"\bin\s+what\s+(?:cases|situations)\b|\bwhat\s+triggers\b", re.IGNORECASE)),
    ("duration", re.compile(
        r"\bhow\s+(?:long|soon|quickly|fast|much\s+(?:extra\s+|more\s+|advance\s+)?(?:time|notice)|many\s+(?:calendar\s+|business\s+|working\s+)?"
        r"(?:days?|hours?|weeks?|months?|years?))\b|\b(?:deadline|time\s*(?:limit|frame|line)|timeframe|"
        r"turn-?around|window|cut-?off|tfl|(?:timely\s+)?filing\s+(?:limit|rule|period|deadline|window))\b|"
        r"\bwithin\s+how\b|\bby\s+when\b|\bhow\s+many\s+days\b|\bhow\s+(?:far|much|long)\s+(?:ahead|in\s+advance|before)\b|"
        r"\bhow\s+early\b|\bhow\s+often\b|\bhow\s+frequently\b", re.IGNORECASE)),
    ("distance", re.compile(r"\bhow\s+(?:far|close|many\s+miles)\b", re.IGNORECASE)),
    ("amount", re.compile(
        r"\b(?:copay|co-pay|copayment|coinsurance|deductible|premium|price|dollars?|cost|costs|fee|fees|"
        r"(?:allowed|allowable|reimbursement|payment|mileage)\s+(?:amount|rate)|rate\s+(?:for|per))\b|"
        r"\bhow\s+much\s+(?:is|does|do|will|would|can)\b.*\b(?:pay|paid|cost|charge|reimburse\w*|owe)\b|"
        r"\bwhat\s+(?:does|do|will)\s+(?:the\s+plan|we|it|[A-Z][\w-]+)\s+pay\b|\bpaid\s+at\s+what\b|\$|"
        r"\b(?:what|how\s+much)\s+(?:is|are|was|were)\s+the\s+(?:[\w-]+\s+){0,3}(?:payments?|rates?|premiums?|"
        r"fees?|charges?|interest|amounts?)\b|\binterest\s+rate\b", re.IGNORECASE)),
    ("number", re.compile(
        r"\b(?:fax|(?:tele)?phone\s+(?:number|line)|tty|toll[- ]free)\b|\bwhat\s+number\b|\bwho\s+do\s+(?:i|we|they)\s+call\b"
        r"|\bnumber\s+(?:to|for)\s+call\b", re.IGNORECASE)),
    ("contact", re.compile(
        r"\b(?:e-?mail(?:\s+address)?|(?:mailing\s+)?address|po\s+box|website|url)\b|"
        r"\bwhere\s+(?:do|does|should|can|must|would)\s+(?:\w+\s+){1,3}?(?:send|submit|mail|fax|file|call)\b",
        re.IGNORECASE)),
    ("date", re.compile(r"\b(?:what|which)\s+date\b|\b(?:effective|start|end)\s+date\b|\btakes?\s+effect\b|"
                        r"\bgo(?:es)?\s+into\s+effect\b", re.IGNORECASE)),
    ("code", re.compile(r"\b(?:what|which)\s+(?:[\w-]+\s+){0,2}?(?:form|code|modifier|box|field|revenue\s+code|"
                        r"place\s+of\s+service|taxonomy)\b|\b(?:npi|tax\s+id|tin|ein|payer\s+id)\b", re.IGNORECASE)),
    ("count", re.compile(r"\bhow\s+many\b|\bmaximum\s+number\b|\blimit\s+of\s+how\b", re.IGNORECASE)),
)
_QUESTION_WORD = re.compile(r"\b(?:how|what|what's|whats|which|when|where|who|whom|whose)\b", re.IGNORECASE)


# A clause opening with an auxiliary verb ("does that restart the deadline?", "will the plan still
# take a late appeal?") asks yes or no: the deadline or fee it names is its topic, not the value asked.
_YES_NO = re.compile(r"(?:^|[.?!;:,]\s+|\s[-\u2013\u2014]\s+)(?:do|does|did|is|are|was|were|can|could|will|would|"
                     r"should|must|may|has|have|had)\b", re.IGNORECASE)


def ask_kind(question: str) -> str:
    """The kind of value asked: the first ask from where the question clause starts (its first
    question word; what comes before it is context), else anywhere, else open. A question with no
    question word whose clause opens with an auxiliary verb asks yes or no: open."""
    if not (m := _QUESTION_WORD.search(question)) and _YES_NO.search(question.strip()):
        return "open"
    start = m.start() if m else 0
    for pos in (start, 0):
        found = [(m.start(), i, k) for i, (k, rx) in enumerate(_ASKS) if (m := rx.search(question, pos))]
        if found:
            return min(found)[2]
    return "open"


# A form, code, box or field as documents write it: "CMS-10003", "box 22", "modifier RR", "E0601".
# A table's first cell of capitals ("KH | First month ...") is a code too.
_CODE_VALUE = re.compile(r"(?-i:(?<![\w|])[A-Z][A-Z0-9]{1,4}(?=\s+\|))|\b[A-Z]{1,5}-?\d{2,}[A-Z0-9-]*\b|\b\d{2}-?\d{7,8}\b|\b(?:box|field|item|modifier|code)\s+[A-Z0-9]{1,5}\b|"
                         r"\b[A-Z]\d{4}\b|\b\d{5}\b", re.IGNORECASE)
# What an amount is asked of: the sentence must price that ("premium" is not "copayment").
_PRICED = re.compile(r"\b(copay|co-pay|copayment|coinsurance|deductible|premium|fee|interest|payment|rate|charge)s?\b",
                     re.IGNORECASE)

# What a limit runs from ("within 30 days of the plan's appeal decision", "from the date of the
# determination"): the event the clock starts at, not the act the sentence or question is about.
_CLOCK_START = re.compile(
    r"\b(?:of|from|after|following|since)\s+(?:the\s+date\s+(?:of|on)\s+)?(?:[\w'-]+\s+){0,4}?"
    r"(?:decisions?|determinations?|resolutions?|responses?)\b(?:\s+notices?)?", re.IGNORECASE)


def sides_in(text: str) -> dict[str, set[str]]:
    """The sides of each axis a text names; on the action axis, leaving out what a limit runs from."""
    acts = _CLOCK_START.sub(" ", text)
    return {axis: {side for side, rx in sides.items() if rx.search(acts if axis == "action" else text)}
            for axis, sides in _AXIS_RE.items()}


def names_a_side(word: str) -> bool:
    """The word on its own names a side of some axis ("OON", "resubmitted", "urgent")."""
    return any(rx.search(word) for sides in _AXIS_RE.values() for side, rx in sides.items()
               if side not in _PARTY_SIDES)


_PARTY_SIDES = frozenset(AXES["party"])
_SIDE_PATTERNS = tuple(rx for sides in _AXIS_RE.values() for rx in sides.values())


@dataclass(frozen=True)
class Ask:
    """What one question asks for, and the sides and programs it chose."""

    kind: str  # start | condition | duration | distance | amount | number | contact | date | code | count | open
    priced: str | None = None  # for an amount: what is priced ("premium", "copay")
    object: frozenset[str] = frozenset()  # folded words of what the value is asked of
    sides: dict[str, str] = field(default_factory=dict)  # axis -> the one side the question names
    programs: frozenset[str] = frozenset()  # product names the question (or the asker) chose
    known_programs: tuple[tuple[str, tuple[str, ...]], ...] = ()  # every program, with the plan's names for it
    asker_files: bool = False  # the question asks how long the asker has to file or send

    @classmethod
    def of(cls, question: str, programs: Programs | Sequence[str] = (), chosen_program: str | None = None) -> "Ask":
        kind = ask_kind(question)
        named = sides_in(question)
        sides = {axis: next(iter(found)) for axis, found in named.items() if len(found) == 1}
        known = tuple(as_programs(programs).items())
        if _PLAN_ACTS.search(question) or plan_has_to(question, known) or (
                _WE_ACT.search(question) and "file" not in named["action"]):
            sides["action"] = "decide"
        # The party axis only qualifies when the question is about who must act ("we're a provider",
        # "a member's appeal"): a question naming both parties chooses neither.
        patterns = program_patterns(programs)
        chosen = {name for name, rx in patterns.items() if rx.search(question)}
        if chosen_program:
            chosen.add(chosen_program)
        priced = _PRICED.search(question) if kind == "amount" else None
        return cls(kind=kind, sides=sides, programs=frozenset(chosen), known_programs=tuple(as_programs(programs).items()),
                   priced=_price_stem(priced.group(1)) if priced else None, object=object_of(question, kind, [*patterns.values(), *_SIDE_PATTERNS]),
                   asker_files=sides.get("action") == "file" and bool(_ASKER_ACTS.search(question)))

    def value_stated(self, text: str) -> bool:
        """The text states the kind of value asked for (any text does for an open question)."""
        if self.kind == "duration":
            return bool(_DURATION.search(text) or _TIME_OF_DAY_DEADLINE.search(text))
        if self.kind == "date":
            return bool(_DATE.search(text))
        if self.kind == "amount":
            return bool(_AMOUNT.search(text))
        if self.kind == "contact":
            return bool(_CONTACT.search(text))
        if self.kind == "number":
            return bool(_PHONE.search(text))
        if self.kind == "distance":
            return bool(_DISTANCE.search(text))
        if self.kind == "count":
            return bool(_NUMBER.search(text))
        if self.kind == "condition":
            return bool(_CONDITION.search(text))
        if self.kind == "code":
            return bool(_CODE_VALUE.search(text))
        return True


@dataclass(frozen=True)
class Passage:
    """A sentence as the check reads it: with its lead-in, heading, title and source products."""

    sentence: str
    lead_in: str = ""
    heading: str = ""
    products: tuple[str, ...] | None = None  # None: the source applies to every product

    @property
    def scope_text(self) -> str:
        return " ".join(p for p in (self.heading, self.lead_in, self.sentence) if p)


@dataclass(frozen=True)
class Fit:
    meets: bool
    unmet: tuple[str, ...] = ()  # what the sentence does not meet, for the trace
    explicit: frozenset[str] = frozenset()  # the axes ("program" too) whose asked side it names

    def preference(self, contested: set[str] | frozenset[str]) -> int:
        """Asked sides it names, counting only axes on which some passage in play takes another."""
        return len(self.explicit & contested)

    @property
    def contests(self) -> set[str]:
        """The axes on which this passage takes another side than the one asked."""
        return {u.split(":", 1)[0] for u in self.unmet if ":" in u}


# Whether the plan or the asker acts is said by the sentence itself: a heading such as "Timely
# Filing" or a subsection title such as "(e) Payment requests." names the topic, not who files.
_SENTENCE_AXES = frozenset({"action"})


def fit(ask: Ask, passage: Passage) -> Fit:
    """Whether the passage meets the ask and qualifiers, and which asked sides it names."""
    unmet: list[str] = []
    if not ask.value_stated(passage.sentence):
        unmet.append(f"states no {ask.kind}")
    elif ask.priced and not any(_price_stem(m.group(1)) == ask.priced for m in _PRICED.finditer(passage.scope_text)):
        unmet.append(f"prices no {ask.priced}")
    elif ask.object and not speaks_of(ask.object, passage.scope_text):
        unmet.append(f"speaks not of {' '.join(sorted(ask.object))}")
    in_scope = sides_in(passage.scope_text)
    in_sentence = sides_in(passage.sentence)  # a subsection title ("(e) Payment requests.") names a topic
    if ask.asker_files and plan_acts(passage.sentence, ask.known_programs):
        in_sentence["action"] = in_sentence["action"] | {"decide"}
    explicit: set[str] = set()
    for axis, side in ask.sides.items():
        if axis == "party":  # who acts is too often both, or implied: it never decides
            continue
        named = in_sentence[axis] if axis in _SENTENCE_AXES else in_scope[axis]
        if side in named:
            explicit.add(axis)
        elif named:
            unmet.append(f"{axis}: {'/'.join(sorted(named))}, not {side}")
    if ask.programs:
        stated = programs_named(passage.scope_text, ask.known_programs)
        if passage.products is not None and not (set(passage.products) & ask.programs):
            unmet.append(f"program: source is for {', '.join(passage.products)}")
        elif stated & ask.programs or (passage.products and set(passage.products) & ask.programs):
            explicit.add("program")
        elif stated:
            unmet.append(f"program: {', '.join(sorted(stated))}, not {', '.join(sorted(ask.programs))}")
    return Fit(not unmet, tuple(unmet), frozenset(explicit))


def _price_stem(word: str) -> str:
    word = word.lower().replace("-", "")
    return "copay" if word.startswith("copay") else word


_TITLE_WORD = re.compile(r"[A-Za-z][A-Za-z-]{2,}|[A-Z]{2,}\d*|\d{4}-\d+")


def _title_words(text: str) -> set[str]:
    return {w for w in normalize(" ".join(_TITLE_WORD.findall(text))) if w not in STOPWORDS}


_TITLE_CODE = re.compile(r"\b(?=[\w-]*\d)[A-Za-z0-9][\w-]{3,}\b")


# Share of a title's own words (those no other title in play has) a question must use to name it:
# "the filing deadline change notice" names "Filing Deadline Change Notice"; "the filing deadline"
# alone asks about the subject, which other sources may answer.
NAMED_SHARE = 2 / 3


def names_source(question: str, title: str, other_titles: Iterable[str], other_text: str = "") -> bool:
    """The question names this source: it gives the code in its title ("HB-2026-07"), or most of
    the words of its title that no other title in play has, or one of them that nothing else in
    play (`other_text`) uses at all ("telehealth" when no other source speaks of it)."""
    codes = {c.lower() for c in _TITLE_CODE.findall(title) if not re.fullmatch(r"(?:19|20)\d\d", c)}
    if codes & {c.lower() for c in _TITLE_CODE.findall(question)}:
        return True
    others: set[str] = set()
    for t in other_titles:
        others |= _title_words(t)
    own = _title_words(title) - others
    used = own & _title_words(question)
    if own and len(used) >= NAMED_SHARE * len(own):
        return True
    return bool(used - set(normalize(other_text)))
