"""Whose number is it: the words next to a number say whether it is a member's or the plan's.

Plans label their own numbers ("Prior Authorization Fax: (503) 555-0142", "Payer ID 660510",
"42 CFR 438.408", "Salem, OR 97309-0102", "NPI 1234567893"); a call note attributes a member's
("member callback (503) 555-0187", "reached her on her cell, 503.555.0111"). Pure functions of the
text around a span, shared by every caller of the identifier detector (refusal gate, ingest
screening, post-flight), so one rule decides everywhere:

- A phone number belongs to whoever the nearest attribution before it (same sentence, a few words)
  names: a person ("member's", "her cell", "callback", "call the member at", "called from") or a
  line, office or function ("fax", "line", "Services", "department", "TTY", "our"). A person named in
  a parenthesis right after it ("(member, mobile)") makes it theirs. With no attribution near it,
  the caller's own default applies.
- A number is the plan's or a provider's, never a member identifier, when it is part of a phone
  number (a case-reference detector must not read "555-0142" out of "(503) 555-0142"), a ZIP+4
  after a state, a citation after a legal code mark (CFR, U.S.C., §, Adm. Code, WAC, ...), a number
  labelled with an organization's id ("provider ID", "payer ID", "submitter ID", "TIN"), or a valid
  NPI (the Luhn check digit CMS assigns) in a line that names NPIs or a provider and no person.
"""

from __future__ import annotations

import re
from typing import Literal

_I = re.IGNORECASE

Owner = Literal["person", "org"]

PHONE = re.compile(
    r"(?<![\w-])(?:\+?1[\s.-]?)?(?:\((?P<a1>\d{3})\)\s?|(?P<a2>\d{3})[\s./-]?)"
    r"\d{3}[\s.-]?\d{4}(?![\w-])"
)
TOLL_FREE = frozenset({"800", "833", "844", "855", "866", "877", "888"})

PERSON_NOUN = (r"(?:member|mbr|caller|patient|pt|subscriber|enrollee|beneficiary|insured|policyholder|dependent|"
                r"mother|father|mom|dad|wife|husband|spouse|son|daughter|parent|guardian|sister|brother|"
                r"grand(?:mother|father|son|daughter)|caregiver)")
_NUMBER_WORD = r"(?:phone|number|no\.?|#|cell|mobile|tel|telephone|contact|callback|line|fax)"
_NUMBER_MODIFIER = r"(?:(?:work|home|cell|mobile|new|best|personal|contact|callback|alternate|other|own|phone)\s+)"
# Attributions to a person, each ending where the number's owner is named.
_PERSON_CUES = (
    # "member's phone", "Patient phone", "daughter (authorized rep) phone", "caller's cell"
    rf"\b{PERSON_NOUN}(?:'s|s'|s)?(?:\s*\([^)]{{0,30}}\))?\s+{_NUMBER_MODIFIER}{{0,2}}(?:phone|number|no\.?|#|cell|mobile|tel|telephone|contact|callback|fax)\b",
    rf"\b{PERSON_NOUN}'s\s+{_NUMBER_MODIFIER}{{0,2}}(?:line|fax)\b",  # "member's work line"
    rf"\b(?:her|his|their|my)\s+{_NUMBER_MODIFIER}{{0,2}}{_NUMBER_WORD}",  # "her work line", "his cell"
    rf"\b{PERSON_NOUN}(?:'s|s'|s)?\b(?!\s+(?:services?|line|portal|hotline|relations|handbook|id|card)\b)",
    r"\b(?:her|him|them)\s+(?:at|on)\b",  # "fax the letter to her at"
    r"\b(?:call[\s-]?back|cell|mobile|voicemail|texts?)\b",
    r"\b(?:at|from)\s+home\b|\bhome\s+(?:phone|number|line|tel)\b",
    r"\b(?:called|calling|texted|texting)\s+(?:\w+\s+){0,3}?from\b",
    r"\bnew\s+(?:contact\s+|phone\s+|cell\s+)?(?:number|phone|cell)\b",
    # a number someone hands over: "the member gave phone", "left a callback number", "provided their cell"
    r"\b(?:gave|gives|give|left|provided|provides|shared|read\s+out)\s+(?:(?:her|his|their|a|an|the|us)\s+)?"
    r"(?:\w+\s+)?(?:phone|number|cell|mobile|contact|fax)\b",
)
_PERSON_CUE = re.compile("|".join(f"(?:{c})" for c in _PERSON_CUES), _I)
# Attributions to a line, an office or a function of the plan or a provider.
_ORG_CUE = re.compile(
    r"\b(?:fax(?:es|ed)?|phone|telephone|tel|lines?|hotline|helpline|desk|services|department|dept|unit|team|"
    r"office|intake|center|centre|vendor|program|switchboard|relations|management|review|support|inquiries|"
    r"enrollment|eligibility|scheduling|director|nurses?|tty|tdd|ivr|toll[\s-]?free|local|option|page|crisis|"
    r"referrals|authorizations|appeals|grievances|claims|admissions|notifications|credentialing|billing|"
    r"ours?|us|plan'?s?|clinic'?s?|pharmacy'?s?|hospital'?s?|practice'?s?|provider'?s?|facility'?s?)\b", _I)
# "(member)", "(member, mobile)", "- her cell": a comma would start the next item instead ("fax ..., member callback ...").
_PERSON_AFTER = re.compile(rf"\s*(?:[(\[]|[–—]|\s-\s)\s*(?:the\s+)?(?:{PERSON_NOUN}\b|(?:her|his|their)\b)", _I)
_SENTENCE_END = re.compile(r"[.!?]\s+(?=[A-Z])|\n")
_ATTRIBUTION_REACH = 60  # characters before a number that may name its owner


def _clause_before(text: str, start: int) -> str:
    before = text[max(0, start - _ATTRIBUTION_REACH):start]
    ends = list(_SENTENCE_END.finditer(before))
    return before[ends[-1].end():] if ends else before


def number_owner(text: str, start: int, end: int) -> Owner | None:
    """Who the words around text[start:end] say the number belongs to, or None if they don't say."""
    if _PERSON_AFTER.match(text, end):
        return "person"
    before = _clause_before(text, start)
    person = max((m.end() for m in _PERSON_CUE.finditer(before)), default=-1)
    org = max((m.end() for m in _ORG_CUE.finditer(before)), default=-1)
    if person < 0 and org < 0:
        return None
    return "person" if person >= org else "org"


# ---------------------------------------------------------------------- the plan's and providers' numbers

_STATES = ("Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Georgia|Hawaii|Idaho|"
           "Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|Minnesota|"
           "Mississippi|Missouri|Montana|Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|New York|"
           "North Carolina|North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|South Carolina|"
           "South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|West Virginia|Wisconsin|Wyoming|"
           "District of Columbia|Puerto Rico")
_ZIP_PLUS4 = re.compile(r"\d{5}-\d{4}")
_STATE_BEFORE = re.compile(rf"(?:\b[A-Z]{{2}}|\b(?:{_STATES})),?\s+$")
# A legal code's mark right before a number: "42 CFR 438.408", "§ 1301.137", "WAC 182-526-0200",
# "Ohio Adm. Code 5160-1-19", "10 CCR 2505-10", "215 ILCS 5/368a".
_CITATION_MARK = re.compile(
    r"(?:§§?|\b(?:C\.?F\.?R|U\.?S\.?C|[A-Z]{0,3}CR|CMR|NYCRR|WAC|OAC|ARM|ILCS|[A-Z]\.[A-Z]\.[A-Z]\.(?:[A-Z]\.)?|"
    r"Code(?:\s+Ann)?|Stat(?:utes)?|Regs?|R|Rule|Part|Subpart|Adm|Admin)\.?)\s*$")
# An organization's own id, labelled as such: "Payer ID 660510", "Medicaid provider ID: 004412890",
# "submitter ID 330897", "provider number, e.g. 700012345".
_ORG_ID_LABEL = re.compile(
    r"\b(?:payer|provider|submitter|vendor|clearinghouse|pharmacy|facility|billing|rendering|referring|ordering|"
    r"attending|servicing|taxonomy|contract|employer|ncpdp|tin|ein|tax)(?:'s)?\s+(?:id(?:entifier)?|number|no\.?|#)"
    r"(?:\s*(?:is|:|,|\(|e\.g\.|for\s+example|such\s+as))*\s*$", _I)
_PHONE_LINE_WORD = re.compile(r"\b(?:fax|phone|telephone|tel|lines?|hotline|helpline|tty|tdd|ivr|switchboard)\b", _I)
_NPI_WORD = re.compile(r"\bNPIs?\b", _I)
_PROVIDER_WORD = re.compile(
    r"\b(?:MD|DO|NP|PA-C|DDS|DMD|DPM|OD|LCSW|LPC|RN|clinic|hospital|practice|associates|group|pediatrics|medicine|"
    r"imaging|pharmacy|laboratory|lab|health|center|centre|provider|physician|specialty|accepting\s+new\s+patients)\b", _I)
_PERSON_WORD = re.compile(rf"\b{PERSON_NOUN}\b|\bcard\b|\bDOB\b", _I)


def npi_check_digit_ok(digits: str) -> bool:
    """An NPI: 10 digits starting 1 or 2 whose last digit is the Luhn check of '80840' + the first nine."""
    if len(digits) != 10 or not digits.isdigit() or digits[0] not in "12":
        return False
    total = 0
    for i, ch in enumerate(reversed("80840" + digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def _line_of(text: str, start: int, end: int) -> str:
    line_end = text.find("\n", end)
    return text[text.rfind("\n", 0, start) + 1: line_end if line_end >= 0 else len(text)]


def _within_phone(text: str, start: int, end: int) -> bool:
    """Part of a longer phone number ("555-0142" inside "(503) 555-0142"), not the whole of one."""
    lo = max(0, start - 20)
    return any(m.start() <= start and end <= m.end() and (m.start(), m.end()) != (start, end)
               for m in PHONE.finditer(text, lo, min(len(text), end + 20)))


def is_plan_number(text: str, start: int, end: int) -> bool:
    """Whether text[start:end], a number some identifier detector matched, is the plan's or a provider's
    by its context: part of a phone number, a ZIP+4, a citation, a labelled organization id, an NPI, or a
    whole phone number its nearest words give to a line or an office."""
    token = text[start:end]
    before = text[max(0, start - 40):start]
    if _within_phone(text, start, end):
        return True
    if _ZIP_PLUS4.fullmatch(token) and _STATE_BEFORE.search(before):
        return True
    if _CITATION_MARK.search(before[-14:]) or _ORG_ID_LABEL.search(before):
        return True
    if npi_check_digit_ok(token):
        line = _line_of(text, start, end)
        if (_NPI_WORD.search(line) or _PROVIDER_WORD.search(line)) and not _PERSON_WORD.search(line):
            return True
    if not PHONE.fullmatch(token) or number_owner(text, start, end) != "org":
        return False
    # Ten bare digits are a phone number only when the words name a phone line, not just an office:
    # "Riverside Clinic called about 5551234567" keeps its member number.
    return not token.isdigit() or bool(_PHONE_LINE_WORD.search(_clause_before(text, start)))
