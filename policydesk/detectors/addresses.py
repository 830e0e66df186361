"""A member's street or mailing address: an address shape the words right before it give to a person.

Plans print addresses everywhere ("Send written appeals to: Appeals Unit, PO Box 3011, Portland, OR
97208", "Members may send appeals to PO Box 3011"); those are where something is sent, never a member
identifier. An address is a member's only when the nearest words before it attribute it to a person
("member's home address:", "she lives at", "moved to", "his home at", "address for the subscriber:",
"member's PO Box 2290"), in the same sentence.
"""

from __future__ import annotations

import re

from policydesk.detectors.attribution import PERSON_NOUN

_I = re.IGNORECASE
_STREET_SUFFIX = (r"(?:St|Street|Ave|Avenue|Rd|Road|Dr|Drive|Ln|Lane|Blvd|Boulevard|Way|Ct|Court|Pl|Place|Ter|Terrace|"
                  r"Cir|Circle|Pkwy|Parkway|Hwy|Highway|Trl|Trail|Loop|Sq|Square|Pike|Row|Run)")
_ADDRESS = re.compile(
    rf"(?:\b\d{{1,6}}\s+(?:[NSEW]{{1,2}}\.?\s+)?(?:[A-Z0-9][\w'-]*\.?\s+){{1,4}}{_STREET_SUFFIX}\b\.?"
    rf"|\bP\.?\s?O\.?\s+Box\s+\d+|\bPost\s+Office\s+Box\s+\d+)", _I)
# The words that give the address right after them to a person, ending there (with ":" / "is" / ",").
_PERSON_ADDRESS_CUE = re.compile(
    rf"(?:\b(?:{PERSON_NOUN}(?:'s|s'|s)?|her|his|their|my)\s+(?:(?:home|mailing|street|new|current|old|"
    rf"residential|physical)\s+)*address(?:\s+on\s+file)?"
    rf"|\baddress\s+(?:for|of)\s+(?:the\s+)?{PERSON_NOUN}"
    rf"|\b(?:lives|living|resides|residing|moved|moving|relocated|stays|staying)\s+(?:at|to|in)"
    rf"|\b(?:her|his|their)\s+(?:home|house|place|apartment)\s+(?:at|on)"
    rf"|\b(?:{PERSON_NOUN}|her|him|them)\s+at"
    rf"|\b{PERSON_NOUN}(?:'s|s'))"
    r"(?:\s*(?:is|was|:|,|-|now))*\s*$", _I)


def find_member_addresses(text: str) -> list[tuple[int, int]]:
    """Spans of addresses the words right before them attribute to a person."""
    out = []
    for m in _ADDRESS.finditer(text):
        before = text[max(0, m.start() - 60):m.start()]
        before = re.split(r"[.!?;]\s", before)[-1]
        if _PERSON_ADDRESS_CUE.search(before):
            out.append((m.start(), m.end()))
    return out
