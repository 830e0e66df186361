"""Who acts, the act a deadline is for, and what a count counts: a near miss about another actor,
act or thing is not an answer. Examples written for this file; none is from a corpus."""

from __future__ import annotations

from policydesk.answerability import Ask, Passage, fit


def test_a_deadline_for_one_party_is_not_met_by_the_other_partys_clock():
    ask = Ask.of("How long does a supplier have to ask for a second-level review?")
    assert ask.actor == "provider"
    assert not fit(ask, Passage("(b) Commercial. An enrollee may request a second-level review within 60 days.")).meets
    assert fit(ask, Passage("A supplier may request a second-level review within 45 days of the first decision.")).meets
    # a sentence naming no actor is the general rule
    assert fit(ask, Passage("A second-level review must be requested within 45 days.")).meets


def test_a_deadline_to_pay_is_met_only_by_a_passage_about_paying_that_thing():
    ask = Ask.of("How long does a subscriber have to pay the monthly contribution before the plan ends?")
    assert ask.act and ask.act.verb == "pay" and ask.act.object == frozenset({"contribution"})
    assert not fit(ask, Passage("The subscriber must file a grievance within 90 days of the event.")).meets
    # "paid" about something else is not paying the contribution
    assert not fit(ask, Passage("Months already paid are credited within 30 days.")).meets
    assert fit(ask, Passage("A contribution not paid within 31 days of its due date ends the plan.")).meets


def test_a_verb_no_source_uses_is_not_asked_of_the_passage_but_its_object_is():
    texts = ["Members schedule transport at least 3 days before the visit."]
    ask = Ask.of("how early does a member have to reserve transport?").in_context(texts)
    assert fit(ask, Passage(texts[0])).meets
    assert not fit(ask, Passage("Members must file a grievance within 3 days.")).meets


def test_filing_and_deciding_deadlines_keep_to_the_axes():
    # light and axis verbs carry no act of their own: the reverted object rule is not back
    assert Ask.of("how long do we have to get the claim in?").act is None
    assert Ask.of("how long does the member have to file an appeal?").act is None
    assert Ask.of("how fast does the plan have to resolve it?").act is None


def test_a_count_is_met_only_by_a_number_of_the_counted_thing():
    ask = Ask.of("how many chiropractic sessions are allowed before approval is needed?")
    assert ask.kind == "count" and ask.counted == "session"
    assert not fit(ask, Passage("An approval for a series of sessions lasts for the sessions approved or 3 months.")).meets
    assert fit(ask, Passage("The first 8 sessions each year need no approval.")).meets
    assert fit(Ask.of("how many pairs of contact lenses does a child get?"),
               Passage("The plan covers one pair of contact lenses each year.")).meets


def test_a_benefit_maximum_is_a_dollar_amount_of_a_maximum():
    ask = Ask.of("what's the yearly vision benefit maximum for an adult?")
    assert ask.kind == "amount" and ask.priced == "max"
    assert not fit(ask, Passage("There is no copayment for an eye exam.")).meets
    assert not fit(ask, Passage("The copayment for an eye exam is $10.")).meets
    assert fit(ask, Passage("Frames are covered up to a maximum of $150 a year.")).meets


def test_a_limit_to_request_one_review_is_not_the_limit_to_request_another():
    ask = Ask.of("how long does an out-of-state clinic have to ask the board for a peer hearing?")
    assert ask.requested == frozenset({"peer", "hear"})
    assert not fit(ask, Passage("A clinic may request a payment reconsideration within 60 days.")).meets
    assert fit(ask, Passage("A clinic may ask the board for a peer hearing within 30 days of the notice.")).meets
    # an abbreviation of the asked thing is spoken of by the word it starts
    assert fit(Ask.of("how long do we have to request a recon?"),
               Passage("A reconsideration must be requested within 90 days.")).meets
