"""What the caller's sources mention: their words, and the abbreviations those words make.

A question word that no source the caller may read uses, and that is not everyday English,
names something the sources do not talk about: another payer, a benefit or drug never
mentioned, a subject above the caller's clearance. Such a question is one the sources don't
answer, whatever sentence ranks nearest. A word counts as used when a source has it after
folding plurals and suffixes, or has a word it abbreviates ("auth", "recred", "appt"), or
words it is the initials of ("TFL", "eob"), or a word it misspells by one letter. Everyday
English is the whole-word vocabulary of the embedding model's tokenizer: a paraphrase in
plain words ("how far ahead", "my kid") is left to the similarity checks, not refused here,
except where the plain word is what the question is about (a document it names, what a
passive question's rule happens to, the benefit a coverage or price question asks about, what a
when-question asks the time of, a name written capitalised inside the question, months and
weekdays aside; such a word is not excused as two everyday words run together):
a subject no readable source names is not the caller's to be answered on, whether it is made
up or only above their clearance, so both read alike.

The vocabulary is derived from the readable text itself, so it needs no list of a plan's terms,
and it is computed per clearance so it never reflects what the caller may not read.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Container, Iterable
from dataclasses import dataclass, field

from policydesk.screening.words import ACRONYM_MAX, ACRONYM_MIN, STOPWORDS, everyday_words, normalize, run_initials

# Words of how staff phrase a question rather than of what they ask about.
SCAFFOLD = frozenset("""
    hey hi hello thanks thank please quick question q wondering wonder know need want help tell say said
    mean means explain ask asking asked look find check sure think guess someone somebody anyone anybody
    thing things stuff like just really actually basically exactly right ok okay yes yeah still even ever
    again already usually normally generally correct true wrong understand remind confirm rule rules
    policy policies say says here there now today currently current latest new old way ways kind sort
    situation case cases example scenario happen happens happened get gets got go goes going come comes
    make makes made let lets use used using give gives given take takes keep does did done doing would
    could might shall someone's anything something everything nothing else much many long soon often
    time times day days week weeks month months year years hour hours minute minutes number amount also
    our we us i me my you your they them their he she his her it its what whats when where which who whom
    why how
""".split())

_ABBREVIATION_MIN = 3
_VOWELS = set("aeiou")


def _fold(word: str) -> str:
    folded = normalize(word)
    return folded[0] if folded else word.lower()


def _within_one_edit(a: str, b: str) -> bool:
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) <= 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long_[i]:
        i += 1
    return short[i:] == long_[i + 1:]


@dataclass(frozen=True)
class Vocabulary:
    words: frozenset[str]  # folded words of every readable title, heading and text
    initials: Container[str]  # initials of runs of 2-5 readable content words ("timely filing limit" -> tfl)
    _sorted: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_sorted", tuple(sorted(self.words)))

    def _abbreviates(self, word: str) -> bool:
        """A corpus word starts with it ("auth", "recred"), or, for a short all-consonant tail,
        spells it in order from the same first letter ("appt", "clm")."""
        if len(word) < _ABBREVIATION_MIN:
            return False
        i = bisect_left(self._sorted, word)
        if i < len(self._sorted) and self._sorted[i].startswith(word):
            return True
        if len(word) <= 4 and not (set(word[1:]) & _VOWELS):
            j = bisect_left(self._sorted, word[0])
            while j < len(self._sorted) and self._sorted[j].startswith(word[0]):
                it = iter(self._sorted[j])
                if all(ch in it for ch in word):
                    return True
                j += 1
        return False

    @classmethod
    def of(cls, texts: Iterable[str]) -> "Vocabulary":
        words: set[str] = set()
        initials: set[str] = set()
        for text in texts:
            tokens = normalize(text)
            words.update(tokens)
            words.update(part for t in tokens if "-" in t for part in t.split("-") if part)
            initials |= run_initials(tokens)
        return cls(frozenset(words), frozenset(initials))

    def knows(self, word: str) -> bool:
        """The sources use this word, or a form, abbreviation, expansion or misspelling of it."""
        if "-" in word.strip("-"):  # "non-par", "follow-up": each part on its own
            return all(self.knows(part) for part in word.split("-") if len(part) > 2)
        lower = word.lower()
        folded = _fold(lower)
        if folded in self.words or lower in self.words or self._abbreviates(lower):
            return True
        if lower.endswith("s") and self._abbreviates(lower[:-1]):  # a plural abbreviation ("copays", "auths")
            return True
        if ACRONYM_MIN <= len(lower) <= ACRONYM_MAX and lower in self.initials:
            return True
        if len(folded) >= 5:  # a typo of a word the sources use ("recredentailing", "apeal")
            return any(_within_one_edit(folded, w) for w in self.words if abs(len(w) - len(folded)) <= 1
                       and w[:1] == folded[:1])
        return False

    def knows_compound(self, word: str) -> bool:
        """Two whole words run together, each everyday or used by the sources ("turnaround",
        "themself"); never a fragment ("acu" + "puncture" is not "acute" + "puncture")."""
        lower, common = word.lower(), everyday_words()

        def whole(part: str) -> bool:
            return len(part) >= 3 and (part in common or part in self.words)

        return any(whole(lower[:i]) and whole(lower[i:]) for i in range(3, len(lower) - 2))


# "What does the fraud referral procedure say", "what is the dispute review procedure": the question
# names a document; no readable source could be called that unless its words are the sources' own.
_NAMED_DOCUMENT = re.compile(
    r"\bthe\s+((?:[A-Za-z][\w'-]*\s+){1,4}?)(?:procedure|policy|manual|guide|guidelines?|bulletin|page|memo|faq|"
    r"article|handbook|playbook|protocol)s?\b", re.I)
# A capitalised word inside the question, or one in capitals: a name (another payer, a product, a
# drug) that no paraphrase stands in for. A month or weekday is part of a date, not a name.
_NAME = re.compile(r"(?<![.?!:]\s)(?<!^)(?<![.?!:])\b([A-Z][a-z]{2,}|[A-Z]{2,6})\b")
_CALENDAR_WORDS = frozenset("""january february march april may june july august september october november
    december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
    saturday sunday mon tue tues wed thu thur thurs fri sat sun""".split())
# "How quickly must member complaints be reported": what the asked rule happens to.
_PASSIVE_SUBJECT = re.compile(
    r"\b(?:must|should|can|will|would|could|may|do|does|is|are)\s+(?:the|a|an|their|our|my|his|her)?\s*"
    r"((?:[A-Za-z][\w'-]*\s+){0,2}([A-Za-z][\w'-]*))\s+be\s+[a-z]+(?:ed|en|wn)\b", re.I)

# "When is the holiday potluck for ...": what a when-question asks the time of.
_WHEN_SUBJECT = re.compile(
    r"\bwhen(?:'s|s|\s+(?:is|are|was|were|will\s+be))\s+(?:the|a|an|our|their|this|that|next)\s+"
    r"(?:[A-Za-z][\w'-]*\s+){0,2}?([A-Za-z][\w'-]*)(?=\s*(?:[?,.;]|$|\b(?:for|of|at|in|on|this|next|with)\b))", re.I)


def unknown_terms(question: str, vocabulary: Vocabulary) -> list[str]:
    """The question's words that no readable source uses and that are not everyday English, or that
    say what the question is about however plain they are: the name of a document it asks about
    (no readable source could be called "the fitness referral procedure"), what a passive
    question's rule happens to ("how quickly must member compliments be reported"), what a
    when-question asks the time of, and a name ("Kaiser's filing limit")."""
    common = everyday_words()
    naming = {w.lower() for m in _NAMED_DOCUMENT.finditer(question) for w in m.group(1).split()}
    naming |= {m.group(2).lower() for m in _PASSIVE_SUBJECT.finditer(question)}
    naming |= {m.group(1).lower() for m in _NAME.finditer(question.strip())} - _CALENDAR_WORDS
    naming |= {m.group(1).lower() for m in _WHEN_SUBJECT.finditer(question)}
    out: list[str] = []
    for raw in re.findall(r"[A-Za-z][A-Za-z'-]*[A-Za-z]", question):
        word = raw.strip("'-")
        lower = word.lower().removesuffix("'s")
        if len(lower) < 3 or "'" in lower or lower in STOPWORDS or lower in SCAFFOLD or _fold(lower) in SCAFFOLD:
            continue
        parts = [p for p in lower.split("-") if p]
        everyday = all(p in common or p.removesuffix("s") in common for p in parts)
        if (everyday and lower not in naming) or _CONTRACTION.match(lower):
            continue
        # an everyday word is no compound, and what the question is about must be the sources' own word
        run_together = not everyday and lower not in naming and vocabulary.knows_compound(lower)
        if not vocabulary.knows(word) and not run_together and lower not in out:
            out.append(lower)
    return out


# A contraction typed without its apostrophe ("hasnt", "wont", "theyre").
_CONTRACTION = re.compile(r"^(?:(?:is|was|are|were|do|does|did|has|have|had|could|would|should|must|ca|wo|need)nt|"
                          r"(?:they|we|you|who|what)re|(?:i|you|we|they|could|would|should|must)ve|"
                          r"(?:i|you|he|she|we|they|it|that)ll|im|ive|youre|theyre)$")
