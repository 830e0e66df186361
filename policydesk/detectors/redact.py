"""Redaction, the second layer behind the refusal gate.

The gate refuses a question that carries a member identifier; whatever it lets through is
redacted here before any model call (embedding or LLM) and before the trace is written, so an
identifier the gate misses still never reaches the model provider or the database.

Redaction is deliberately broader than the gate. The gate must not refuse a policy question
over a number that is not someone's identifier, so its cued-number detector needs an identifier
cue; redaction costs the question almost nothing, so it also removes every identifier-shaped
token with no cue at all (6+ digits, or 4+ digits mixed with letters or separators), keeping
only what a policy question needs: dates, code shapes (CPT, HCPCS, ICD-10, reason codes), money,
toll-free and provider phone lines, labelled NPIs and policy numbers ("policy MP-2024-017").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from policydesk.detectors.identifiers import Finding, find_identifier_spans, id_shaped
from policydesk.detectors.normalize import normalize

# Separators include "_" (an ID typed as "mbr_88213-q" passed both layers on test_v5).
_TOKEN = re.compile(r"(?<![\w@.+-])(?=[A-Za-z0-9./_-]*\d)[A-Za-z0-9]+(?:[-./_][A-Za-z0-9]+){0,6}(?![\w@-])")
_SPACED_DIGITS = re.compile(r"(?<![\w-])\d{2,5}(?:\s\d{2,5}){2,4}(?![\w-])")
_PHONE_SHAPE = re.compile(r"^(?:\+?1[-.]?)?\d{3}[-.]?\d{3}[-.]?\d{4}$")
_KEEP_CUE = re.compile(r"\b(?:policy|policies|section|version|npi|pol|form|cpt|hcpcs|icd-?10)\b[\s#:.-]*$", re.I)

PLACEHOLDERS: dict[str, str] = {
    "member_id": "[ID]", "claim_number": "[ID]", "id_shaped": "[ID]", "spoken_number": "[ID]",
    "ssn": "[SSN]", "email": "[EMAIL]", "phone_number": "[PHONE]", "date_of_birth": "[DATE]",
    "person_name": "[NAME]", "street_address": "[ADDRESS]",
}


@dataclass(frozen=True)
class Redaction:
    text: str
    kinds: tuple[str, ...]  # the detectors that fired, in first-seen order, no repeats

    @property
    def changed(self) -> bool:
        return bool(self.kinds)


def _shape_spans(text: str) -> list[Finding]:
    out = []
    for m in _TOKEN.finditer(text):
        token = m.group(0).rstrip(".-/")
        if _PHONE_SHAPE.match(token) or not id_shaped(token):
            continue
        if token.upper().startswith("POL") or _KEEP_CUE.search(text, max(0, m.start() - 24), m.start()):
            continue
        out.append(Finding("id_shaped", m.start(), m.start() + len(token)))
    for m in _SPACED_DIGITS.finditer(text):
        if not _PHONE_SHAPE.match(m.group(0).replace(" ", "")):
            out.append(Finding("id_shaped", m.start(), m.end()))
    return out


def redact(text: str, plan_patterns: Sequence[str] | None = None, *, normalized: bool = False) -> Redaction:
    """The text in its normal form (`detectors.normalize`; pass `normalized=True` when it already
    is) with every identifier span replaced by a placeholder, and the kinds found."""
    if not normalized:
        text = normalize(text)
    spans = sorted(find_identifier_spans(text, plan_patterns) + _shape_spans(text), key=lambda f: (f.start, -f.end))
    if not spans:
        return Redaction(text, ())
    kinds = tuple(dict.fromkeys(f.kind for f in spans))
    merged: list[list] = []
    for f in spans:
        if merged and f.start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], f.end)
        else:
            merged.append([f.start, f.end, f.kind])
    parts, pos = [], 0
    for start, end, kind in merged:
        parts += [text[pos:start], PLACEHOLDERS.get(kind, "[REDACTED]")]
        pos = end
    parts.append(text[pos:])
    return Redaction("".join(parts), kinds)
