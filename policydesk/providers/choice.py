"""Which sentences the offline answerer quotes: those that answer the ask, then by meaning.

Each part of the question ("how long to file, and where do appeals go?") gets its own best
sentence. Only sentences that meet what the part asks and qualifies are candidates
(`policydesk.answerability`: the kind of value asked for, the program, participating or not,
standard or expedited, filing vs deciding...), read with the lead-in and heading they need;
among them, cosine similarity between the part and the sentence (same embedding model as
retrieval) decides, with the sides the sentence names explicitly, the source the question
names and lexical overlap as bonuses. There is no synonym table, so nothing here knows one
corpus's vocabulary. A part with no such sentence similar enough is left unanswered rather
than answered with a neighbour.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from policydesk.answerability import Ask, Passage, fit, names_source
from policydesk.providers.blocks import SourceBlock, looks_injected, passages, terms, word_count
from policydesk.providers.local import VectorCache

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
# The source whose title the question names ("the CHIP bulletin") over a closer-scoring other one.
NAMED_SOURCE_BONUS = 0.05
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


@dataclass(frozen=True)
class Candidate:
    block_index: int
    sentence_index: int
    sentence: str
    similarity: float
    score: float
    lead_in: str = ""

    @property
    def quote(self) -> str:
        """The sentence as shown: with the lead-in it needs to be understood."""
        return f"{self.lead_in} {self.sentence}" if self.lead_in else self.sentence


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

    def choose(self, question: str, blocks: list[SourceBlock], programs: tuple[str, ...] = (),
               chosen_program: str | None = None) -> list[Candidate]:
        """The sentences to quote, in answer order: per question part its best, then close other policies."""
        quotable = [(b, s, text, lead) for b, block in enumerate(blocks)
                    for s, (text, lead) in enumerate(passages(block.text, (block.title, block.section)))
                    if word_count(text) >= 3 and not looks_injected(text)]
        if not quotable:
            return []
        vectors = self._vectors([f"{blocks[b].heading}: {text}" for b, _, text, _ in quotable])
        whole = Ask.of(question, programs, chosen_program)
        titles = {block.doc: block.title for block in blocks}
        named = {doc for doc, title in titles.items()
                 if names_source(question, title, [t for d, t in titles.items() if d != doc])}
        chosen: list[Candidate] = []
        for part in question_parts(question):
            part_ask = Ask.of(part, programs, chosen_program)
            ask = Ask(kind=part_ask.kind, sides=part_ask.sides, programs=part_ask.programs | whole.programs,
                      known_programs=whole.known_programs)
            ranked = self._rank(part, blocks, quotable, vectors, ask, named)
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
                    chosen.append(c)
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

    def _rank(self, part: str, blocks, quotable, vectors, ask: Ask, named: set[str]) -> list[Candidate]:
        """The sentences that meet the part's ask, best first."""
        q = _unit(self._model.get_query_embedding(part))
        wanted = terms(part)
        wants_value = bool(_ASKS_FOR_VALUE.search(part))
        fits = [fit(ask, Passage(sentence=text, lead_in=lead, heading=blocks[b].heading, products=blocks[b].products))
                for b, _, text, lead in quotable]
        contested = set().union(*(f.contests for f in fits))
        ranked = []
        for (b, s, text, lead), vector, verdict in zip(quotable, vectors, fits, strict=True):
            block = blocks[b]
            if not verdict.meets:
                continue
            similarity = float(np.dot(q, vector))
            overlap = len(wanted & terms(f"{block.heading} {lead} {text}")) / len(wanted) if wanted else 0.0
            score = similarity + LEXICAL_WEIGHT * overlap + TYPE_BONUS.get(block.type, 0.0)
            score += SPECIFIC_BONUS * verdict.preference(contested) + (NAMED_SOURCE_BONUS if block.doc in named else 0.0)
            if wants_value and states_value(text):
                score += VALUE_BONUS
            ranked.append(Candidate(b, s, text, similarity, score, lead))
        return sorted(ranked, key=lambda c: (-c.score, c.block_index, c.sentence_index))
