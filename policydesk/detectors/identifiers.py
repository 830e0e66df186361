"""Member identifiers in free text, as spans: IDs, claim and case numbers, SSNs, e-mail
addresses, phone numbers, dates of birth, and a person's name next to a member cue.

Pure text detection, shared by the refusal gate (questions), the redaction layer, the
ingester (PHI in call notes and wiki pages) and the post-flight check (drafted answers).

Generic detectors, in the style of Presidio's pattern recognizers (a shape, context words that
must be near it, and a validator that rejects look-alikes), plus the plan's own ID formats,
which are a setting (`POLICYDESK_PLAN_ID_PATTERNS`, see `policydesk.config`), not code. Presidio
itself is not used: its analyzer needs a spaCy pipeline (the default one is downloaded at run
time), and the spaCy models on PyPI are third-party re-uploads; see docs/refusal.md.

Borderline decisions (labelled in tests/data/refusal/ and tests/data/refusal_cases.yaml):
- Whose number it is comes from `policydesk.detectors.attribution`: a phone number is whoever the nearest
  words before it name ("member callback", "Prior Authorization Fax:"); with neither, a member's unless
  toll-free or a plan line is near with no member cue. Part of a phone number, a ZIP+4, a citation, a
  labelled organization id or a valid NPI in a provider line is never an identifier; an address is a
  member's (`street_address`) only when the words before it give it to a person.
- A number is an identifier when an identifier cue (member, subscriber, ID, #, claim, case,
  MRN, auth, reference, account, Medicaid, ...) stands just before it and it has the shape of
  one: 6+ digits, or 4+ digits with letters or separators. Dates, compact YYYYMMDD dates, code
  shapes (CPT 99213, HCPCS E0601, ICD-10 F32.9, CO-29) and money are not identifiers. "policy"
  is not a cue: a policy number ("policy MP-2024-017") names a document, not a person.
- A cued token may start with a group of letters before spaced digits ("sub id: HX 44 910 223"), never
  a word or a code label ("is a 99213", "cpt 99213"), and may carry a suffix ("8841 20 337-02").
- A Medicare Beneficiary Identifier (CMS's 11-character format, "1EG4-TE5-MK73") is an identifier
  anywhere: it is a national format, not one plan's.
- A bare run of 9+ digits is an identifier anywhere, except a compact date or a labelled NPI.
- Seven or more digits read out as words ("nine one seven, five five five, ...") are a number read
  digit by digit off a card or a phone: an identifier anywhere.
- A date of birth is a full date next to DOB words; "born on or after 2000-01-01" (an
  eligibility rule) passes. A date right after a person's name ("John Smith (03/04/1975)") counts.
- A capitalized name counts only next to a member cue ("member Janet Price", "Caller: Greg
  Ostrowski", "Linda Park (member)", "I have Maria Gonzalez on the line"); a provider's name
  ("Dr. Patel's office") passes. A title and a surname ("mrs. okafor") count anywhere; a lower-case
  name only after "name" ("pt name harold finch") or with a middle initial ("member john r. tanaka").
- Spelled-out e-mail addresses count ("jdoe at gmail dot com", "j.doe(at)gmail(dot)com"), and so do
  dates of birth in words or with a two-digit year after a DOB word ("born the fourth of July, 1958").
- E-mail addresses are identifiers, except role mailboxes (appeals@, claims@, ...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from policydesk.detectors.addresses import find_member_addresses
from policydesk.detectors.attribution import PHONE as _PHONE
from policydesk.detectors.attribution import TOLL_FREE, is_plan_number, number_owner
from policydesk.detectors.date_shapes import (
    DATE,
    DATE_RE,
    DOB_DATE_RE,
    DOB_WORDS,
    WORD_DATE,
)
from policydesk.detectors.normalize import normalize

_I = re.IGNORECASE


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


# ---------------------------------------------------------------------- shapes (dates: date_shapes.py)

_DOB_WORD_RE = re.compile(rf"\b{DOB_WORDS}", _I)
# "born on or after 2000-01-01" states an eligibility rule, not someone's birth date.
_DOB_GAP_RULE = re.compile(
    r"[.?!]\s|\b(?:or|and|before|after|prior|since|until|between|earlier|later|than|from|to)\b", _I
)

_PROVIDER_LINE = re.compile(
    r"\b(?:provider|providers|office|clinic|hospital|pharmacy|fax|line|hotline|department|dept|"
    r"desk|queue|services|um|team|plan|vendor|number\s+for)\b", _I)
_MEMBER_NEAR = re.compile(
    r"\b(?:member(?!\s+(?:services?|line|portal|hotline|relations))|member's|members(?!\s+(?:services?|line))|"
    r"subscriber|patient|pt|caller|enrollee|dependent|her|his|him|she|"
    r"he|their|wife|husband|mother|father|son|daughter|cell|mobile|home|personal|called\s+from|"
    r"call(?:ed)?\s+(?:the\s+member\s+)?back|callback|reach(?:ed)?)\b", _I)

_SSN_SHAPE = re.compile(r"(?<![\w-])\d{3}([-\s.])\d{2}\1\d{4}(?![\w-])")
_SSN_CUE = re.compile(
    r"\b(?:ssn|ss#|ss\s+number|social(?:\s+security)?(?:\s+(?:number|no\.?|#))?)\b[^.?!\d]{0,25}"
    r"(?P<n>\d{3}[\s.-]?\d{2}[\s.-]?\d{4}(?!\d)|(?:(?:ending|ends)(?:\s+in)?|last\s+(?:4|four)(?:\s+digits)?)"
    r"[^.?!\d]{0,12}\d{4}(?!\d))", _I)
_SSN_LAST4_FIRST = re.compile(
    r"\blast\s+(?:4|four)(?:\s+digits)?\s+of\s+(?:the\s+|her\s+|his\s+|their\s+)?(?:ssn|social)\b"
    r"[^.?!\d]{0,12}\d{4}(?!\d)", _I)

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+", _I)
# "jdoe at gmail dot com", "jdoe at gmail.com", "j.doe(at)gmail(dot)com", "j.doe [at] gmail [dot] com"
_EMAIL_SPOKEN = re.compile(
    r"\b[\w.+-]+(?:\s+at\s+|\s*[\[({]\s*at\s*[\])}]\s*)[\w-]+(?:\.|\s+dot\s+|\s*[\[({]\s*dot\s*[\])}]\s*)"
    r"(?:com|net|org|edu|gov|us|io|info|biz|co)\b", _I)
_ROLE_MAILBOX = re.compile(
    r"^(?:appeals?|claims?|providers?|support|info|help|contact|no-?reply|admin|um|grievances?|"
    r"credentialing|compliance|billing|fax|intake|services?|customer\.?service|pharmacy|auth\w*)@", _I)

_ID_CUE = (
    r"(?:member(?:'s)?|mbr|mem|memb|sub|subscriber(?:'s)?|insurance|ins|cin|recipient|patient(?:'s)?|pt|enrollee|"
    r"dependent|claim|clm|mrn|"
    r"medical\s+record|case|ticket|auth(?:orization)?|reference|ref|acct|account|medicaid|medicare|"
    r"beneficiary|hicn|mbi|id|identifier|group|grp|card|policy\s*holder|(?:member|subscriber)'?s?\s+policy|"
    # case references: an authorization, appeal, grievance, referral, ticket or payment trace number
    r"appeals?|grievances?|complaints?|disputes?|referrals?|pre-?cert\w*|pa|prior\s+auth\w*|tracking|trace|"
    r"confirmation|conf|request|req|incident|inquiry|eft|um|checks?(?=\s*(?:#|no\b|num|number)))"
)
# the cue, then at most a few filler words ("number", "no.", "#", "is", "says", ":"), then the token
_FILLER = (r"(?:[\s:#=(.,-]+|\s+(?:number|num|no\.?|id|ids|#|is|was|says|of|reads|ref|card|on|the|in|from|as|"
           r"listed|shows|shown|given|printed)\b)*")
# A leading group of letters before spaced digits ("HX 44 910 223", "W 2231 9940 7"), never a word or
# a code label ("is a 99213", "cpt 99213"), then the token proper.
_LEAD_LETTERS = (r"(?:(?!(?:a|an|the|on|in|is|of|at|to|for|by|or|and|as|it|if|my|no|so|we|was|are|her|his|has|had|"
                 r"have|with|from|got|plus|also|were|then|lists?|show|shows|"
                 r"cpt|hcpcs|icd|drg|rev|ndc|npi|pos|tob|dos|mod|code|codes|page|step|tier|level|day|days|"
                 r"visit|visits|unit|units|form|version|section|rule|item|line|box|field)\s)[A-Za-z]{1,4}\s(?=\d))?")
_LEAD_RE = re.compile(r"[A-Za-z]{1,4}\s(?=\d)")
_TOKEN = (rf"(?P<tok>{_LEAD_LETTERS}(?=[A-Za-z0-9./-]*\d)[A-Za-z0-9]+"
          r"(?:(?:[-./]|\s(?=[A-Za-z]*\d))[A-Za-z0-9]+){0,6})")
_CUED_ID = re.compile(rf"\b{_ID_CUE}\b(?:{_FILLER})\s*{_TOKEN}(?![\w-])", _I)
_BARE_DIGITS = re.compile(r"(?<![\w-])#?\d{9,}(?![\w-])")
# A number read out digit by digit ("nine one seven, five five five, ..."): 7+ digit words in a row.
_DIGIT_WORD = r"(?:zero|oh|one|two|three|four|five|six|seven|eight|nine)"
_DIGIT_UNIT = rf"(?:{_DIGIT_WORD}|(?:double|triple)\s+(?:{_DIGIT_WORD}|\d)|\d)"
_SPOKEN_DIGITS = re.compile(
    rf"(?<![\w-]){_DIGIT_UNIT}(?:[\s,.-]+{_DIGIT_UNIT}){{6,}}(?![\w-])", _I)
# Letters and digits spelled out one by one ("K-L-9-9-0-4-1-2-7", "h x 4 4 9 1 0 2"): 6+ single characters
# in a row, 4+ of them digits: a number read off a card, an identifier anywhere.
_SPELLED_CHARS = re.compile(r"(?<![\w-])[A-Za-z0-9](?:(?:\s*[-.]\s*|\s+)[A-Za-z0-9]){5,}(?![\w-])")
# Digits in 3+ spaced groups ("2026 0612 7754 03") a few words after an identifier or case cue in the same
# sentence ("the claim number on the EOB is ..."): not a phone number, a date or a code list.
_SPACED_GROUPS = re.compile(r"(?<![\w/.-])\d{2,6}(?:\s\d{2,6}){2,}(?![\w/.-])")
# The Medicare Beneficiary Identifier (CMS's national format, not one plan's): 11 characters, digits and
# letters in fixed positions (no S, L, O, I, B, Z), often written in groups of 4-3-4.
_MBI_LETTER = "[AC-HJKMNP-RT-Y]"
_MBI = re.compile(rf"(?<![\w-])[1-9]{_MBI_LETTER}[AC-HJKMNP-RT-Y0-9]\d[-\s]?{_MBI_LETTER}[AC-HJKMNP-RT-Y0-9]\d"
                  rf"[-\s]?{_MBI_LETTER}{{2}}\d{{2}}(?![\w-])", _I)
# A case reference: letters and digits joined by a separator or run together ("UM2026-004519", "GRV-20931",
# "2026CM0457", "7731-220-A", "88-1234"), and the words that say a number is one.
_CASE_REF_SHAPE = re.compile(
    r"(?<![\w/.-])(?=[A-Za-z0-9-]*\d)(?:[A-Za-z]{1,6}-?\d[A-Za-z0-9]*|\d+[A-Za-z]+\d[A-Za-z0-9]*|\d{2,})"
    r"(?:[-/][A-Za-z0-9]+)*(?![\w-]|[/.]\w)")
_CASE_CUE = re.compile(
    r"\b(?:auth(?:orization)?s?|pre-?auth\w*|prior\s+auth\w*|pa|pre-?cert\w*|referrals?|appeals?|grievances?|"
    r"complaints?|disputes?|cases?|tickets?|tracking|trace|confirmation|request|ref|reference|claims?|clm|"
    r"checks?|eft|remit\w*|um|inquir(?:y|ies)|incident|reconsideration|redetermination)\b", _I)
_DOC_CUE = re.compile(
    r"\b(?:policy|policies|pol|section|sec|form|bulletin|version|v|manual|memo|memorandum|notice|document|doc|page|"
    r"rule|alert|update|letter|transmittal|release|advisory|circular|announcement|newsletter|revision|"
    r"guideline|article|chapter|code|codes|cpt|hcpcs|icd(?:-?10)?|ndc|drg|rev|npi|tin|tax\s+id|fax|phone|line|"
    r"model|part|exhibit|attachment|appendix|schedule|table|item|step|modifier|plan\s+year|year|years)\b"
    r"[\s:#.-]*(?:(?:is|was|number|no\.?|#)\s*)*$", _I)
_CODE_RANGE = re.compile(r"(?:\d{5}|[A-Z]\d{4}|\d{4}[A-Z])-(?:\d{5}|[A-Z]\d{4}|\d{4}[A-Z])", _I)
_YEAR_RANGE = re.compile(r"(?:19|20)\d\d[-/](?:(?:19|20)?\d\d)")
_CODE_SHAPE = re.compile(
    r"^(?:\d{5}|[A-Z]\d{4}|\d{4}[A-Z]|[A-Z]\d{2}(?:\.\w{1,4})?|[A-Z]{2}-?\d{1,3}|\d{1,4})$", _I)
_NPI_LABEL = re.compile(r"\bNPI\b[\s:#]*$", _I)

# Case-sensitive on purpose: capitalized "First Last", optional middle initial, or a title.
_NAME = (r"(?:(?:Mr|Mrs|Ms|Miss|Mx)\.?\s+[A-Z][a-z'-]+(?:\s+[A-Z][a-z'-]+)?"
         r"|[A-Z][a-z'-]+(?:\s+[A-Z]\.?)?\s+(?:O'|Mc|Mac)?[A-Z][a-z'-]+)")
_PERSON_CUE = r"(?:member|caller|patient|pt|subscriber|dependent|enrollee|beneficiary|insured|policyholder)"
_NAME_AFTER_CUE = re.compile(
    rf"\b(?i:{_PERSON_CUE})(?:\s+(?i:name)\s+(?i:is)|\s*(?i:'s\s+name\s+is))?[\s:,(]+(?P<name>{_NAME})\b")
_NAME_BEFORE_CUE = re.compile(
    rf"(?P<name>{_NAME})\s*(?:\(\s*(?i:the\s+)?(?i:{_PERSON_CUE})\s*\)|,\s*(?i:the|our|a)\s+(?i:{_PERSON_CUE})\b"
    rf"|\s+(?i:is\s+)?(?i:on\s+(?:the\s+line|hold|the\s+phone)))")
# A title and a surname is a person wherever it stands ("i have mr. okafor on the phone", "a Mrs. Lindqvist");
# "Dr." is left out (providers are named in policy questions). "ms"/"miss" need a period or a capital:
# "MS" is also multiple sclerosis.
_TITLED_NAME = re.compile(
    r"\b(?:(?i:mr|mrs|mx)\.?\s+[A-Za-z][a-z'-]+|(?i:ms|miss)\.\s+[A-Za-z][a-z'-]+|(?:Ms|Miss)\s+[A-Z][a-z'-]+)")
# Lower-case names only with an unmistakable cue: "member name: ana ruiz", "pt name harold finch", or a
# middle initial after a person cue ("member john r. tanaka").
_LOWER_NAME_AFTER_NAME_CUE = re.compile(
    rf"\b(?:{_PERSON_CUE}|caller)(?:'s)?\s+name\s*(?:is|:|-)?\s*"
    rf"(?P<name>[a-z][a-z'-]+(?:\s+[a-z]\.?)?\s+[a-z][a-z'-]+)\b", _I)
_LOWER_NAME_WITH_INITIAL = re.compile(
    rf"\b(?:{_PERSON_CUE})(?:'s)?(?:\s+is)?[\s:,(]+(?P<name>[a-z][a-z'-]+\s+[a-z]\.\s+[a-z][a-z'-]+)\b", _I)
_NAME_THEN_DATE = re.compile(rf"(?P<name>{_NAME})\s*[,(]\s*(?:(?i:born|dob|d\.o\.b\.?)[\s:]*)?(?P<date>(?i:{DATE}|{WORD_DATE}))")
_NAME_THEN_DOB = re.compile(rf"(?P<name>{_NAME})\s*[,(]?\s*(?i:{DOB_WORDS})")
_NOT_NAME_WORDS = frozenset("""
    services service operations appeals appeal health plan care medicare medicaid
    advantage prior authorization behavioral customer provider providers member members id card
    replacement interpreter network claims claim policy policies desk quick reference escalation
    unit office compliance quality audit dispute review special investigations fraud referral rate
    rates schedules schedule contract coordination benefits benefit emergency admission notification
    timely filing durable medical equipment pharmacy formulary exceptions telehealth minimum
    necessary disclosure corrected resubmission out-of-network referrals credentialing management
    supervisor case the a an and or of for to what how when where which who why can could does do
    is are will would should please thanks hi hello hey question questions call calls caller
    patient subscriber dependent name first last new old my our your his her their this that
    cost sharing share coverage covered visit visits services status
    monday tuesday wednesday thursday friday saturday sunday january february march april may june
    july august september october november december dos dob ssn mrn npi er pt pcp
""".split())


def _plain_name(name: str) -> bool:
    words = [w.strip(".'").lower() for w in name.split()]
    if words and words[0] in {"mr", "mrs", "ms", "miss", "mx"}:
        return len(words) > 1 and words[1] not in _NOT_NAME_WORDS
    return not any(w in _NOT_NAME_WORDS for w in words)


def _is_compact_date(digits: str) -> bool:
    """'20250101': an 8-digit YYYYMMDD date, not a claim or member number."""
    if len(digits) != 8:
        return False
    try:
        date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))
    except ValueError:
        return False
    return 1900 <= int(digits[:4]) <= 2099


def is_date_token(token: str) -> bool:
    return bool(DATE_RE.fullmatch(token)) or _is_compact_date(token)


def id_shaped(token: str, *, min_plain_digits: int = 6) -> bool:
    """An identifier's shape: 6+ digits, or 4+ digits with letters or separators; never a date,
    a code (CPT, HCPCS, ICD-10, reason codes) or a year."""
    digits = sum(c.isdigit() for c in token)
    if is_date_token(token) or _CODE_SHAPE.fullmatch(token):
        return False
    if token.isdigit():
        return digits >= min_plain_digits
    return digits >= 4 or (digits >= 3 and len(token) >= 8 and sum(c.isalpha() for c in token) >= 2)


@lru_cache(maxsize=32)
def _plan_regexes(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(rf"(?<![\w-])(?:{p})(?![\w-])", _I) for p in patterns)


def _default_plan_patterns() -> tuple[str, ...]:
    from policydesk.config import get_settings

    return tuple(get_settings().PLAN_ID_PATTERNS)


# ---------------------------------------------------------------------- detectors

def _phones(text: str) -> list[Finding]:
    out = []
    for m in _PHONE.finditer(text):
        owner = number_owner(text, m.start(), m.end())
        if owner == "org" or _NPI_LABEL.search(text, max(0, m.start() - 12), m.start()):
            continue  # "Prior Authorization Fax: (503) ...", "the clinic's main line 509-...": not a member's
        if owner is None:
            if (m.group("a1") or m.group("a2")) in TOLL_FREE:
                continue
            window = text[max(0, m.start() - 45):m.end() + 45]
            if _PROVIDER_LINE.search(window) and not _MEMBER_NEAR.search(window):
                continue
        out.append(Finding("phone_number", m.start(), m.end()))
    return out


def _dates_of_birth(text: str) -> list[Finding]:
    out = []
    for m in _DOB_WORD_RE.finditer(text):
        found = DOB_DATE_RE.search(text, m.end(), m.end() + 60)
        if found and found.start() - m.end() <= 40 and not _DOB_GAP_RULE.search(text, m.end(), found.start()):
            out.append(Finding("date_of_birth", found.start(), found.end()))
        # "pt DOB" right after the date: "04/01/1985 date of birth"
        before = list(DATE_RE.finditer(text, max(0, m.start() - 30), m.start()))
        if before and not _DOB_GAP_RULE.search(text, before[-1].end(), m.start()):
            out.append(Finding("date_of_birth", before[-1].start(), before[-1].end()))
    for m in _NAME_THEN_DATE.finditer(text):
        if _plain_name(m.group("name")):
            out.append(Finding("date_of_birth", m.start("date"), m.end("date")))
    return out


def _cued_numbers(text: str) -> list[Finding]:
    out = []
    for m in _CUED_ID.finditer(text):
        token = m.group("tok").rstrip(".-/")
        if _PHONE.fullmatch(token) or _PHONE.fullmatch(token.split(" ", 1)[-1]):
            continue  # a phone number: a plan line passes, a member's is found by `_phones`
        lead = _LEAD_RE.match(token)
        if lead and not id_shaped(token[lead.end():]):  # the letters are not the identifier: "says 180"
            continue
        if id_shaped(token) and not _NPI_LABEL.search(text, max(0, m.start("tok") - 12), m.start("tok")):
            cue = m.group(0)[: m.start("tok") - m.start()].lower()
            kind = "claim_number" if re.search(r"\b(?:claim|clm)\b", cue) else "member_id"
            out.append(Finding(kind, m.start("tok"), m.start("tok") + len(token)))
    out += _case_references(text)
    for m in _SPACED_GROUPS.finditer(text):
        token = m.group(0)
        if sum(c.isdigit() for c in token) < 9 or _PHONE.fullmatch(token):
            continue
        if all(len(group) == 5 for group in token.split()):
            continue  # a list of procedure codes: "97110 97112 97140"
        before = re.split(r"[.?!;]\s", text[max(0, m.start() - 60):m.start()])[-1]
        if re.search(rf"\b{_ID_CUE}\b", before, _I) or _CASE_CUE.search(before):
            if not _DOC_CUE.search(before[-30:]):
                out.append(Finding("member_id", m.start(), m.end()))
    for m in _BARE_DIGITS.finditer(text):
        digits = m.group(0).lstrip("#")
        if not _is_compact_date(digits) and not _NPI_LABEL.search(text, max(0, m.start() - 12), m.start()):
            out.append(Finding("member_id", m.start(), m.end()))
    return [f for f in out if not is_plan_number(text, f.start, f.end)]


def _case_references(text: str) -> list[Finding]:
    """A case reference number with its cue a few words before it in the same sentence ("the reference
    number for the member's PA is UM2026-004519", "the auth on this is 7731-220-A"): letters and digits
    with a separator, or digits in groups, 5+ digits in all. Not a date, a code, a year range, a phone
    number, or a number a document word labels ("policy MP-2024-017", "form 2024-11")."""
    out = []
    for m in _CASE_REF_SHAPE.finditer(text):
        token = m.group(0)
        digits = sum(c.isdigit() for c in token)
        if digits < 5 or is_date_token(token) or _YEAR_RANGE.fullmatch(token) or _PHONE.fullmatch(token):
            continue
        if token.isdigit() or _CODE_RANGE.fullmatch(token) or _CODE_SHAPE.fullmatch(token):
            continue  # a code range, "99201-99215"
        before = text[max(0, m.start() - 70):m.start()]
        before = re.split(r"[.?!;]\s", before)[-1]
        if not _CASE_CUE.search(before) or _DOC_CUE.search(before[-30:]):
            continue
        out.append(Finding("member_id", m.start(), m.end()))
    return out


def _names(text: str) -> list[Finding]:
    out = []
    for pattern in (_NAME_AFTER_CUE, _NAME_BEFORE_CUE, _NAME_THEN_DOB, _LOWER_NAME_AFTER_NAME_CUE,
                    _LOWER_NAME_WITH_INITIAL):
        for m in pattern.finditer(text):
            if _plain_name(m.group("name")):
                out.append(Finding("person_name", m.start("name"), m.end("name")))
    for m in _TITLED_NAME.finditer(text):
        if _plain_name(m.group(0)):
            out.append(Finding("person_name", m.start(), m.end()))
    return out


def find_identifier_spans(text: str, plan_patterns: Sequence[str] | None = None) -> list[Finding]:
    """Every identifier span found, in text order (spans may overlap), as offsets into `text` itself:
    pass text already in its normal form (`detectors.normalize`), as `redact` does."""
    patterns = tuple(plan_patterns) if plan_patterns is not None else _default_plan_patterns()
    found: list[Finding] = []
    for regex in _plan_regexes(patterns):
        # the plan's own formats are member identifiers (member, subscriber or claim numbers)
        found += [Finding("member_id", m.start(), m.end()) for m in regex.finditer(text)]
    found += [Finding("ssn", m.start(), m.end()) for m in _SSN_SHAPE.finditer(text)]
    found += [Finding("ssn", m.start("n"), m.end("n")) for m in _SSN_CUE.finditer(text)]
    found += [Finding("ssn", m.start(), m.end()) for m in _SSN_LAST4_FIRST.finditer(text)]
    found += [Finding("email", m.start(), m.end()) for m in _EMAIL.finditer(text)
              if not _ROLE_MAILBOX.match(m.group(0))]
    found += [Finding("email", m.start(), m.end()) for m in _EMAIL_SPOKEN.finditer(text)]
    found += [Finding("spoken_number", m.start(), m.end()) for m in _SPOKEN_DIGITS.finditer(text)]
    found += [Finding("member_id", m.start(), m.end()) for m in _MBI.finditer(text)]
    found += [Finding("spoken_number", m.start(), m.end()) for m in _SPELLED_CHARS.finditer(text)
              if sum(c.isdigit() for c in m.group(0)) >= 4]
    found += _phones(text) + _dates_of_birth(text) + _cued_numbers(text) + _names(text)
    found += [Finding("street_address", start, end) for start, end in find_member_addresses(text)]
    return sorted(found, key=lambda f: (f.start, -f.end))


def token_holds_identifier(token: str, plan_patterns: Sequence[str] | None = None) -> bool:
    """Does a bare token of letters, digits and hyphens (an X-Request-ID, say) hold an identifier that
    needs no cue word: the plan's own formats, an SSN, a phone number, a Medicare Beneficiary
    Identifier, 9+ digits, or a date (a birth date has no cue in a token)? Hyphens count as
    separators. The cued detectors are not asked: a token has no sentence around it, and
    "req-7f3a-42" is not a request number anyone gave."""
    normal = normalize(token)
    spaced = normal.replace("-", " ")
    patterns = tuple(plan_patterns) if plan_patterns is not None else _default_plan_patterns()
    shapes = (*_plan_regexes(patterns), _SSN_SHAPE, _MBI, _BARE_DIGITS, _PHONE)
    return bool(DATE_RE.search(normal)) or any(shape.search(spaced) for shape in shapes)


def find_member_identifiers(text: str, plan_patterns: Sequence[str] | None = None, *,
                            normalized: bool = False) -> list[str]:
    """Kinds of member identifier found in text, in first-seen order, no repeats. The text is read in
    its normal form (`detectors.normalize`: other scripts' look-alikes, fullwidth forms, invisible
    characters and dash variants folded); pass `normalized=True` when it already is."""
    if not normalized:
        text = normalize(text)
    return list(dict.fromkeys(f.kind for f in find_identifier_spans(text, plan_patterns)))
