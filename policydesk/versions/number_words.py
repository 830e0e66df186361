"""Numbers written as words ("ninety", "one hundred eighty", "twenty-one"): the one table, read by
durations (`durations.py`) and by the language module and value checks above it."""

from __future__ import annotations

import re

_ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen").split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
NUMBER_WORDS = {w: i for i, w in enumerate(_ONES)} | {w: 20 + 10 * i for i, w in enumerate(_TENS)}
_SCALE = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
NUMBER_WORD = r"(?:" + "|".join(sorted([*NUMBER_WORDS, *_SCALE], key=len, reverse=True)) + r")"
NUMBER_PHRASE = rf"\b{NUMBER_WORD}(?:[\s-]+(?:and[\s-]+)?{NUMBER_WORD})*\b"


def words_value(words: str) -> int:
    """"one hundred eighty" -> 180; "twenty-one" -> 21."""
    total, current = 0, 0
    for w in re.split(r"[\s-]+", words.lower()):
        if w in ("", "and"):
            continue
        if w == "hundred":
            current = max(current, 1) * 100
        elif w in ("thousand", "million"):
            total, current = total + max(current, 1) * _SCALE[w], 0
        else:
            current += NUMBER_WORDS[w]
    return total + current
