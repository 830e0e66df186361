"""What a chosen sentence carries when it is quoted: the lead-in and neighbours it needs to be
understood, or its whole lettered subsection when that is short (policydesk/providers/choice.py
chooses the sentence)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from policydesk.providers.blocks import terms, word_count

# A sentence that refers back to the one before it ("a claim for these services ...").
_REFERS_BACK = re.compile(r"^(?:[\w'-]+\s+){0,3}?(?:this|these|those|such|the\s+same)\b", re.IGNORECASE)
# A sentence opening with a definite noun phrase ("The provider's services ..."): what it names may
# be what the sentence before it named.
_DEFINITE_OPENING = re.compile(r"^(?:the|its|their)\s+(?:[\w'-]+\s+){0,2}[\w'-]+", re.IGNORECASE)
# A question whether something may be done ("am I allowed to tell them?", "can they go straight to
# the state?") is answered by the limit put on it; when the next sentence of the passage states one
# ("must not", "must first") and the chosen sentence does not, it is quoted too.
_ASKS_LEAVE = re.compile(r"^\W*(?:can|could|may|am|is|are)\b|[.?!,;-]\s*(?:can|could|may|am|is|are)\s+(?:i|we|they|he|she|"
                         r"you|it|the\s+\w+|a\s+\w+)\b|\b(?:allowed|permitted|ok(?:ay)?)\s+to\b", re.IGNORECASE)
_RESTRICTION = re.compile(r"\b(?:must|may|can|should)\s+(?:not|never|first|only)\b|\bcannot\b|\bcan't\b|\bonly\s+(?:if|when|with|after)\b",
                          re.IGNORECASE)
# The next sentence of the passage is quoted too when it has this many of the question's words that
# the chosen sentence lacks, even without referring back to it: the pair says what is asked.
CONTINUATION_WORDS = 2
# A lettered subsection up to this many words is quoted whole around the chosen sentence.
SUBSECTION_WORDS = 90


@dataclass(frozen=True)
class Candidate:
    block_index: int
    sentence_index: int
    sentence: str
    similarity: float
    score: float
    lead_in: str = ""
    continuation: str = ""  # what follows it in the quote: the next sentence, or the rest of its subsection

    @property
    def quote(self) -> str:
        """The sentence as shown: with the lead-in it needs to be understood, and its continuation."""
        return " ".join(p for p in (self.lead_in, self.sentence, self.continuation) if p)


def _whole_subsection(c: Candidate, quotable, units: list[int | None],
                      beside: Callable[[str, str], bool]) -> Candidate | None:
    """The candidate quoted with the rest of its lettered subsection, when that is short: payers
    write one rule per subsection, its exception or condition in the sentence after ("The year of
    birth does not count."), so the subsection is what a reader must see. Left out of it: a
    sentence `beside` rejects (another side or program than the one asked, a rule for other
    dates). None when the candidate sits in no subsection or a long one."""
    unit = units[c.sentence_index]
    if unit is None:
        return None
    members = [(s, text, lead) for b, s, text, lead in quotable if b == c.block_index and units[s] == unit]
    if sum(word_count(text) for _, text, _ in members) > SUBSECTION_WORDS:
        return None
    title = members[0][2]  # a titled subsection's title, ahead of its first sentence
    kept = [(s, text) for s, text, lead in members if s == c.sentence_index or beside(text, lead)]
    before = [text for s, text in kept if s < c.sentence_index]
    after = [text for s, text in kept if s > c.sentence_index]
    return replace(c, lead_in=" ".join([title, *before]).strip(), continuation=" ".join(after))


def carried(c: Candidate, quotable, part: str, units: list[int | None],
             beside: Callable[[str, str], bool]) -> Candidate:
    """The candidate read with what it needs or what finishes it: its whole lettered subsection
    when that is short (`_whole_subsection`); otherwise its neighbours in the same passage (same
    block, same lead-in): the sentence before, when the candidate refers back to it ("a claim
    for these services ..."); the sentence after, when it has words of the part the candidate lacks
    (the pair says what is asked, the sentence alone not) and goes on about the candidate, or has
    several such words."""
    whole = _whole_subsection(c, quotable, units, beside)
    if whole is not None:
        return whole
    near = {s: (text, lead) for b, s, text, lead in quotable if b == c.block_index}
    before, after, lead = near.get(c.sentence_index - 1), near.get(c.sentence_index + 1), c.lead_in
    if before and before[1] == lead and _REFERS_BACK.search(c.sentence):
        c = replace(c, lead_in=" ".join(p for p in (lead, before[0]) if p))
    if after and after[1] == lead:
        lacking = (terms(part) & terms(after[0])) - terms(f"{c.lead_in} {c.sentence}")
        restricts = _ASKS_LEAVE.search(part) and _RESTRICTION.search(after[0]) and not _RESTRICTION.search(c.sentence)
        if len(lacking) >= CONTINUATION_WORDS or (lacking and _goes_on(after[0], c.sentence)) or restricts:
            c = replace(c, continuation=after[0])
    return c


def _goes_on(after: str, sentence: str) -> bool:
    """The next sentence goes on about this one: it refers back ("these services ..."), or its opening
    noun phrase is definite and names what this one does ("The provider's services continue ...")."""
    if _REFERS_BACK.search(after):
        return True
    opening = _DEFINITE_OPENING.match(after)
    return bool(opening and terms(opening.group(0)) & terms(sentence))
