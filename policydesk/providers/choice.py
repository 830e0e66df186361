"""Which sentences the offline answerer quotes: those that answer the ask, then by meaning.

Each part of the question ("how long to file, and where do appeals go?") gets its own best
sentence. Only sentences that meet what the part asks and qualifies are candidates
(`policydesk.answerability`: the kind of value asked for, the program, participating or not,
standard or expedited, filing vs deciding...), read with the lead-in and heading they need;
among them, cosine similarity between the part and the sentence (same embedding model as
retrieval) decides, with the sides the sentence names explicitly, the source the question
names, the unit and number the question gives and lexical overlap as bonuses; a sentence that
tells of a change gives way, and one telling what is kept does not answer a question about the
new rule. A quoted
sentence carries what it needs to be read (`policydesk.providers.carrying`): its whole lettered
subsection when that is short, else the neighbour it refers back to and the next one when that
goes on about it and holds what the question asks. There is no synonym table, so nothing here knows one
corpus's vocabulary. A part with no such sentence similar enough is left unanswered rather
than answered with a neighbour.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from functools import partial
from typing import Protocol

import numpy as np

from policydesk.answerability import Ask, Passage, fit, names_source
from policydesk.date_conditions import leaves_out
from policydesk.plan_names import Programs
from policydesk.providers.blocks import (
    SourceBlock,
    in_force_from,
    looks_injected,
    passages_in_subsections,
    terms,
    word_count,
)
from policydesk.providers.carrying import Candidate, carried
from policydesk.providers.local import VectorCache
from policydesk.words import STOPWORDS

# Below this cosine similarity a sentence does not address the question part. MiniLM scale;
# set equal to the retrieval abstain threshold when that was 0.35 (it is now calibrated
# separately, settings.ABSTAIN_THRESHOLDS); on the 34-item golden dev split no answerable
# item's quoted sentence was under it (evals/README.md).
SIMILARITY_FLOOR = 0.35
# Lexical overlap (share of the part's content words) only separates near-equal meanings.
LEXICAL_WEIGHT = 0.08
# A question asking "how long / how many / when" wants the sentence that states the value,
# not its neighbour that restates the topic.
VALUE_BONUS = 0.06
# Close calls go to binding text: a policy outranks a wiki page, a wiki page a call note.
TYPE_BONUS = {"policy": 0.02, "wiki": 0.0, "call_note": -0.03}
# Another policy's best sentence is quoted too when it is this close to the best one
# (cross-document questions: "do telehealth and behavioral health both ...").
CROSS_DOC_MARGIN = 0.03
MAX_SENTENCES = 4
# Per side or program a sentence names explicitly that the question asked for: the specific rule
# ("corrected claims must ...") before the general one it qualifies.
SPECIFIC_BONUS = 0.05
# Per question word found in few of the passages in play (at most DISTINCT_SHARE of them) that the
# sentence has: the exception asked about ("retroactive", "other insurance") over the general rule.
DISTINCT_BONUS = 0.04
DISTINCT_SHARE = 0.25
DISTINCT_MAX = 2
# A sentence that has a code or number the question gives ("95810", "E0260", "CMS-1500").
CODE_BONUS = 0.10
_CODE = re.compile(r"\b(?=[\w-]*\d)[A-Za-z0-9][\w-]{2,}\b")
_YEAR = re.compile(r"^(?:19|20)\d\d$")
# The source whose title the question names ("the CHIP bulletin") over a closer-scoring other one.
NAMED_SOURCE_BONUS = 0.05
# A sentence that tells of a change ("will be decided within 7 days instead of 15") gives way to
# one stating the rule itself, unless the question asks about the change.
CHANGE_PENALTY = 0.12
_TELLS_CHANGE = re.compile(
    r"\b(?:instead\s+of|rather\s+than|no\s+longer|as\s+(?:they|it|we|you)\s+already\s+do|changes?\s+from|"
    r"replac(?:es|ing)|will\s+now|previously|formerly|(?:up|down)\s+from|stays?\s+as\s+(?:it|they)\s+(?:is|are)|"
    r"(?:is|are)\s+not\s+changing|remains?\s+unchanged)\b", re.IGNORECASE)
# A question about the new rule ("what's the new limit") is not answered by a sentence saying what is
# kept ("claims for earlier dates keep the 180-day limit", "... stay as they are").
_ASKS_NEW = re.compile(
    r"\b(?:the|what'?s|whats)\s+(?:new|newer|updated)\b|\b(?:new|updated)\s+(?:[\w-]+\s+){0,2}?(?:limit|rule|deadline|"
    r"time\s*frame|window|tfl|requirement|process)s?\b|\b(?:now|going\s+forward|from\s+now\s+on|changed?\s+to)\b",
    re.IGNORECASE)
_ASKS_OLD = re.compile(r"\b(?:old|older|previous\w*|used\s+to|prior|earlier|former\w*|still|before\s+the\s+change)\b",
                       re.IGNORECASE)
_TELLS_KEPT = re.compile(
    r"\b(?:keeps?|kept|still\s+appl(?:y|ies)|stays?\s+as|remains?\s+(?:the\s+same|unchanged)|unchanged|not\s+changing|"
    r"(?:earlier|previous|old|former)\s+(?:\d+-day\s+)?(?:limit|rule|deadline|timeframe))\b", re.IGNORECASE)
_ASKS_CHANGE = re.compile(
    r"\b(?:chang\w*|new|newer|differ\w*|still|anymore|any\s+more|no\s+longer|used\s+to|updat\w*|instead|"
    r"replac\w*|previous\w*|old|before\s+the)\b", re.IGNORECASE)
# "By which rental month", "how many calendar days": the value asked for, in the unit the question
# names with its qualifier; a sentence stating a value in that unit ("the 4th rental month") over
# one stating another ("the 13th month").
UNIT_BONUS = 0.08
_ASKED_UNIT = re.compile(r"\b(?:which|what|how\s+many)\s+((?:[a-z]+\s+){1,2}?)(day|hour|week|month|year|visit)s?\b",
                         re.IGNORECASE)
# A number the question gives, in any form ("after the third one" and "after three no-shows").
NUMBER_BONUS = 0.04
_ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth "
             "fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth").split()
# "one" is left out: in a question it is mostly a pronoun ("the third one").
_CARDINALS = ("two three four five six seven eight nine ten eleven twelve").split()
_NUMBER_TOKEN = re.compile(r"(?<![\w/:.-])(\d{1,3})(?:st|nd|rd|th)?(?![\w/:]|[.-]\d)|\b(" + "|".join(_ORDINALS + _CARDINALS)
                           + r")\b", re.IGNORECASE)
_NUMBER_ALT = r"\d{1,3}(?:st|nd|rd|th)?|" + "|".join(_ORDINALS + _CARDINALS)
_RANGE = re.compile(rf"\b({_NUMBER_ALT})\s+(?:through|thru|to)\s+({_NUMBER_ALT})\b", re.IGNORECASE)
MAX_RANGE = 60
# A wiki page or note sentence that says what a policy sentence says (cosine of the plain
# sentences at least this) is a restatement: the binding policy sentence is quoted instead.
RESTATEMENT_COSINE = 0.85

_NUMBER_WORD = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fourteen|fifteen|"
                r"twenty|thirty|forty|forty-five|sixty|ninety)")
_VALUE = re.compile(
    r"(?:\b\d+(?:\.\d+)?\)?|\b" + _NUMBER_WORD + r")\s*(?:-\s*)?(?:calendar\s+|business\s+|working\s+)?"
    r"(?:days?|hours?|hrs?|weeks?|months?|years?|minutes?|visits?|percent|%|dollars?)|\$\s?\d",
    re.IGNORECASE,
)
_ASKS_FOR_VALUE = re.compile(
    r"\b(?:how\s+(?:long|many|much|soon|often|quickly|fast)|when|deadline|limit|window|within|timely|"
    r"days?|hours?|period|time\s*frame|cut-?off|by\s+when|what\s+is\s+the\s+(?:copay|cost|fee))\b",
    re.IGNORECASE,
)
# Where one question becomes two: a second question mark, a semicolon, or "and"/"also"
# followed by a new interrogative.
_PART_BREAK = re.compile(
    r"(?<=\?)\s+(?=\S)|;\s*|\s+(?:and|also|plus|as\s+well\s+as)\s+(?=(?:what|how|when|where|who|which|"
    r"is|are|does|do|can|could|should|must|will|would)\b)",
    re.IGNORECASE,
)


class Embedder(Protocol):
    def get_query_embedding(self, query: str) -> list[float]: ...
    def get_text_embedding_batch(self, texts: list[str], **kwargs) -> list[list[float]]: ...


def question_parts(question: str) -> list[str]:
    """The question's separate asks; a fragment with fewer than two content words joins its neighbour."""
    parts: list[str] = []
    for piece in _PART_BREAK.split(question.strip()):
        piece = piece.strip(" ,")
        if not piece:
            continue
        if parts and len(terms(piece)) < 2:
            parts[-1] = f"{parts[-1]} {piece}"
        else:
            parts.append(piece)
    if len(parts) > 1 and len(terms(parts[0])) < 2:
        parts[1] = f"{parts[0]} {parts[1]}"
        parts.pop(0)
    return parts or [question]


_ACRONYM = re.compile(r"\b[A-Z]{2,5}s?\b")
_RUN_WORD = re.compile(r"[A-Za-z][A-Za-z-]*")
_WORD_PART = re.compile(r"[A-Za-z]+")  # a hyphenated word gives an initial per part too ("Non-Coverage": N, C)


def expand_abbreviations(question: str, texts: list[str]) -> str:
    """The question with each capitalised abbreviation followed by the words it stands for in the
    sources ("PA" -> "PA (prior authorization)"), when the sources spell it out: the embedding
    model does not know a plan's abbreviations, the sources do."""
    found = {m.group(0).rstrip("s") for m in _ACRONYM.finditer(question)}
    if not found:
        return question
    counts: dict[str, Counter] = {a: Counter() for a in found}
    for text in texts:
        for words in {tuple(_RUN_WORD.findall(text)), tuple(_WORD_PART.findall(text))}:
            for i in range(len(words)):
                for a in found:
                    run = words[i:i + len(a)]
                    if len(run) == len(a) and "".join(w[0] for w in run).upper() == a and any(len(w) > 3 for w in run):
                        counts[a][" ".join(w.lower() for w in run)] += 1
    for a, runs in counts.items():
        if runs:
            question = re.sub(rf"\b{a}s?\b", lambda m: f"{m.group(0)} ({runs.most_common(1)[0][0]})", question, count=1)
    return question


def _number(digits: str, word: str) -> int:
    if digits:
        return int(digits)
    w = word.lower()
    return _ORDINALS.index(w) + 1 if w in _ORDINALS else _CARDINALS.index(w) + 2


def numbers_in(text: str) -> set[int]:
    """The small numbers a text states, however written ("3", "3rd", "three", "third"), and every
    number inside a range it states ("fourth through thirteenth month" holds the 5th)."""
    out = {_number(*m.groups()) for m in _NUMBER_TOKEN.finditer(text)}
    for m in _RANGE.finditer(text):
        low, high = _number(*_NUMBER_TOKEN.fullmatch(m.group(1)).groups()), _number(*_NUMBER_TOKEN.fullmatch(m.group(2)).groups())
        if 0 < high - low <= MAX_RANGE:
            out.update(range(low, high + 1))
    return out


def states_asked_unit(part: str, sentence: str) -> bool:
    """The part asks for a value in a qualified unit ("which rental month") and the sentence states
    one in it ("before the 4th rental month")."""
    m = _ASKED_UNIT.search(part)
    qualifiers = [w for w in (m.group(1).split() if m else []) if w.lower() not in STOPWORDS]
    if not qualifiers:
        return False
    value = r"(?:\d+(?:st|nd|rd|th)?|" + "|".join(_ORDINALS + _CARDINALS) + r")"
    unit = r"\s+".join(map(re.escape, qualifiers)) + r"\s+" + m.group(2) + r"s?\b"
    return bool(re.search(rf"\b{value}\s+{unit}", sentence, re.IGNORECASE))


def _beside(part: str, ask: Ask, block: SourceBlock, dates: Sequence[date], text: str, lead: str) -> bool:
    """A sentence may be quoted beside the chosen one: it takes no other side or program than the
    part asks, and is no rule for other dates than those that apply (the same tests as ranking's)."""
    verdict = fit(ask, Passage(sentence=text, lead_in=lead, heading=block.heading, products=block.products))
    if verdict.contests:
        return False
    wants_old = bool(_ASKS_OLD.search(part))
    if _ASKS_NEW.search(part) and not wants_old and _TELLS_KEPT.search(text):
        return False
    return wants_old or not leaves_out(text, dates, in_force_from(block))


def states_value(sentence: str) -> bool:
    return bool(_VALUE.search(sentence))


def _unit(vector) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


class SentenceChooser:
    def __init__(self, model: Embedder, cache: VectorCache | None = None) -> None:
        self._model = model
        self._cache = cache or VectorCache(model)

    def _vectors(self, texts: list[str]) -> list[np.ndarray]:
        return [_unit(v) for v in self._cache.embed(texts)]

    def choose(self, question: str, blocks: list[SourceBlock], programs: Programs | Sequence[str] = (),
               chosen_program: str | None = None, dates: Sequence[date] = ()) -> list[Candidate]:
        """The sentences to quote, in answer order: per question part its best, then close other policies.
        `dates`: the dates versions were resolved for (none: today)."""
        read = [passages_in_subsections(block.text, (block.title, block.section)) for block in blocks]
        quotable = [(b, s, text, lead) for b, found in enumerate(read)
                    for s, (text, lead, _) in enumerate(found)
                    if word_count(text) >= 3 and not looks_injected(text)]
        if not quotable:
            return []
        units = [[unit for _, _, unit in found] for found in read]
        # Each sentence under its heading, and, where it has one, with its lead-in too ("(c) Family
        # Care (Medicaid). The plan decides ..."): the closer reading counts.
        plain = self._vectors([f"{blocks[b].heading}: {text}" for b, _, text, _ in quotable])
        led = [(i, f"{blocks[b].heading}: {lead} {text}") for i, (b, _, text, lead) in enumerate(quotable) if lead]
        vectors = [[v] for v in plain]
        for (i, _), v in zip(led, self._vectors([t for _, t in led]), strict=True):
            vectors[i].append(v)
        whole = Ask.of(question, programs, chosen_program)
        titles = {block.doc: block.title for block in blocks}
        named = {doc for doc, title in titles.items()
                 if names_source(question, title, [t for d, t in titles.items() if d != doc],
                                 " ".join(b.text for b in blocks if b.doc != doc))}
        chosen: list[Candidate] = []
        texts = [f"{b.title} {b.section} {b.text}" for b in blocks]
        for part in question_parts(question):
            part_ask = Ask.of(part, programs, chosen_program)
            ask = replace(part_ask, programs=part_ask.programs | whole.programs)
            ranked = self._rank(expand_abbreviations(part, texts), blocks, quotable, vectors, ask, named, dates)
            if not ranked or ranked[0].similarity < SIMILARITY_FLOOR:
                continue
            best = self._binding(ranked, blocks)
            picks = [best]
            seen_docs = {blocks[best.block_index].doc}
            for c in ranked[1:]:
                block = blocks[c.block_index]
                if c.score < best.score - CROSS_DOC_MARGIN:
                    break
                if block.type == "policy" and block.doc not in seen_docs and c.similarity >= SIMILARITY_FLOOR:
                    picks.append(c)
                    seen_docs.add(block.doc)
            for c in picks:
                if all((c.block_index, c.sentence_index) != (o.block_index, o.sentence_index) for o in chosen):
                    chosen.append(carried(c, quotable, expand_abbreviations(part, texts), units[c.block_index],
                                          partial(_beside, part, ask, blocks[c.block_index], dates)))
        return chosen[:MAX_SENTENCES]

    def _binding(self, ranked: list[Candidate], blocks: list[SourceBlock]) -> Candidate:
        """The best candidate, or the policy sentence it restates when the best is a wiki page or note."""
        best = ranked[0]
        if blocks[best.block_index].type == "policy":
            return best
        policies = [c for c in ranked if blocks[c.block_index].type == "policy" and c.similarity >= SIMILARITY_FLOOR]
        if not policies:
            return best
        best_vector, *vectors = self._vectors([best.sentence, *(c.sentence for c in policies)])
        for c, vector in zip(policies, vectors, strict=True):
            if float(np.dot(best_vector, vector)) >= RESTATEMENT_COSINE:
                return c
        return best

    def _rank(self, part: str, blocks, quotable, vectors, ask: Ask, named: set[str],
              dates: Sequence[date] = ()) -> list[Candidate]:
        """The sentences that meet the part's ask, best first."""
        q = _unit(self._model.get_query_embedding(part))
        wanted = terms(part)
        codes = {c.lower() for c in _CODE.findall(part) if not _YEAR.match(c)}
        wants_value = bool(_ASKS_FOR_VALUE.search(part))
        wants_change = bool(_ASKS_CHANGE.search(part))
        wants_old = bool(_ASKS_OLD.search(part))
        wants_new = bool(_ASKS_NEW.search(part)) and not wants_old
        asked_numbers = numbers_in(part)
        fits = [fit(ask, Passage(sentence=text, lead_in=lead, heading=blocks[b].heading, products=blocks[b].products))
                for b, _, text, lead in quotable]
        contested = set().union(*(f.contests for f in fits))
        scoped_terms = [terms(f"{blocks[b].heading} {lead} {text}") for b, _, text, lead in quotable]
        distinct = {t for t in wanted if 0 < sum(t in st for st in scoped_terms) <= DISTINCT_SHARE * len(quotable)}
        ranked = []
        for (b, s, text, lead), vector, verdict, scoped in zip(quotable, vectors, fits, scoped_terms, strict=True):
            block = blocks[b]
            if not verdict.meets or (wants_new and _TELLS_KEPT.search(text)):  # what is kept is not the new rule
                continue
            if not wants_old and leaves_out(text, dates, in_force_from(block)):  # a rule for other dates
                continue
            similarity = max(float(np.dot(q, v)) for v in vector)
            overlap = len(wanted & scoped) / len(wanted) if wanted else 0.0
            score = similarity + LEXICAL_WEIGHT * overlap + TYPE_BONUS.get(block.type, 0.0)
            score += SPECIFIC_BONUS * verdict.preference(contested) + (NAMED_SOURCE_BONUS if block.doc in named else 0.0)
            if wants_value and states_value(text):
                score += VALUE_BONUS
            if codes and codes & {c.lower() for c in _CODE.findall(f"{block.heading} {lead} {text}")}:
                score += CODE_BONUS
            score += DISTINCT_BONUS * min(DISTINCT_MAX, len(distinct & scoped))
            if states_asked_unit(part, text):
                score += UNIT_BONUS
            if asked_numbers & numbers_in(text):
                score += NUMBER_BONUS
            if not wants_change and _TELLS_CHANGE.search(text):
                score -= CHANGE_PENALTY
            ranked.append(Candidate(b, s, text, similarity, score, lead))
        return sorted(ranked, key=lambda c: (-c.score, c.block_index, c.sentence_index))
