"""One normal form for text that is screened for identifiers, read by every detector after it.

An identifier written in another script or spelling is the same identifier: fullwidth letters and
digits (`ＣＶＭ４００１７２３５`), Cyrillic or Greek letters that look Latin (`СVМ52260914`), a soft
hyphen or a zero-width character inside a number, an SSN with en dashes or a minus sign, another
script's digits (`٣٠١`), digits with combining marks. `normalize` folds all of these to the plain
form the detectors know, so the refusal gate, redaction, feedback notes, the disputes filters and
every other screen see one spelling (`detectors.redact` and `find_member_identifiers` call it):

1. NFKC (compatibility forms: fullwidth, mathematical and circled letters and digits, superscripts,
   ligatures, compatibility spaces);
2. invisible characters removed (format characters such as the soft hyphen, zero-width space and
   joiners, word joiner, byte order mark and bidirectional controls; other default-ignorable code
   points; control characters other than tab and line breaks), every space a plain space, every
   dash and minus a hyphen-minus, curly quotes and apostrophes straight, slash look-alikes a slash,
   every script's decimal digits ASCII digits;
3. look-alike letters to Latin: a word that mixes Latin letters or digits with Cyrillic, Greek or
   Armenian letters, or whose letters all look Latin, has each look-alike replaced by the Latin
   letter it imitates (`_CONFUSABLE`, derived from Unicode's confusables.txt, UTS #39, for these
   scripts' letters whose prototype is a Latin letter, plus the small capitals); a look-alike of a
   digit standing next to digits (a Cyrillic О among digits) becomes that digit. A word written in
   Cyrillic or Greek that has letters with no Latin look-alike (most Russian or Greek words) is
   left as written;
4. combining marks on a Latin letter or digit removed (a precomposed letter such as é stays).

No data is downloaded; the table is here. Idempotent: `normalize(normalize(t)) == normalize(t)`.
The stored question is the normalized, redacted text.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Letters of other scripts whose glyph is a Latin letter's (confusables.txt, prototype a Latin letter;
# case kept where the look-alike has one). Cyrillic:
_CYRILLIC = {
    "А": "A", "В": "B", "Е": "E", "Ѕ": "S", "І": "I", "Ј": "J", "К": "K", "М": "M", "Н": "H", "О": "O",
    "Р": "P", "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ү": "Y", "Ӏ": "I", "Ԛ": "Q", "Ԝ": "W", "Ь": "b",
    "Һ": "h", "Ԁ": "d", "Ѵ": "V",
    "а": "a", "в": "b", "г": "r", "е": "e", "к": "k", "м": "m", "н": "h", "о": "o", "п": "n", "р": "p",
    "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j", "һ": "h", "ԁ": "d", "ԛ": "q",
    "ԝ": "w", "ү": "y", "ӏ": "l", "ѵ": "v", "ь": "b",
}
_GREEK = {
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O",
    "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "Ϲ": "C", "Ϳ": "J", "Ϝ": "F",
    "α": "a", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "υ": "u", "χ": "x", "γ": "y", "ϲ": "c",
    "ϳ": "j",
}
_ARMENIAN = {"Օ": "O", "օ": "o", "ս": "u", "հ": "h", "ո": "n", "Ս": "U"}
# Latin letters outside ASCII that NFKC keeps: dotless i and j, script a and g, small capitals.
_LATIN_LOOKALIKES = {
    "ı": "i", "ȷ": "j", "ɑ": "a", "ɡ": "g", "ɩ": "i", "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e",
    "ɢ": "g", "ʜ": "h", "ɪ": "i", "ᴊ": "j", "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴘ": "p",
    "ʀ": "r", "ꜱ": "s", "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z",
}
_CONFUSABLE = {**_CYRILLIC, **_GREEK, **_ARMENIAN, **_LATIN_LOOKALIKES}
# Look-alikes of digits, read as the digit when they stand next to a digit ("CVM4007О012").
_DIGIT_LIKE = {"О": "0", "о": "0", "Ο": "0", "ο": "0", "Օ": "0", "օ": "0", "З": "3", "б": "6",
               "І": "1", "Ӏ": "1", "ӏ": "1", "Ι": "1", "ι": "1", "і": "1"}

# Dash punctuation (category Pd, which NFKC leaves alone: en and em dash, non-breaking hyphen, ...)
# and the minus look-alikes outside it.
_MINUS_LIKE = "\u2212\u2796\u02d7\u2043\u2e3a\u2e3b\u23af\u2500\u2013\u2014\ufe58"
_QUOTES = {"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u02bc": "'", "\u02b9": "'",
           "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"'}
_SLASHES = {"\u2215": "/", "\u2044": "/", "\u29f8": "/"}
# Default-ignorable code points that are not format characters (category Cf): combining grapheme
# joiner, Hangul fillers, Khmer inherent vowels, Mongolian variation selectors, variation selectors.
_IGNORABLE_RANGES = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xE0000, 0xE0FFF))
_KEEP_CONTROLS = "\t\n\r"

_WORD = re.compile(r"(?:[^\W_]|[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f])+")
_MARKS_AFTER_LATIN = re.compile(r"(?<=[A-Za-z0-9])[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@lru_cache(maxsize=4096)
def _char(c: str) -> str:
    """One character after step 2 (NFKC already applied): removed, folded, or kept."""
    code = ord(c)
    category = unicodedata.category(c)
    if category == "Cf" or any(lo <= code <= hi for lo, hi in _IGNORABLE_RANGES):
        return ""
    if category == "Cc":
        return c if c in _KEEP_CONTROLS else ""
    if category == "Zs":
        return " "
    if category in ("Zl", "Zp"):
        return "\n"
    if category == "Pd" or c in _MINUS_LIKE:
        return "-"
    if category == "Nd":
        return str(unicodedata.decimal(c))
    return _QUOTES.get(c) or _SLASHES.get(c) or c


def _fold_word(match: re.Match) -> str:
    word = match.group(0)
    if word.isascii():
        return word
    letters = [c for c in word if c.isalpha()]
    mixed = _ASCII_ALNUM.search(word) is not None
    if not mixed and not all(c in _CONFUSABLE or c.isascii() for c in letters):
        return word  # a word of another script, not a look-alike of a Latin one
    digits = sum(c.isdigit() for c in word)
    out = []
    for i, c in enumerate(word):
        if c in _DIGIT_LIKE and digits and _next_to_digit(word, i):
            out.append(_DIGIT_LIKE[c])
        else:
            out.append(_CONFUSABLE.get(c, c))
    return "".join(out)


def _next_to_digit(word: str, i: int) -> bool:
    """Is the run of digit look-alikes around position i next to an ASCII digit?"""
    j = i
    while j > 0 and word[j - 1] in _DIGIT_LIKE:
        j -= 1
    k = i
    while k + 1 < len(word) and word[k + 1] in _DIGIT_LIKE:
        k += 1
    return (j > 0 and word[j - 1].isdigit()) or (k + 1 < len(word) and word[k + 1].isdigit())


def normalize(text: str) -> str:
    """`text` in the one form every detector reads (see the module docstring)."""
    if text.isascii():
        return _ASCII_CONTROL.sub("", text) if _ASCII_CONTROL.search(text) else text
    folded = "".join(_char(c) for c in unicodedata.normalize("NFKC", text))
    folded = _WORD.sub(_fold_word, folded)
    return _MARKS_AFTER_LATIN.sub("", folded)
