"""The answerability check: a drafted answer is shown only if its cited sentences answer the question.

Run on every draft, whichever answerer wrote it (the extractive one chooses by the same rules,
`policydesk.providers.choice`). The draft passes when some part of the question is met by a
cited claim, read with its source's heading and products (`policydesk.answerability.fit`), and
the question names nothing the caller's sources never mention (`policydesk.vocabulary`).
Otherwise the pipeline abstains with `not_answered` and shows nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from llama_index.core.schema import NodeWithScore

from policydesk.answerability import Ask, Passage, fit
from policydesk.plan_names import Programs
from policydesk.providers.blocks import terms
from policydesk.providers.choice import question_parts
from policydesk.synthesis.schema import ModelAnswer
from policydesk.vocabulary import Vocabulary, unknown_terms

NOT_ANSWERED_MESSAGE = (
    "The sources you may read don't say this: \u201c{question}\u201d. Nothing was stated; "
    "ask your supervisor or the policy's owner."
)


@dataclass(frozen=True)
class AnsweredVerdict:
    answered: bool
    unmet: list[str] = field(default_factory=list)  # why not, for the log and the trace's reasons


def passage_of(text: str, node: NodeWithScore | None) -> Passage:
    if node is None:
        return Passage(sentence=text)
    meta = node.node.metadata
    heading = " — ".join(p for p in (meta.get("title") or "", meta.get("section") or "") if p)
    products = meta.get("line_of_business")
    return Passage(sentence=text, heading=heading, products=tuple(products) if products else None)


def check_answered(question: str, answer: ModelAnswer, nodes: Mapping[str, NodeWithScore], *,
                   vocabulary: Vocabulary | None, programs: Programs | Sequence[str] = (),
                   chosen_program: str | None = None, held_title: str | None = None) -> AnsweredVerdict:
    """`held_title`: the policy the question reached first was not in force; where the question uses
    words of its title ("telehealth"), what is in force must speak of them to stand in for it."""
    if vocabulary is not None and (unknown := unknown_terms(question, vocabulary)):
        return AnsweredVerdict(False, [f"the sources never mention: {', '.join(unknown)}"])
    whole = Ask.of(question, programs, chosen_program)
    held = (terms(held_title) & terms(question)) if held_title else set()
    unmet: list[str] = []
    for part in question_parts(question):
        ask = Ask.of(part, programs, chosen_program)
        ask = replace(ask, programs=ask.programs | whole.programs)
        for claim in answer.claims:
            node = next((nodes[c] for c in claim.citations if c in nodes), None)
            passage = passage_of(claim.text, node)
            verdict = fit(ask, passage)
            scope = terms(passage.scope_text)
            if verdict.meets and held and not held & scope:
                unmet.append("speaks of nothing of the policy asked about, which was not in force")
                continue
            if verdict.meets:
                return AnsweredVerdict(True)
            unmet.extend(verdict.unmet)
    return AnsweredVerdict(False, list(dict.fromkeys(unmet)) or ["no cited claim"])
