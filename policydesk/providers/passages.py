"""The offline reader: with no model configured, PolicyDesk shows the policy text in force.

For each part of the question ("how long to file, and where do appeals go?") it picks the
sentence of the context (already the versions in force, under the caller's clearance) most
similar in meaning to that part, read under its heading, with the local embedding model that
retrieval uses; it then shows the passage around it: the lettered subsection holding it when
the chunk has several, else the whole chunk, with that sentence marked. It does not read:
it declines nothing and writes nothing. Whether the sources answer at all is decided before it
runs, on evidence that generalises (the calibrated retrieval similarity, words no readable
source uses, the refusal gate).

The words of each question part that appear in a sentence's heading or text break near-ties
(`LEXICAL_WEIGHT`), and a policy is preferred to a wiki page or call note by a hair
(`TYPE_BONUS`): binding text first when two say the same.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from llama_index.core.schema import NodeWithScore

from policydesk.contract.answer import Passage
from policydesk.reading.language import question_parts, sentence_spans, subsection_spans, terms
from policydesk.providers.local import VectorCache
from policydesk.storage.chunk_ids import doc_id_of
from policydesk.synthesis.schema import ModelAnswer, ModelClaim, ModelQuote

# Share of a part's content words found under the sentence's heading or in it: separates
# near-equal meanings only (MiniLM cosines between a question and its answer run 0.4-0.8).
LEXICAL_WEIGHT = 0.08
TYPE_BONUS = {"policy": 0.02, "wiki": 0.0, "call_note": -0.03}
# A chunk this short is shown whole, whatever subsection the sentence sits in.
WHOLE_CHUNK_WORDS = 120
MIN_SENTENCE_WORDS = 3


@dataclass(frozen=True)
class _Sentence:
    node: int
    span: tuple[int, int]
    keyed: str  # the sentence under its heading, as embedded


class PassageReader:
    """Passages in force for a question, one per part (a part whose best passage another part
    already showed adds its sentence to that passage's marks)."""

    def __init__(self, embed_model, cache: VectorCache | None = None) -> None:
        self._model = embed_model
        self._cache = cache or VectorCache(embed_model)

    def read(self, question: str, nodes: Sequence[NodeWithScore],
             query_vectors: Mapping[str, list[float]] | None = None) -> list[Passage]:
        """`query_vectors`: text -> query vector already computed by the same model (retrieval's,
        `RetrievalResult.query_vectors`); a part found there is not embedded again."""
        known = query_vectors or {}
        found = [_Sentence(i, span, f"{_heading(n)}: {n.node.get_content()[span[0]:span[1]]}")
                 for i, n in enumerate(nodes) for span in sentence_spans(n.node.get_content())
                 if _states(n.node.get_content()[span[0]:span[1]], n.node.metadata.get("section") or "")]
        if not found:
            return []
        vectors = np.stack([_unit(v) for v in self._cache.embed([s.keyed for s in found])])
        texts = [_expanded_text(n) for n in nodes]
        found_terms = [terms(s.keyed) for s in found]
        shown: dict[tuple[int, tuple[int, int]], list[tuple[int, int]]] = {}
        for part in question_parts(question):
            text = expand_abbreviations(part, texts)
            q = _unit(known[text] if text in known else self._model.get_query_embedding(text))
            wanted = terms(part)
            scores = vectors @ q
            for k, s in enumerate(found):
                overlap = len(wanted & found_terms[k]) / len(wanted) if wanted else 0.0
                kind = nodes[s.node].node.metadata.get("source_type", "policy")
                scores[k] += LEXICAL_WEIGHT * overlap + TYPE_BONUS.get(kind, 0.0)
            best = found[int(np.argmax(scores))]
            unit = _unit_of(nodes[best.node].node.get_content(), best.span)
            marks = shown.setdefault((best.node, unit), [])
            if best.span not in marks:
                marks.append(best.span)
        return [_passage(nodes[i], unit, marks) for (i, unit), marks in shown.items()]


def _states(sentence: str, section: str) -> bool:
    """A sentence that can state a rule: not a bare heading line ("Late Claims and Exceptions",
    "Hours › Weekend coverage": short, no closing punctuation, and naming the chunk's section or
    every longer word capitalised)."""
    words = sentence.split()
    if len(words) < MIN_SENTENCE_WORDS:
        return False
    if sentence.rstrip()[-1:] in ".:;!?)" or len(words) > 10:
        return True
    if section and section.lower() in sentence.lower():
        return False
    return not all(w[0].isupper() or not w[0].isalpha() for w in words if len(w) > 3)


def _heading(n: NodeWithScore) -> str:
    meta = n.node.metadata
    return " - ".join(p for p in (meta.get("title") or "", meta.get("section") or "") if p)


def _expanded_text(n: NodeWithScore) -> str:
    return f"{_heading(n)} {n.node.get_content()}"


def _unit_of(text: str, span: tuple[int, int]) -> tuple[int, int]:
    """The lettered subsection holding the sentence; the whole chunk when it is short or has none."""
    if len(text.split()) <= WHOLE_CHUNK_WORDS:
        return 0, len(text)
    for a, b in subsection_spans(text):
        if a <= span[0] < b:
            return a, b
    return 0, len(text)


def reader_draft(passages: Sequence[Passage]) -> ModelAnswer:
    """The passages as a draft the grounding checks read like a model's: one claim per passage,
    quoting each marked sentence on its own, since two marks in one passage need not be adjacent."""
    return ModelAnswer(answers="yes", answer=" ".join(p.marked_text for p in passages), claims=[
        ModelClaim(text=p.marked_text, quotes=[ModelQuote(chunk_id=p.chunk_id, text=t) for t in p.marked_sentences])
        for p in passages])


def _passage(n: NodeWithScore, unit: tuple[int, int], marks: list[tuple[int, int]]) -> Passage:
    meta, text = n.node.metadata, n.node.get_content()
    a, b = unit
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    effective_to = meta.get("effective_to")
    return Passage(
        chunk_id=n.node.node_id, doc_id=doc_id_of(n.node), title=meta.get("title") or "",
        section=meta.get("section") or "", version=int(meta.get("version") or 0),
        effective_from=str(meta.get("effective_from") or ""),
        effective_to=None if not effective_to or str(effective_to).startswith("9999") else str(effective_to),
        text=text[a:b], marked=sorted((s - a, e - a) for s, e in marks))


def _unit(vector) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(v))
    return v / norm if norm else v


_ACRONYM = re.compile(r"\b[A-Z]{2,5}s?\b")
_RUN_WORD = re.compile(r"[A-Za-z][A-Za-z-]*")


def expand_abbreviations(question: str, texts: list[str]) -> str:
    """The question with each capitalised abbreviation followed by the words it stands for in the
    sources ("PA" -> "PA (prior authorization)") when they spell it out: the embedding model does
    not know a plan's abbreviations, its sources do."""
    found = {m.group(0).rstrip("s") for m in _ACRONYM.finditer(question)}
    if not found:
        return question
    counts: dict[str, Counter] = {a: Counter() for a in found}
    for text in texts:
        words = _RUN_WORD.findall(text)
        for i in range(len(words)):
            for a in found:
                run = words[i:i + len(a)]
                if len(run) == len(a) and "".join(w[0] for w in run).upper() == a and any(len(w) > 3 for w in run):
                    counts[a][" ".join(w.lower() for w in run)] += 1
    for a, runs in counts.items():
        if runs:
            question = re.sub(rf"\b{a}s?\b", lambda m: f"{m.group(0)} ({runs.most_common(1)[0][0]})", question, count=1)
    return question
