"""Who acts, what act, and what is counted: read from the question, checked against a passage.

A near-miss question is often answered by the nearest real sentence that states the asked kind of
value about another act or actor: the time a member has to appeal for the time a provider has to
ask for a review, an appeal's filing limit for the time to pay a premium, "6 months" for how many
visits. Three checks, each firing only when the question says the thing plainly:

- *actor*: the party the question says acts ("does a provider have to ask ...") against the party
  that is the subject of the sentence's act ("A member may request ..."); a sentence whose act has
  another party as its subject does not answer.
- *act*: a deadline for an act that is neither filing nor deciding nor a light verb ("have to pay
  the premium") is met only by a passage speaking of that act (where the sources use its verb at
  all) and of what it is done to.
- *counted*: "how many visits" is met only by a sentence giving a number of visits.
- *requested*: "how long to ask for an independent review" is met only by a passage speaking of
  that review (most of its words), not by the limit to request a reconsideration.

Nothing here names a plan or a document: the party words are the party axis's, verbs are English.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from policydesk.asked_object import speaks_of
from policydesk.words import STOPWORDS, normalize

_MEMBER = r"(?:members?|enrollees?|beneficiar(?:y|ies)|patients?|subscribers?)"
_PROVIDER = r"(?:providers?|practitioners?|physicians?|doctors?|facilit(?:y|ies)|suppliers?|prescribers?)"
_PARTIES = {"member": re.compile(rf"\b{_MEMBER}\b", re.I), "provider": re.compile(rf"\b{_PROVIDER}\b", re.I)}
_PARTY = rf"(?P<party>{_MEMBER}|{_PROVIDER})"
_DET = r"(?:(?:a|an|the|our|their|this|that|his|her|each|any|every)\s+)?"
# The party the question says does the act: "does a commercial provider have to ask ...", "can the
# member file ...", "how long does a supplier need to ...", "the member has to ...".
_ACT_VERB = r"(?:have|has|need|needs|get|file|files|ask|asks|request|requests|submit|submits|send|sends|appeal|appeals|go)\b"
_QUESTION_ACTOR = (
    re.compile(rf"\b(?:does|do|can|could|may|must|should|will|would|did)\s+{_DET}(?:[\w'-]+\s+){{0,2}}?{_PARTY}\s+{_ACT_VERB}", re.I),
    re.compile(rf"\b{_PARTY}\s+(?:has|have|needs?|must|may|can)\s+(?:to\s+)?(?:file|ask|request|submit|send|appeal|go)\b", re.I))
# The subject of a sentence's act: "A member may request ...", "(d) The enrollee must ask ...",
# "A non-contracted provider may request one ...". Read at the start of a sentence only (a quote may
# hold its lead-in and the next sentence too).
_SENTENCE_ACTOR = re.compile(
    rf"(?:^|[.:;]\s+)\s*(?:\(?[a-z0-9]{{1,3}}\)\s+)?{_DET}(?:[\w'-]+\s+){{0,3}}?{_PARTY}\s+(?:may|must|can|should|has|have|shall)\s+"
    r"(?:also\s+|first\s+)?(?:to\s+)?(?:file|ask|request|submit|send|appeal|go|seek|call)\b", re.I)


def actor_asked(question: str) -> str | None:
    """The one party the question says acts, or None."""
    found = {_side(m.group("party")) for rx in _QUESTION_ACTOR for m in rx.finditer(question)}
    return found.pop() if len(found) == 1 else None


def sentence_actors(text: str) -> set[str]:
    """The parties that are the subject of an act of filing or asking in the text's sentences."""
    return {_side(m.group("party")) for m in _SENTENCE_ACTOR.finditer(text)}


def _side(word: str) -> str:
    return "member" if _PARTIES["member"].fullmatch(word) else "provider"


# "have to pay the premium", "take to refund the overpayment": the act a deadline is for, and what
# it is done to (up to four words, ending where a new phrase starts).
_ACT = re.compile(
    r"\b(?:have|has|need|needs|take|takes|long|deadline|time|limit|days|hours|months)\s+to\s+(?P<verb>[a-z]+)"
    r"(?:\s+(?:for|in|out|back|up|off))?\s+(?:(?:a|an|the|their|our|my|his|her|its|this|that)\s+)?"
    r"(?P<object>(?:[\w'-]+\s+){0,3}?[\w'-]+)(?=\s*(?:[?,.;:]|$|\b(?:in|to|for|from|on|with|by|before|after|"
    r"within|if|when|at|of|during|so|and|or|once)\b))", re.I)
# Verbs that carry no act of their own ("get the claim in", "go to the state") or whose act the
# action axis reads (filing, deciding): those deadlines are checked by the axes.
_LIGHT_OR_AXIS = frozenset("""be have get go keep make do take give put come let start reach use see hear
file submit send request ask appeal bill decide resolve respond notify process review issue render
""".split())
# English past forms a stem prefix does not reach: "pay" is spoken of by "paid".
_IRREGULAR = {"pay": "paid", "buy": "bought", "hold": "held", "keep": "kept", "send": "sent", "give": "given"}


@dataclass(frozen=True)
class Act:
    verb: str
    object: frozenset[str]
    verb_used: bool = True  # some source in play uses the verb; if none does, the sources say it otherwise

    def in_context(self, texts: Iterable[str]) -> "Act":
        """The act as the sources in play can state it: a verb none of them uses ("book a ride" where
        they say "schedule") is not asked of a passage; what it is done to still is."""
        return replace(self, verb_used=any(_uses_verb(self.verb, t) for t in texts))


def act_asked(question: str, qualifiers=()) -> Act | None:
    """The content act a deadline question asks about, with the head of what it is done to."""
    m = _ACT.search(question)
    if not m or m.group("verb").lower() in _LIGHT_OR_AXIS or m.group("verb").lower() in STOPWORDS:
        return None
    phrase = m.group("object")
    for pattern in qualifiers:
        phrase = pattern.sub(" ", phrase)
    words = [w for w in normalize(phrase) if w not in STOPWORDS and len(w) > 2]
    return Act(m.group("verb").lower(), frozenset(words[-1:]))  # the head noun: "a clean claim" is a claim


def _uses_verb(verb: str, text: str) -> bool:
    """The text uses the verb in some form ("pay": "payment", "paid", "pays")."""
    stem = verb[:-1] if verb.endswith("e") and len(verb) > 4 else verb
    forms = (stem, _IRREGULAR[verb]) if verb in _IRREGULAR else (stem,)
    return any(t.startswith(forms) for t in normalize(text))


def speaks_of_act(act: Act, text: str) -> bool:
    """The text speaks of the act (where the sources use its verb) and of what it is done to."""
    return (not act.verb_used or _uses_verb(act.verb, text)) and (not act.object or speaks_of(act.object, text))


# What the asker is to ask for: "have to ask the state for an independent review", "to request a
# fair hearing". A limit to request one kind of review is not the limit to request another.
_REQUESTED = re.compile(
    r"\b(?:to|they|we|i|you|he|she)\s+(?:ask\s+(?:[\w'-]+\s+){0,3}?for|request)\s+"
    r"(?:(?:a|an|the|their|our|his|her|its|this|that)\s+)?(?P<object>(?:[\w'-]+\s+){0,3}?[\w'-]+)"
    r"(?=\s*(?:[?,.;:]|$|\b(?:in|to|for|from|on|with|by|before|after|within|if|when|at|of|during|so|and|or|once)\b))",
    re.I)


def requested(question: str, qualifiers=()) -> frozenset[str]:
    """The folded content words of what the question's asker is to ask for, without programs and sides."""
    m = _REQUESTED.search(question)
    phrase = m.group("object") if m else ""
    for pattern in qualifiers:
        phrase = pattern.sub(" ", phrase)
    return frozenset(w for w in normalize(phrase) if w not in STOPWORDS and len(w) > 2)


# "How many occupational therapy visits ...", "how many pairs of glasses ...": the counted noun is
# the last word before the verb (or before "of").
_COUNTED = re.compile(r"\bhow\s+many\s+((?:[a-z][\w'-]*\s+){0,3}?)([a-z][\w'-]*?)(?=\s+(?:of|are|is|do|does|can|could|"
                      r"will|would|should|must|may|get|gets|a|an|per|each|before|until|after|allowed|covered)\b)", re.I)
_COUNT_VALUE = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|single)"


def counted_noun(question: str) -> str | None:
    m = _COUNTED.search(question)
    if not m or m.group(2).lower() in STOPWORDS:
        return None
    return normalize(m.group(2))[0] if normalize(m.group(2)) else None


def counts(noun: str, sentence: str) -> bool:
    """The sentence gives a number of the counted thing: "12 visits", "one pair", "two identifiers"."""
    stem = noun[:-1] if noun.endswith("e") and len(noun) > 4 else noun
    return bool(re.search(rf"\b{_COUNT_VALUE}\s+(?:[\w'-]+\s+){{0,2}}?{re.escape(stem)}\w*", sentence, re.I))
