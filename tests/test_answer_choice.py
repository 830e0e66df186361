"""Which sentence answers: what the question asks (its value, its unit, the number it gives, the new
rule or the kept one) and who acts on the clock it asks about. Each example is written for this
file; none is from a corpus."""

from __future__ import annotations

from policydesk.answerability import Ask, Passage, fit, plan_acts
from tests.factories import chunk
from tests.test_extractive import answer

PROGRAMS = {"commercial": ("Lakeshore Select",), "medicaid": ("Lakeshore Community",)}


def test_a_sentence_in_which_the_plan_acts_does_not_answer_how_long_we_have_to_send():
    cob = chunk("OTH:v1:other-coverage", "The plan reviews the reported coverage within 5 business days. "
                "A claim sent after another payer paid first must be received within 75 days of that payer's "
                "remittance.", title="Other Coverage", section="Claims after another payer")
    result = answer("another payer paid first. how long do we have to get the claim to the plan?", [cob])
    assert result.answerable and "75 days" in result.claims[0].text
    assert all("5 business days" not in c.text for c in result.claims)
    # the plan by its own name, read from its program names, acts the same way
    ask = Ask.of("How long do we have to get the bill to Lakeshore?", PROGRAMS)
    assert ask.sides["action"] == "file" and ask.asker_files
    assert not fit(ask, Passage("Lakeshore verifies the other coverage within 10 business days.")).meets
    assert fit(ask, Passage("Lakeshore must receive the bill within 60 days of the service.")).meets
    assert not plan_acts("Lakeshore Community (Medicaid) pays last.", tuple(PROGRAMS.items()))
    # asking how long the plan takes is not the asker's clock: the plan's sentence stays in play
    assert not Ask.of("new provider sent in the packet, how long until we finish it?").asker_files



def test_a_secondary_claim_question_is_not_answered_with_the_initial_claim_limit():
    ask = Ask.of("is there a limit for a secondary claim?")
    assert ask.sides["submission"] == "secondary"
    assert not fit(ask, Passage("Initial claims must be received within 100 days of the date of service.")).meets
    assert fit(ask, Passage("A secondary claim must be received within 45 days of the primary remittance.")).meets



def test_a_filing_limit_question_asks_for_a_duration_and_a_start_question_for_what_it_runs_from():
    assert Ask.of("what was the filing limit for that claim?").kind == "duration"
    assert Ask.of("after a retro add, when does the filing limit start?").kind == "start"
    section = chunk("LIM:v1:limit", "The filing limit is counted from the date of discharge for a hospital stay. "
                    "A claim received more than 150 days after that date is denied.",
                    title="Claim Deadlines", section="Limit")
    assert "150 days" in answer("what was the filing limit for that claim?", [section]).claims[0].text
    started = answer("for a hospital stay, when does the filing limit start?", [section])
    assert "date of discharge" in started.claims[0].text
