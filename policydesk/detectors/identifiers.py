"""Member identifiers in free text: IDs, claim numbers, SSNs, phone numbers, dates of birth.

Pure text detection, shared by the refusal gate (questions), the ingester (PHI in
call notes and wiki pages) and the post-flight check (drafted answers).

Borderline decisions (pinned in tests/data/refusal_cases.yaml):
- Toll-free numbers (800, 833, 844, 855, 866, 877, 888) are plan or provider
  service lines, not member phone numbers, and are not flagged.
- Any run of 8+ digits near the words claim / reference / member / subscriber
  is treated as an identifier, except an 8-digit run that is a valid YYYYMMDD
  date ("claims filed between 20250101 and 20251231"). A 10-digit number
  labelled NPI is a public provider identifier and is not flagged.
- A date of birth is flagged only when it is a full date next to DOB words;
  "born on or after 2000-01-01" (an eligibility rule) passes.
"""

from __future__ import annotations

import re
from datetime import date

_I = re.IGNORECASE

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
