"""How a question is framed, whatever it asks about: a request someone else made (reported speech),
a request for information, the specific case and the deadline a request names, and misspelled
action verbs.

Pure text functions shared by the claim-action detector (`policydesk.detectors.claims`) and the
intent classifier (`policydesk.screening.intent`), which decide what a framing means for them. For example, a
rep asking what to tell a member who "asked me to just approve it" is asking for information, not
asking PolicyDesk to approve anything.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE

# A question that opens with a wh-word asks about the rule ("what does it take to get the auth approved?").
_WH_FIRST = re.compile(
    r"^\W*(?:(?:hi|hey|hello|sorry|ok(?:ay)?|so|quick\s+question|question)[\s,!:.-]+)*"
    r"(?:how|what|what's|whats|when|where|which|who|whose|why)\b", _I)


def opens_with_wh(question: str) -> bool:
    return bool(_WH_FIRST.search(question))


# A specific case: a possessive or demonstrative ("her auth", "this claim", "the member's copay").
# "that" before a verb opens a relative clause ("a service that was never billed"), not a demonstrative.
SPECIFIC = re.compile(
    r"\b(?:this|these|those|her|his|their|my|our)\b|\b[\w-]+'s\b|\bthat\b(?!\s+(?:was|were|is|are|has|have|had|"
    r"will|would|can|could|may|might|must|should|did|does|do|never|already|still|gets?|got|needs?|requires?)\b)", _I)
# A time the rep wants it done by, or "please": what makes "can the denial be lifted ...?" a request.
URGENT = re.compile(
    r"\b(?:today|tonight|tomorrow|right\s+now|now|right\s+away|asap|immediately|urgently|yesterday|"
    r"this\s+(?:week|morning|afternoon|evening|time|once|month)|just\s+(?:this\s+)?once|one\s+time|"
    r"(?:by|before|until|on|to)\s+(?:next\s+|last\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
    r"tomorrow|eod|noon|end\s+of\s+(?:the\s+)?(?:day|week|month))|end\s+of\s+day|last\s+(?:week|month)|"
    r"since\s+(?:she|he|they|we|the)|so\s+(?:that\s+)?(?:she|he|they|the\s+claim|it)\b|please|pls)\b", _I)

# Reported speech: a request a member, caller or provider made ("Member asked me to just approve it.
# What do I tell them?", "the office keeps saying 'pay the claim already'"). The rep is asking what to
# do about it, not asking PolicyDesk to act, unless the rep also asks for it ("... Can you do it now?").
_REPORTING = re.compile(
    r"\b(?:asked|asks|asking|told|tells|telling|wants?|wanted|wanting|demand(?:s|ed|ing)?|insist(?:s|ed|ing)?|"
    r"beg(?:s|ged|ging)|keeps?\s+(?:asking|saying|telling|begging|pushing)|kept\s+(?:asking|saying|telling)|said|"
    r"says|saying|request(?:s|ed|ing)|expects?|expected|expecting|push(?:es|ed|ing)|pressur(?:es|ed|ing)|"
    r"urg(?:es|ed|ing)|instructed|called\s+(?:in\s+)?(?:asking|wanting|demanding))\b", _I)
# the rep's own request: "I want you to", "we need", "I'm asking you to" (a first-person subject)
_FIRST_PERSON_BEFORE = re.compile(
    r"\b(?:i|we|i'm|we're|i'd|we'd)(?:\s+(?:am|are|would|really|just|also|still|do|now|formally))*\s*$", _I)
_QUOTED = re.compile(r"\"[^\"]{3,}\"|“[^”]{3,}”|(?<!\w)'[^']{3,}?'(?!\w)|‘[^’]{3,}’")
_SENTENCE_END = re.compile(r"[.?!;](?:\s|$)|\s[-–—]\s")
# the rep asks PolicyDesk itself to do what was reported
OWN_REQUEST = re.compile(
    r"\b(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|just\s+)*(?:do|handle|process|action|take\s+care\s+of)\s+"
    r"(?:it|that|this|them)\b|(?:^|[.!?;,]\s*|\b(?:please|just)\s+)(?:do|handle|action)\s+(?:it|that|this)\b"
    r"|\bgo\s+ahead\b", _I)


def reported_spans(question: str) -> list[tuple[int, int]]:
    """Spans of a request someone else made: from the reporting verb (with a third-party subject) to
    the end of its sentence, and anything in quotes."""
    spans = [m.span() for m in _QUOTED.finditer(question)]
    for m in _REPORTING.finditer(question):
        if _FIRST_PERSON_BEFORE.search(question, max(0, m.start() - 30), m.start()):
            continue
        end = _SENTENCE_END.search(question, m.end())
        spans.append((m.start(), end.start() if end else len(question)))
    return spans


def outside(span: tuple[int, int], reported: list[tuple[int, int]]) -> bool:
    return not any(a <= span[0] and span[1] <= b for a, b in reported)


def remainder(question: str, reported: list[tuple[int, int]]) -> str:
    keep, pos = [], 0
    for a, b in sorted(reported):
        if a > pos:
            keep.append(question[pos:a])
        pos = max(pos, b)
    keep.append(question[pos:])
    return " ".join(keep)


# Misspelled action verbs ("aprove", "reimburce", "overide"): one edit away from a long action verb is
# read as that verb. Short verbs are left alone ("deny" is one edit from "dent", "denial" from "dental").
_TYPO_TARGETS = (
    "approve", "approved", "approving", "reimburse", "reimbursed", "reimbursement", "override", "overridden",
    "overturn", "overturned", "reprocess", "reprocessed", "authorize", "authorized", "backdate", "backdated",
    "release", "released", "reverse", "reversed", "adjudicate", "expedite", "reinstate", "rescind",
)
_TYPO_BY_LENGTH: dict[int, tuple[str, ...]] = {}
for _t in _TYPO_TARGETS:
    for _n in (len(_t) - 1, len(_t), len(_t) + 1):
        _TYPO_BY_LENGTH[_n] = _TYPO_BY_LENGTH.get(_n, ()) + (_t,)
_WORD = re.compile(r"[A-Za-z]{5,}")


def _one_edit(a: str, b: str) -> bool:
    """a and b differ by one insertion, deletion, substitution or transposition of neighbours."""
    if a == b:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    if abs(len(a) - len(b)) != 1:
        return False
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long_[i]:
        i += 1
    return short[i:] == long_[i + 1:]


_COMMON_TYPOS = re.compile(r"\bteh\b", _I)


def normalize_typos(question: str) -> str:
    """The question with misspelled long action verbs replaced by the verb (for the rules only)."""
    question = _COMMON_TYPOS.sub("the", question)

    def fix(m: re.Match) -> str:
        word = m.group(0).lower()
        if word in _TYPO_TARGETS:
            return m.group(0)
        for target in _TYPO_BY_LENGTH.get(len(word), ()):
            if word[0] == target[0] and _one_edit(word, target):
                return target
        return m.group(0)
    return _WORD.sub(fix, question)


# A request for information: a wh-question, "please explain", "what do I tell them", or a last sentence
# that asks about the rule ("... What's the process for a payment dispute?", "... Is there a hardship
# policy for that?", "... Am I even allowed to do that?"). The learned claim-action guess yields to it.
_INFO_REQUEST = re.compile(
    r"\b(?:explain|clarify|describe|walk\s+me\s+through|remind\s+me|tell\s+me|let\s+me\s+know|"
    r"(?:want|wants|wanted|need|needs|like|trying)\s+to\s+(?:know|understand|find\s+out|check|figure\s+out)|"
    r"help\s+(?:me\s+)?understand(?:ing)?|wondering|what\s+(?:do|should|can)\s+i\s+(?:say|tell)|"
    r"how\s+do\s+i\s+(?:explain|tell|say|answer|respond|handle)|figure\s+out|"
    # an indirect question: "the provider is asking whether we'll pay for ..."
    r"(?:ask|asks|asked|asking|wondering|wonders|want\s+to\s+know|wants\s+to\s+know)\s+"
    r"(?:whether|if|how|what|when|why|which)|"
    r"what(?:'s|\s+is)\s+the\s+(?:process|procedure|rule|policy|timeline|deadline|script))\b", _I)
# where the last clause starts: a sentence end, a dash, or a comma before a question ("my caller wants his
# claim paid today, what's the normal turnaround?")
_CLAUSE_BREAK = re.compile(
    r"[.?!;:]\s+|\s[-–—]\s|,\s+(?=(?:so\s+)?(?:how|what|what's|whats|when|where|which|who|why|is\s+there|"
    r"are\s+there|is\s+that|is\s+it\s+true|do|does|did|can|could)\b)", _I)
_RULE_QUESTION_FIRST = re.compile(
    r"^\W*(?:(?:so|ok(?:ay)?|and|but|also|then)[\s,]+)*(?:how|what|what's|whats|when|where|which|who|whose|why"
    r"|is\s+there(?!\s+(?:any|a)\s+(?:way|chance))|are\s+there|is\s+it\s+true"
    r"|is\s+that\s+(?:true|right|correct|normal)"
    r"|am\s+i\b|are\s+(?:we|reps|staff)\s+(?:even\s+)?(?:allowed|able|supposed|required|permitted)"
    r"|(?:do|does|did)\s+(?!you\b|u\b|me\b)"
    # "is balance billing allowed ...?", "are hearing aids covered ...?" (not "is it ok to", "is there any way")
    r"|(?:is|are|was|were)\s+(?!it\b|there\s+(?:any|a)\s+(?:way|chance)|you\b|u\b)"
    r"|(?:can|may)\s+i\s+(?:even\s+|still\s+)?(?:talk|tell|say|explain|share|discuss|give)"
    r"|(?:can|could|would|will|does|do)\s+(?:a|an|any)\s"
    # a third party's rule: "can DME cover that after the fact?", "will the plan pay for ...?"
    r"|(?:can|could|will|would|should|may)\s+(?!you\b|u\b|we\b|i\b)(?:the\s+plan|the\s+\w+|\w+)\s+"
    r"(?:cover|pay|reimburse|allow|accept|require|need)\b"
    # what someone else may do: "..., can they resubmit it the same week?", "can providers refile online?"
    r"|(?:can|could|may|must|should|do|does|will|would)\s+(?:they|he|she|providers?|members?|doctors?|offices?|"
    r"the\s+(?:provider|member|doctor|office|caller|pharmacy|facility|hospital|clinic)(?!'s))\s+(?!get\b|have\b)\w+)", _I)
# "can we accept a claim received on day 95 if ...": whether an action is allowed on some case, not
# this one (no possessive, demonstrative or deadline)
_MAY_WE_GENERIC = re.compile(
    r"^\W*(?:can|could|may|should)\s+(?:we|i|reps?|staff)\s+(?:[\w-]+\s+){1,2}?(?:a|an|any)\s", _I)


# "Should the claim be denied if it arrives on day 91?": a decision asked about any case that meets a condition
_CONDITIONAL_RULE = re.compile(
    r"^\W*(?:should|would|will|must|can|could|may|does|do|is|are)\s+(?:the|a|an|any|her|his|their)\s+[^.?!]{0,80}?"
    r"\b(?:if|when|unless|once)\s+(?:a|an|any|the|it|she|he|they|her|his|their)\b", _I)


def _last_clause(question: str) -> str:
    body = question.strip().rstrip(".?! ")
    starts = [m.end() for m in _CLAUSE_BREAK.finditer(body)]
    return question.strip()[max(starts):] if starts else question.strip()


def asks_for_information(question: str) -> bool:
    """The question asks to be told something about the rule, whatever verbs it uses."""
    if opens_with_wh(question) or _INFO_REQUEST.search(question):
        return True
    last = _last_clause(question)
    if _RULE_QUESTION_FIRST.search(last):
        return True
    if _CONDITIONAL_RULE.search(last) and not URGENT.search(last):
        return True
    return bool(_MAY_WE_GENERIC.search(last)) and not SPECIFIC.search(last) and not URGENT.search(last)
