"""Words as the corpus-derived checks read them: lower case, plurals and common suffixes folded.

Shared by the topic gate (`policydesk.topics`) and the readable vocabulary
(`policydesk.vocabulary`), so a subject and a question word are folded the same way.
"""

from __future__ import annotations

import re

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
    out = []
    for w in _WORD.findall(text_.lower().replace("’", "'")):
        w = w.strip("'-")
        if w.endswith("'s"):
            w = w[:-2]
        if len(w) > 4 and w.endswith("ies"):
            w = w[:-3] + "y"
        elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
        w = _SUFFIX.sub("", w)
        if w:
            out.append(w)
    return out
