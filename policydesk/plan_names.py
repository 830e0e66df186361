"""How a corpus names the plan and its programs: the product names its sources give, the plan's
own names for them ("Northwind Family Care (Medicaid)"), the brand word those names share, and
the plan as the one who acts in a sentence. Derived from the text; nothing here names a plan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

Programs = Mapping[str, Sequence[str]]  # product name -> the plan's own names for it ("Family Care")


def as_programs(programs: Programs | Sequence[str]) -> dict[str, tuple[str, ...]]:
    if isinstance(programs, Mapping):
        return {name: tuple(aliases) for name, aliases in programs.items()}
    return {name: () for name in programs}


def program_forms(name: str) -> list[str]:
    """How staff write a product name: `medicare_advantage` -> 'medicare advantage', 'MA'."""
    words = [w for w in re.split(r"[_\s-]+", name.strip()) if w]
    forms = [" ".join(words).lower()]
    if len(words) > 1:
        forms.append("".join(w[0] for w in words).upper())
    return forms


def _phrase(text: str) -> str:
    return r"\b" + r"[\s-]+".join(map(re.escape, text.split())) + r"\b"


def program_patterns(programs: Programs | Sequence[str]) -> dict[str, re.Pattern]:
    return compiled_programs(tuple(as_programs(programs).items()))


@lru_cache(maxsize=64)
def compiled_programs(programs: tuple[tuple[str, tuple[str, ...]], ...]) -> dict[str, re.Pattern]:
    """One pattern per program: its spoken name, its acronym in capitals, the plan's names for it
    (in any case) and those names without the plan's brand word (in their own capitals, or in any
    case when the name cannot be mistaken for an ordinary word)."""
    named = dict(programs)
    brand = brand_words(programs)
    out = {}
    for name, aliases in named.items():
        spoken, *acronym = program_forms(name)
        alts = [f"(?i:{_phrase(spoken)})"] + [rf"\b{re.escape(a)}\b" for a in acronym]
        for alias in aliases:
            alts.append(f"(?i:{_phrase(alias)})")
            own = " ".join(w for w in alias.split() if w not in brand)
            if own and own != alias and own[0].isupper():
                alts.append(f"(?i:{_phrase(own)})" if _unmistakable(own) else _phrase(own))
        out[name] = re.compile("|".join(alts))
    return out


def _unmistakable(name: str) -> bool:
    """A name staff may type in lower case without it reading as an ordinary word: several words
    ("community care") or one made of two ("TeenCare"); a single plain word ("Select") needs its capital."""
    return len(name.split()) > 1 or any(ch.isupper() for ch in name[1:])


def brand_words(programs: tuple[tuple[str, tuple[str, ...]], ...]) -> set[str]:
    """The words every one of the plan's program names shares: the plan's own name ("Northwind")."""
    everyone = [set(a.split()) for _, aliases in programs for a in aliases]
    return set.intersection(*everyone) if len(everyone) > 1 else set()


# The plan as the one who acts, at the start of a clause: "Northwind verifies the coverage within
# 10 business days", "the plan must decide ...". That is the plan's own clock (the decide side),
# not the asker's, unless the plan only receives, accepts or demands what the asker sends.
_GATEKEEPING = (r"(?:is|was|are|receives?|accepts?|requires?|allows?|permits?|gives?|grants?|expects?|counts?|"
                r"measures?|considers?|denies|deny|treats?|applies|apply|needs?|asks?|waives?|must|may|will|shall|can)\b")
_PLAN_SUBJECT = (r"(?:^|[,;:]\s+|\b(?:and|then|but|so)\s+)(?:(?i:otherwise|then|also|instead|later),?\s+)?"
                 r"(?:(?i:the\s+(?:health\s+)?plan){brand})\s+")
_PLAN_VERB = r"(?:(?:must|will|shall)\s+(?!{gate})[a-z]+\b|(?:(?:also|then|first|only)\s+)?(?!{gate})[a-z]+s\b)"


@lru_cache(maxsize=64)
def _plan_acting(programs: tuple[tuple[str, tuple[str, ...]], ...]) -> re.Pattern:
    brand = "".join(f"|{re.escape(w)}" for w in sorted(brand_words(programs)))
    return re.compile(_PLAN_SUBJECT.format(brand=brand) + _PLAN_VERB.format(gate=_GATEKEEPING))


def plan_acts(text: str, programs: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> bool:
    """The text has the plan do something on its own clock (see `_PLAN_SUBJECT`)."""
    return bool(_plan_acting(programs).search(text))


def plan_has_to(question: str, programs: tuple[tuple[str, tuple[str, ...]], ...] = ()) -> bool:
    """The question asks about the plan's own clock by the plan's name ("how long does Northwind
    have to pay"), in whatever case staff type it."""
    brand = sorted(brand_words(programs))
    if not brand:
        return False
    names = "|".join(map(re.escape, brand))
    return bool(re.search(rf"\b(?:{names})(?:'s)?\s+(?:have|has|get|gets|must|need|needs|take|takes)\s+to\b",
                          question, re.IGNORECASE))


# "Northwind Family Care (Medicaid)": a capitalised name and, in brackets, what it is.
_LABELLED = re.compile(r"\b([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){1,3})\s+\(([A-Za-z][A-Za-z ]{1,30})\)")


def labelled_names(text: str) -> set[tuple[str, str]]:
    """(name, label) pairs a text writes as "Name (label)"."""
    return {(m.group(1), m.group(2).strip()) for m in _LABELLED.finditer(text)}


def program_names(labels: Iterable[tuple[str, str]], products: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The programs a corpus names, each with the plan's names for it: the products its sources
    name, plus every label of a family of names ("Northwind Choice (commercial)", "Northwind
    KidsCare (CHIP)") sharing a first word, once one label of that family is a known product."""
    key = lambda label: "_".join(label.lower().split())  # noqa: E731 - "Medicare Advantage" -> medicare_advantage
    found: dict[str, set[str]] = {p: set() for p in products}
    families: dict[str, set[tuple[str, str]]] = {}
    for name, label in labels:
        families.setdefault(name.split()[0], set()).add((name, key(label)))
    for members in families.values():
        tags = {tag for _, tag in members}
        if len(tags) > 1 and tags & set(products):
            for name, tag in members:
                found.setdefault(tag, set()).add(name)
    return {p: tuple(sorted(aliases)) for p, aliases in sorted(found.items())}


def programs_named(text: str, programs: tuple[tuple[str, tuple[str, ...]], ...]) -> set[str]:
    return {name for name, rx in compiled_programs(programs).items() if rx.search(text)}
