"""English as PolicyDesk's readers handle it: one tokenizer, one stemmer, one stopword list, one
sentence splitter, and the question split into its asks.

The offline passage reader (`providers/passages.py`) and the grounding checks
(`synthesis/grounding.py`, `synthesis/values.py`) read text through this module only, so a word
is folded the same way wherever it is compared. Stemming is NLTK's Snowball stemmer for
English (pure code, no data download). Nothing here names a plan, a document or a phrase of one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

# Numbers written as words: the one table lives beside the durations that read it too.
from policydesk.versions.number_words import NUMBER_PHRASE, NUMBER_WORD, NUMBER_WORDS, words_value  # noqa: F401

_TOKEN = re.compile(r"[a-z0-9]+")

# English function words and the scaffolding of a staff question ("can you tell me").
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers him his how i if in into is it its itself just me more most my no nor not
now of off on once only or other our out over own same she should so some such than that the their
them then there these they this those through to too under until up very was we were what when
where which while who whom why will with within without would you your yours please tell know
may must shall per s whats hi hey thanks
""".split())

@lru_cache(maxsize=1)
def _stemmer():
    # Imported on first use: nltk costs a noticeable share of a cold CLI start.
    from nltk.stem.snowball import SnowballStemmer

    return SnowballStemmer("english")


@lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    return _stemmer().stem(word)


def tokens(text: str) -> list[str]:
    """Lower-case runs of letters and digits; quote marks and hyphens split words."""
    return _TOKEN.findall(text.lower())


def terms(text: str) -> set[str]:
    """The stems of a text's content words."""
    return {stem(t) for t in tokens(text) if t not in STOPWORDS and (len(t) > 1 or t.isdigit())}


# -- sentences ------------------------------------------------------------------------------------
# A sentence ends at . ! ? (or a line break) before a capital, digit, quote, bracket or list mark,
# but not after an initial or a citation's abbreviation ("42 C.F.R. 438", "No. 12", "Sec. 4").
_SENTENCE_END = re.compile(
    r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\bNo\.)(?<!\bSec\.)(?<!\bCode\.)(?<!\bStat\.)(?<!\be\.g\.)(?<!\bi\.e\.)"
    r"[ \t]+(?=[A-Z0-9\"'(\u201c§])|\n+")
# "(b) Corrected claims." / "2. Expedited appeals:" / "§ 4.2" opens a lettered or numbered subsection.
SUBSECTION_MARK = re.compile(r"^\s*(?:\(?[a-zA-Z0-9ivx]{1,4}\)|[a-zA-Z0-9]{1,3}[.)]|§\s*[\d.]+[a-z()]*)\s+")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) offsets of each sentence (blank runs and bare list marks left out)."""
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for a, b in spans:
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if any(ch.isalnum() for ch in text[a:b]):
            out.append((a, b))
    return out


def sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in sentence_spans(text)]


def subsection_spans(text: str) -> list[tuple[int, int]]:
    """[start, end) of each lettered or numbered subsection, from its mark to the next mark; the
    text before the first mark is its own span. A text with no marks is one span."""
    starts = [m.start() for m in re.finditer(r"(?m)^", text) if SUBSECTION_MARK.match(text, m.start())]
    for a, _ in sentence_spans(text):  # PDF text joins paragraphs: a mark may open mid-line
        if SUBSECTION_MARK.match(text, a) and a not in starts:
            starts.append(a)
    starts = sorted(s for s in starts if s > 0)
    bounds = [0, *starts, len(text)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if text[a:b].strip()]


# -- the question's asks --------------------------------------------------------------------------
# One question becomes two at a second question mark, a semicolon, or "and"/"also" before a new
# interrogative ("how long to file, and where do appeals go?").
_PART_BREAK = re.compile(
    r"(?<=\?)\s+(?=\S)|;\s*|,?\s+(?:and|also|plus|as\s+well\s+as)\s+(?=(?:what|how|when|where|who|which|"
    r"is|are|does|do|can|could|should|must|will|would)\b)",
    re.IGNORECASE,
)


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


# -- which source a question names ----------------------------------------------------------------
_TITLE_CODE = re.compile(r"\b(?=[\w-]*\d)[A-Za-z0-9][\w-]{3,}\b")
_YEAR = re.compile(r"(?:19|20)\d\d")
# Share of a title's own words (those no other title in play has) a question must use to name it:
# "the filing deadline change notice" names "Filing Deadline Change Notice"; "the filing deadline"
# alone asks about the subject, which other sources may answer.
NAMED_SHARE = 2 / 3


def names_source(question: str, title: str, other_titles: Iterable[str], other_text: str = "") -> bool:
    """The question names this source: it gives the code in its title ("HB-2026-07"), or most of
    the words of its title that no other title in play has, or one of them that nothing else in
    play (`other_text`) uses at all ("telehealth" when no other source speaks of it)."""
    codes = {c.lower() for c in _TITLE_CODE.findall(title) if not _YEAR.fullmatch(c)}
    if codes & {c.lower() for c in _TITLE_CODE.findall(question)}:
        return True
    others: set[str] = set().union(*(terms(t) for t in other_titles))
    own = terms(title) - others
    used = own & terms(question)
    if own and len(used) >= NAMED_SHARE * len(own):
        return True
    return bool(used - terms(other_text))


# -- which source of those in context a question names (nodes: LlamaIndex NodeWithScore) -------

def _titles(nodes) -> list[str]:
    return list(dict.fromkeys(n.node.metadata.get("title") or "" for n in nodes))


def names_source_in_context(question: str, title: str, nodes) -> bool:
    """The question names the source titled `title` rather than one of the sources in context."""
    return names_source(question, title, _titles(nodes), " ".join(n.node.get_content() for n in nodes))


def names_a_note(question: str, nodes) -> bool:
    """The question names one of the wiki pages or call notes in context (not a policy)."""
    titles = _titles(nodes)
    return any(n.node.metadata.get("source_type") != "policy"
               and names_source(question, n.node.metadata.get("title") or "",
                                [t for t in titles if t != n.node.metadata.get("title")])
               for n in nodes)
