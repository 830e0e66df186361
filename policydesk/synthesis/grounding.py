"""What code proves about a drafted answer before anyone sees it, whoever drafted it.

Given the draft and the chunks the caller may read (re-read from the store under the caller's
clearance, never taken from the nodes handed in), a draft is grounded when

- every claim rests on at least one quote, and every quote names a chunk that was in context;
- every quote is in that chunk's stored text, read with whitespace, quote marks, dashes, soft
  hyphens and line-break hyphenation normalised and case ignored ("..." marks an elision: the
  pieces must appear in order);
- every value the answer or a claim states (`values.py`: durations, dates, amounts,
  percentages, phone and fax numbers, codes, other numbers) is one the claim's quotes state, or
  the cited version's own label (its version number, window, title and section). The answer as a
  whole may state what any of its claims' quotes state.

It reads nothing but the draft and the stored text: no pattern here reads the question.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from llama_index.core.schema import BaseNode

from policydesk.synthesis.prompt import in_force_label
from policydesk.synthesis.schema import ModelAnswer
from policydesk.synthesis.values import Value, normalise, values


@dataclass(frozen=True)
class Problem:
    """Why a draft was rejected: `detail` goes back to the model, `summary` into the fail-closed reason."""

    kind: str
    detail: str
    summary: str


_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|\u2026|\[\.\.\.\])\s*")


def comparable(text: str) -> str:
    text = normalise(text).replace("\u00ad", "")
    text = re.sub(r"(\w)-\s*\n\s*(\w)", r"\1\2", text)  # "fil-\ning" was one word broken at a line end
    text = re.sub(r"[\"'`]", "", text)
    return " ".join(text.split()).casefold()


def quote_in(quote: str, source: str) -> bool:
    """The quote's words are in the source, in order, each elided piece in turn."""
    haystack, at = comparable(source), 0
    for piece in (comparable(p).strip(" .,;:") for p in _ELLIPSIS.split(quote)):
        if not piece:
            continue
        found = haystack.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return at > 0


def label_values(node: BaseNode) -> set[Value]:
    """Values a claim may state about its source rather than from it: version, window, names."""
    meta = node.metadata
    label = " ".join(str(meta.get(k) or "") for k in ("title", "section"))
    # The window as the prompt shows it (its last day in force), not the stored exclusive end.
    window = in_force_label(meta.get("effective_from"), meta.get("effective_to"))
    return values(f"{label} version {meta.get('version', '')} {window}")


def _missing(stated: set[Value], allowed: set[Value]) -> set[Value]:
    codes = [str(v) for kind, v in allowed if kind == "code"]
    return {(kind, v) for kind, v in stated - allowed
            if not (kind == "number" and any(str(v) in code for code in codes))}


def _say(found: set[Value]) -> str:
    return ", ".join(sorted(str(v[1]) if not isinstance(v[1], tuple) else f"{v[1][1]} {v[1][0]}" for v in found))


def check(answer: ModelAnswer, readable: Mapping[str, BaseNode]) -> Problem | None:
    """The first thing wrong with a draft that says the sources answer, or None."""
    if not answer.answer.strip() or not answer.claims:
        return Problem("no_claims", "it said the sources answer but gave no answer text or no claims with quotes.",
                       "The model gave an answer without quoted claims")
    unquoted = [i + 1 for i, c in enumerate(answer.claims) if not c.quotes]
    if unquoted:
        return Problem("uncited_claim", f"claim {', '.join(map(str, unquoted))} had no quotes; every claim must "
                       "quote the words of a source block it rests on.", "The model made a claim without a quote")
    unknown = list(dict.fromkeys(q.chunk_id for c in answer.claims for q in c.quotes if q.chunk_id not in readable))
    if unknown:
        label = "id" if len(unknown) == 1 else "ids"
        quoted = ", ".join(f'"{i}"' for i in unknown)
        return Problem("unknown_citation", f"it cited {label} {quoted}, which "
                       f"{'is' if len(unknown) == 1 else 'are'} not the id of any source block in this conversation.",
                       f"The model cited a source that was not in context ({label} {', '.join(unknown)})")
    for i, claim in enumerate(answer.claims, 1):
        for q in claim.quotes:
            if not quote_in(q.text, readable[q.chunk_id].get_content()):
                return Problem("quote_not_in_source", f"the quote {q.text[:200]!r} of claim {i} is not in source "
                               f"block {q.chunk_id!r}; copy the words exactly as the block has them.",
                               f"A quote was not in the source it cited ({q.chunk_id})")
    everything: set[Value] = set()
    for i, claim in enumerate(answer.claims, 1):
        allowed = set().union(*(values(q.text) | label_values(readable[q.chunk_id]) for q in claim.quotes))
        everything |= allowed
        if missing := _missing(values(claim.text), allowed):
            return Problem("value_not_quoted", f"claim {i} states {_say(missing)}, which none of its quotes states; "
                           "state only values the quoted words give.", "The answer stated a value its quotes do not")
    if missing := _missing(values(answer.answer) | values(answer.condition or ""), everything):
        return Problem("value_not_quoted", f"the answer states {_say(missing)}, which no quote states; state only "
                       "values the quoted words give.", "The answer stated a value its quotes do not")
    return None
