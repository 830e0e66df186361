"""How people write dates, as regular expressions the identifier detectors share: numeric and
month-name dates, ordinal and year words ("the fourth of July, nineteen fifty-two"), and the
looser forms a date of birth takes after its cue word."""

from __future__ import annotations

import re

_I = re.IGNORECASE

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
DATE = (
    r"(?:\d{1,2}[/.-]\d{1,2}[/.-](?:\d{4}|\d{2})(?!\d)"
    r"|\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?!\d)"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+\d{{4}})"
)
DATE_RE = re.compile(DATE, _I)
# After a date-of-birth word a date may also be written with an ordinal word ("the fourth of July, 1958"),
# a two-digit year ("june 9 84") or no year ("DOB 3/4"): still a birth date.
_ORDINAL_WORD = (r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
                 r"(?:thir|four|fif|six|seven|eigh|nine)teenth|twentieth|twenty[-\s](?:first|second|third|fourth|"
                 r"fifth|sixth|seventh|eighth|ninth)|thirtieth|thirty[-\s]first)")
# A year read out in words: "nineteen fifty-two", "nineteen oh five", "two thousand three".
_UNIT_WORD = r"(?:one|two|three|four|five|six|seven|eight|nine)"
_TEENS_WORD = r"(?:ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen)"
_TENS_WORD = r"(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)"
_YEAR_WORDS = (rf"(?:(?:nineteen|twenty)[\s-]+(?:{_TENS_WORD}(?:[\s-]+{_UNIT_WORD})?|{_TEENS_WORD}|oh[\s-]+{_UNIT_WORD}|hundred)"
               rf"|two\s+thousand(?:\s+and)?(?:[\s-]+(?:{_UNIT_WORD}|{_TEENS_WORD}|{_TENS_WORD}(?:[\s-]+{_UNIT_WORD})?))?)")
_YEAR = rf"(?:\d{{4}}|{_YEAR_WORDS})"
# A full date with the day or the year in words ("April fourth nineteen fifty-two", "the 3rd of May, two
# thousand one"): a birth date when a DOB word or a person's name is next to it.
WORD_DATE = (rf"(?:(?:the\s+)?(?:{_ORDINAL_WORD}|\d{{1,2}}(?:st|nd|rd|th)?)\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}"
              rf"|{_MONTH}\s+(?:the\s+)?(?:{_ORDINAL_WORD}|\d{{1,2}}(?:st|nd|rd|th)?),?\s+{_YEAR})")
_WORD_DATE_RE = re.compile(WORD_DATE, _I)
DOB_DATE_RE = re.compile(
    rf"{DATE}|{WORD_DATE}"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+'?\d{{2}}(?!\d)|\d{{1,2}}/\d{{1,2}}(?![/\d])"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?!\d)", _I)
DOB_WORDS = (r"(?:d\.?o\.?b\b\.?|date\s+of\s+birth|birth\s*date|birthday|born(?:\s+on)?"
              r"|birthdate)")
