"""What the offline answerer reads from a rendered prompt: the question and the source blocks.

It reads only the user turn the synthesizer renders (never the system message), so it sees
exactly what Gemini would see, and it splits block text into quotable sentences.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from datetime import date

from policydesk.detectors import find_claim_decision_language
from policydesk.synthesis.prompt import CHOSEN_PROGRAM_NOTE, DATE_NOTE, PROGRAMS_NOTE, unescape_data

_SOURCE_BLOCK = re.compile(r"<source ([^>]*)>\n(.*?)\n</source>", re.DOTALL)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_QUESTION_BLOCK = re.compile(r"<question>\n(.*?)\n</question>", re.DOTALL)
_TOKEN = re.compile(r"[a-z0-9]+")
# A sentence ends at . ! ? before a capital, digit, quote or bracket, but not after an initial or
# a citation's abbreviation ("42 C.F.R. 438", "W. Va. Code", "No. 12"). A single capital letter is
# a designator, not an initial, when a capitalised function word follows: "... under Subpart M. A
# provider may ..." ends there, as a name never goes on "J. The".
_SENTENCE_END_PATTERN = (r"(?<=[.!?])(?<!\b[A-Z]\.)(?<!\bNo\.)(?<!\bSec\.)(?<!\bCode\.)(?<!\bStat\.)"
                         r"\s+(?=[A-Z0-9\"'(])")
_LIST_MARK = re.compile(r"^\s*(?:#{1,6}\s+|[-*•]\s+|\d+[.)]\s+)")
_INJECTION = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\b(?:ignore|disregard|forget|override)\b.{0,40}\b(?:instructions?|rules?|prompts?|above|previous)\b",
    r"\b(?:system\s+prompt|new\s+instructions?|developer\s+message)\b",
    r"\byou\s+are\s+now\b|\bact\s+as\b|\bpretend\s+to\b",
    r"\b(?:tell|inform)\s+the\s+(?:caller|member|user|rep)\s+that\b",
    r"\b(?:respond|reply|answer)\s+(?:only\s+)?with\b",
    r"\bdo\s+not\s+cite\b",
))
# English function words; nothing here is specific to a plan or a corpus.
_STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers him his how i if in into is it its itself just me more most my no nor not
now of off on once only or other our out over own same she should so some such than that the their
them then there these they this those through to too under until up very was we were what when
where which while who whom why will with would you your yours please tell know
""".split())
_SENTENCE_END = re.compile(_SENTENCE_END_PATTERN + r"|(?<=\b[A-Z]\.)\s+(?=(?:"
                           + "|".join(sorted(w.capitalize() for w in _STOPWORDS if w != "i")) + r")\s)")


@dataclass(frozen=True)
class SourceBlock:
    id: str
    doc: str
    title: str
    section: str
    version: str
    in_force: str
    type: str
    text: str
    products: tuple[str, ...] | None = None  # the source's lines of business; None: every one

    @property
    def heading(self) -> str:
        return f"{self.title} — {self.section}" if self.section else self.title


def parse_prompt(prompt: str) -> tuple[str, list[SourceBlock]]:
    """The question and the source blocks of a rendered user turn (the first ones found)."""
    blocks: dict[str, SourceBlock] = {}
    for m in _SOURCE_BLOCK.finditer(prompt):
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(m.group(1))}
        if "id" in attrs and attrs["id"] not in blocks:
            blocks[attrs["id"]] = SourceBlock(
                id=attrs["id"], doc=attrs.get("doc", attrs["id"]), title=attrs.get("title", ""), section=attrs.get("section", ""),
                version=attrs.get("version", ""), in_force=attrs.get("in_force", ""),
                type=attrs.get("type", ""), text=unescape_data(m.group(2)),
                products=tuple(p.strip() for p in attrs["products"].split(",") if p.strip())
                if attrs.get("products") else None,
            )
    question = _QUESTION_BLOCK.search(prompt)
    return (unescape_data(question.group(1)) if question else ""), list(blocks.values())


def _note_pattern(template: str, field: str) -> re.Pattern:
    """A note line made from `template`, capturing `field`; its other fields match any text."""
    head, tail = (re.sub(r"\\\{\w+\\\}", ".+?", re.escape(part)) for part in template.split("{" + field + "}"))
    return re.compile(r"^- " + head + r"(.+?)" + tail + r"$", re.MULTILINE)


_PROGRAMS = _note_pattern(PROGRAMS_NOTE, "names")
_DATE = _note_pattern(DATE_NOTE, "date")
_CHOSEN = _note_pattern(CHOSEN_PROGRAM_NOTE, "name")


_NAMED_PROGRAM = re.compile(r"^\s*([^()]+?)\s*(?:\((.*)\))?\s*$")


def _notes(prompt: str) -> str:
    """The notes section of a rendered user turn (empty when it has none)."""
    return prompt.split("<notes>", 1)[1].split("</notes>", 1)[0] if "<notes>" in prompt else ""


def prompt_dates(prompt: str) -> tuple[date, ...]:
    """The dates a rendered user turn's notes say versions were resolved for."""
    found = []
    for m in _DATE.finditer(_notes(prompt)):
        if iso := re.search(r"\d{4}-\d{2}-\d{2}$", m.group(1).strip()):
            try:
                found.append(date.fromisoformat(iso.group(0)))
            except ValueError:
                continue
    return tuple(found)


def in_force_from(block: SourceBlock) -> date | None:
    """The day the block's version came into force ("2026-07-01 to open")."""
    m = re.match(r"\s*(\d{4}-\d{2}-\d{2})", block.in_force)
    return date.fromisoformat(m.group(1)) if m else None


def prompt_programs(prompt: str) -> tuple[dict[str, tuple[str, ...]], str | None]:
    """The programs a rendered user turn's notes name (with the plan's names for each), and the
    one the asker chose."""
    notes = _notes(prompt)
    listed = _PROGRAMS.search(notes)
    chosen = _CHOSEN.search(notes)
    programs: dict[str, tuple[str, ...]] = {}
    for entry in (listed.group(1).split("; ") if listed else []):
        m = _NAMED_PROGRAM.match(entry)
        if m and m.group(1):
            programs[m.group(1)] = tuple(a.strip() for a in (m.group(2) or "").split(" / ") if a.strip())
    return programs, (chosen.group(1).strip() if chosen else None)


def _is_heading(line: str, headings: set[str]) -> bool:
    """A heading line states no rule: '## Filing Limit', the block's own section or title, or a
    short Title Case line with no closing punctuation (how plain PDF headings come through)."""
    stripped = line.strip()
    if stripped.startswith("#") or _normal(stripped) in headings:
        return True
    if _LIST_MARK.match(stripped) or stripped[-1:] in ".!?:;,)" or len(stripped.split()) > 10:
        return False
    words = [w for w in re.findall(r"[A-Za-z][\w'-]*", stripped) if len(w) > 3]
    return bool(words) and all(w[0].isupper() for w in words)


def _normal(text: str) -> str:
    return " ".join(_TOKEN.findall(text.lower()))


# "(b) Corrected claims." or "2. Expedited appeals:": a lettered or numbered subsection's own short
# title, which the sentences after it need to be understood.
_MARKER = re.compile(r"^\s*(?:\(?[a-zA-Z0-9]{1,3}\)|[a-zA-Z0-9]{1,3}[.)])\s+")
_TITLE_MAX_WORDS = 10
_LEAD_IN_MAX_WORDS = 30


def _subsection_title(sentence: str) -> bool:
    return bool(_MARKER.match(sentence)) and sentence.rstrip()[-1:] in ".:" and len(sentence.split()) <= _TITLE_MAX_WORDS + 1


def passages(text: str, headings: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Quotable sentences, each with the lead-in it needs: the title of the lettered subsection it
    sits in (until the next subsection or heading) and the sentence ending in ':' that introduces
    its list. Subsections may start mid-line (PDF paragraphs are joined). Headings are left out."""
    return [(sentence, lead) for sentence, lead, _ in passages_in_subsections(text, headings)]


def passages_in_subsections(text: str, headings: tuple[str, ...] = ()) -> list[tuple[str, str, int | None]]:
    """`passages`, each with the lettered subsection it sits in (a number shared by the sentences
    of one subsection), None outside any."""
    names = {_normal(h) for h in headings if h}
    out: list[tuple[str, str, int | None]] = []
    subsection, list_lead = "", ""
    unit: int | None = None
    units = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        if _is_heading(line, names):
            subsection = list_lead = ""
            unit = None
            continue
        if not _LIST_MARK.match(line):
            list_lead = ""
        body = _LIST_MARK.sub("", line).strip()
        for sentence in (s.strip() for s in _SENTENCE_END.split(body) if s.strip()):
            if _MARKER.match(sentence):  # a new subsection starts here
                list_lead = ""
                units += 1
                unit = units
                if _subsection_title(sentence):
                    subsection = sentence
                    continue  # its bare title is not quoted: it heads the sentences after it
                # an untitled subsection: its opening sentence says what the rest is about
                subsection = sentence if word_count(sentence) <= _LEAD_IN_MAX_WORDS else ""
                out.append((sentence, "", unit))
                continue
            lead_in = " ".join(p for p in (subsection, list_lead) if p)
            out.append((sentence, lead_in, unit))
            if sentence.endswith(":") and word_count(sentence) <= _LEAD_IN_MAX_WORDS:
                list_lead = sentence
    return out


def sentences(text: str, headings: tuple[str, ...] = ()) -> list[str]:
    """Quotable sentences; heading lines (see `_is_heading`) are left out."""
    return [s for s, _ in passages(text, headings)]


def word_count(text: str) -> int:
    return len(_TOKEN.findall(text.lower()))


def looks_injected(sentence: str) -> bool:
    return any(p.search(sentence) for p in _INJECTION) or bool(find_claim_decision_language(sentence))


def _stem(token: str) -> str:
    if token.endswith("ly") and len(token) >= 7:  # "retroactively" reads as "retroactive"
        token = token[:-2]
    for suffix in ("ing", "ed", "es", "s"):
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            token = token[: -len(suffix)]
            break
    return token[:-1] if token.endswith("e") and len(token) > 3 else token


def terms(text: str) -> set[str]:
    """Content-word stems, for the lexical tie-breaker (no synonym table: meaning comes from embeddings)."""
    return {_stem(t) for t in _TOKEN.findall(text.lower()) if len(t) > 1 and t not in _STOPWORDS}
