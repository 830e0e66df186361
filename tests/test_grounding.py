"""The grounding checks on a drafted answer: quotes in the cited stored text, stated values in the
quotes, citations only of chunks in context that the caller may read."""

from __future__ import annotations

import pytest
from llama_index.core.schema import TextNode

from policydesk.synthesis.grounding import check, quote_in
from policydesk.synthesis.schema import ModelAnswer
from policydesk.synthesis.values import values

CHUNK = TextNode(id_="POL-X:v2:limits", text=(
    "Filing Limits\nA provider must file an initial claim within ninety (90) calendar days of the date of serv-\n"
    "ice. Corrected claims are due within 150 days. Call 1-800-555-0142 or fax (800) 555-0143; use form "
    "CMS-1500. The copay is $25.00, and coinsurance is 20 percent after January 1, 2026."),
    metadata={"title": "Filing Rules", "section": "Filing Limits", "version": 2, "effective_from": "2026-01-01",
              "effective_to": "9999-12-31"})
READABLE = {CHUNK.node_id: CHUNK}


def draft(answer: str, *quotes: str, claim: str | None = None, chunk_id: str = CHUNK.node_id) -> ModelAnswer:
    return ModelAnswer.model_validate({"answers": "yes", "answer": answer, "claims": [
        {"text": claim or answer, "quotes": [{"chunk_id": chunk_id, "text": q} for q in quotes]}]})


def test_a_value_written_differently_in_the_source_is_shown():
    # "ninety (90) calendar days" in the source, "90 days" in the answer: the same duration.
    assert check(draft("Providers have 90 days to file.", "within ninety (90) calendar days of the date"),
                 READABLE) is None


@pytest.mark.parametrize("quote", [
    "must file an initial claim within ninety (90) calendar days of the date of service",  # line-break hyphen
    "A provider must file an initial claim \u2026 of the date of service.",  # an elision
    "\u201cCorrected claims are due within 150 days.\u201d",  # curly quotes, case
    "corrected  claims ARE due\nwithin 150 days",  # whitespace and case
])
def test_quotes_are_matched_with_typography_normalised(quote):
    assert quote_in(quote, CHUNK.get_content())


def test_a_quote_not_in_the_chunk_retries_naming_it():
    problem = check(draft("Corrected claims are due within 150 days.", "Corrected claims are due within 120 days."),
                    READABLE)
    assert problem.kind == "quote_not_in_source" and CHUNK.node_id in problem.detail


@pytest.mark.parametrize("answer, stated", [
    ("Providers have 120 days to file.", "120"),  # a duration no quote states
    ("Providers have 3 months to file.", "3 months"),  # 90 days is not 3 months
    ("The copay is $30.", "30"),
    ("Call 1-800-555-0199.", "8005550199"),
    ("Use form CMS-1450.", "CMS1450"),
    ("Effective February 1, 2026.", "2026-02-01"),
])
def test_a_value_no_quote_states_is_caught(answer, stated):
    problem = check(draft(answer, "within ninety (90) calendar days", "The copay is $25.00",
                          "use form CMS-1500", "Call 1-800-555-0142"), READABLE)
    assert problem is not None and problem.kind == "value_not_quoted" and stated in problem.detail


def test_values_from_the_cited_version_label_may_be_stated():
    # The version and window come from the cited chunk's own label, not its text.
    assert check(draft("Filing Rules version 2, in force from 2026-01-01: 150 days for corrected claims.",
                       "Corrected claims are due within 150 days."), READABLE) is None


def test_the_last_day_in_force_the_prompt_shows_may_be_stated():
    # Version 1 is stored with its exclusive end (2026-01-01); the prompt shows its last day.
    v1 = TextNode(id_="POL-X:v1:limits", text="Corrected claims are due within 150 days.", metadata={
        "title": "Filing Rules", "section": "Limits", "version": 1, "effective_from": "2024-01-01",
        "effective_to": "2026-01-01"})
    quote = "Corrected claims are due within 150 days."
    assert check(draft("Version 1, in force until 2025-12-31: 150 days.", quote, chunk_id=v1.node_id),
                 {v1.node_id: v1}) is None


def test_a_citation_outside_context_or_unreadable_is_refused():
    problem = check(draft("Providers have 90 days.", "within ninety (90) calendar days",
                          chunk_id="POL-SECRET:v1:x"), READABLE)
    assert problem.kind == "unknown_citation" and "POL-SECRET:v1:x" in problem.detail


def test_a_claim_without_quotes_is_refused():
    answer = ModelAnswer.model_validate({"answers": "yes", "answer": "90 days.", "claims": [{"text": "90 days."}]})
    assert check(answer, READABLE).kind == "uncited_claim"


def test_values_read_one_value_in_its_spellings():
    assert values("ninety (90) days") & values("90 days")
    assert values("20 percent") & values("20%")
    assert values("$25.00") & values("$25")
    assert values("(800) 555-0142") & values("1-800-555-0142")
    assert values("January 1, 2026") & values("1/1/2026")
    assert not values("3 months") & {v for v in values("90 days") if v[0] == "duration"}


def test_the_offline_readers_draft_quotes_each_marked_sentence_on_its_own():
    # A two-part question marks two sentences of one passage that are not next to each other; as one
    # quote they are not in the chunk, and the rep got "could not answer" (corpus_manual m-cross-17).
    from policydesk.contract.answer import Passage
    from policydesk.providers.passages import reader_draft

    text = CHUNK.get_content()
    first, second = "Corrected claims are due within 150 days.", "The copay is $25.00"
    passage = Passage(chunk_id=CHUNK.node_id, doc_id="POL-X", title="Filing Rules", section="Filing Limits",
                      version=2, effective_from="2026-01-01", effective_to=None, text=text,
                      marked=[(text.index(first), text.index(first) + len(first)),
                              (text.index(second), text.index(second) + len(second))])
    answer = reader_draft([passage])
    assert [q.text for q in answer.claims[0].quotes] == [first, second]
    assert answer.answer == f"{first} {second}"
    assert check(answer, READABLE) is None
    assert check(draft(answer.answer, passage.marked_text), READABLE) is not None  # the joined quote is not
