"""Which sentence answers: what the question asks (its value, its unit, the number it gives, the new
rule or the kept one) and who acts on the clock it asks about. Each example is written for this
file; none is from a corpus."""

from __future__ import annotations

from datetime import date

from policydesk.answerability import Ask, Passage, ask_kind, fit, sides_in
from policydesk.asked_object import speaks_of
from policydesk.date_conditions import leaves_out
from policydesk.plan_names import plan_acts
from policydesk.providers.extractive import ExtractiveAnswerer
from policydesk.synthesis.prompt import build_messages, date_notes
from policydesk.synthesis.schema import ModelAnswer
from policydesk.vocabulary import Vocabulary, unknown_terms
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


def test_the_new_rule_is_quoted_not_the_old_value_kept_for_earlier_dates():
    notice = chunk("NOTE:v1:changes", "For visits on or after May 1, referral requests must be sent within 21 days "
                   "of the visit. Referral requests for earlier visits keep the 30-day referral request deadline.",
                   title="Referral Notice 4", section="What changes", source_type="wiki")
    assert "21 days" in answer("what's the new referral request deadline?", [notice]).claims[0].text
    # asking about the old rule is not asking for the new one
    assert "30-day" in answer("what was the old referral request deadline?", [notice]).claims[0].text


def test_a_sentence_saying_what_stays_as_it_is_gives_way_to_the_rule():
    notice = chunk("NOTE:v1:same", "The secondary claim limit of 60 days from the primary remittance and the "
                   "corrected claim rules stay as they are.", title="Claims Notice 9", section="What is not changing",
                   source_type="wiki")
    rule = chunk("CLM:v1:secondary", "A secondary claim must be received within 60 days of the primary payer's "
                 "remittance.", title="Claims", section="Claims after another payer")
    result = answer("how long is the secondary claim limit?", [notice, rule])
    assert result.claims[0].citations == ["CLM:v1:secondary"]


def test_the_value_in_the_unit_the_question_names_beats_one_in_another_unit():
    section = chunk("DEV:v1:returns", "(d) Returning a device. A member may return a device before the 10th "
                    "month of use. The return is arranged on form DX-4 before the 2nd billing month is billed.",
                    title="Home Devices", section="Returns")
    result = answer("member wants to return the device, by which billing month must it be arranged?", [section])
    assert "2nd billing month" in result.claims[0].text


def test_a_number_the_question_gives_in_words_finds_the_sentence_stating_it():
    section = chunk("CB:v1:callbacks", "A member who misses a callback gets a letter from the care team. "
                    "After four missed callbacks the case is closed.", title="Care Callbacks", section="Missed callbacks")
    result = answer("member keeps missing callbacks, what happens after the fourth one?", [section])
    assert result.claims[0].text == "After four missed callbacks the case is closed."


def test_a_sentence_carries_the_next_one_when_that_refers_back_and_holds_what_is_asked():
    section = chunk("OTH:v1:last-payer", "For members with other coverage the other coverage is billed first. "
                    "Two services are exempt and paid by the plan first: newborn hearing screens and lead testing. "
                    "A claim for these services is paid without the other payer's remittance.",
                    title="Other Coverage", section="Plan pays last")
    result = answer("for a lead test do we need the other payer's remittance before billing?", [section])
    assert "lead testing" in result.claims[0].text
    assert "without the other payer's remittance" in result.claims[0].text
    # a next sentence that does not refer back is left out
    plain = chunk("OTH:v1:plain", "Two services are paid by the plan first: hearing screens and lead testing. "
                  "Claims go to the address on the member card.", title="Other Coverage", section="Plan pays last")
    result = answer("is lead testing paid by the plan first?", [plain])
    assert "member card" not in result.claims[0].text


def test_what_a_when_question_asks_the_time_of_must_be_the_sources_own_word():
    vocabulary = Vocabulary.of(["Claims Team. The claims team reviews corrected claims.",
                                "The deadline for a corrected claim is 60 days."])
    # "cookout" runs two everyday words together, but what is asked the time of must be the sources' word
    assert unknown_terms("When is the spring cookout for the claims team?", vocabulary) == ["cookout"]
    assert unknown_terms("is there a cookout for the claims team?", vocabulary) == []
    assert unknown_terms("when is the deadline for a corrected claim?", vocabulary) == []


def test_a_subsection_title_names_a_topic_not_who_acts():
    ask = Ask.of("How long does an out-of-network provider have to file a claim?")
    plan_pays = Passage("A clean claim from an out-of-network provider is paid or denied within 30 days of receipt.",
                        lead_in="(e) Payment requests.")
    provider_files = Passage("An out-of-network provider must submit the claim within 365 days of the service.",
                             lead_in="(e) Payment requests.")
    assert not fit(ask, plan_pays).meets and fit(ask, provider_files).meets


def test_a_notice_the_plan_sends_is_its_decision_not_a_filing():
    ask = Ask.of("which form does the plan use to deny a coverage determination?")
    assert ask.kind == "code" and ask.sides["action"] == "decide"
    assert fit(ask, Passage("A denial is sent on form XR-12 with the member's appeal rights.")).meets
    # and the plan still acts after a leading connective
    assert plan_acts("Otherwise Lakeshore recovers it from later payments.", tuple(PROGRAMS.items()))


def test_a_question_about_the_trigger_of_a_rule_wants_the_sentence_stating_its_condition():
    ask = Ask.of("at what point do we refer a member to the care team?")
    assert ask.kind == "condition"
    assert not fit(ask, Passage("The care team calls the member within 2 days of the referral.")).meets
    assert fit(ask, Passage("A rep refers a member to the care team when the member has 4 ER visits in 3 months.")).meets


# --- rules measured on a probe of new rep-style questions (evals/corpus_manual/answerable_dev.yaml) ---

def test_a_yes_no_question_naming_a_deadline_is_not_asking_for_one():
    assert ask_kind("we mailed the grievance a week late. will it still be looked at?") == "open"
    assert ask_kind("the rebill bounced back, does that reset the deadline?") == "open"
    assert ask_kind("can the review be extended, and by how many days?") == "duration"
    section = chunk("RBL:v1:rebills", "A rebill must be received within 75 days of the remittance date. "
                    "A rebill sent back for missing fields keeps its original deadline; returning it does not reset "
                    "the clock.", title="Rebills", section="Deadlines")
    result = answer("our rebill was sent back for missing fields. does that reset the deadline?", [section])
    assert result.answerable and "does not reset" in result.claims[0].text


def test_a_request_as_a_noun_is_the_plan_deciding_not_the_asker_filing():
    assert sides_in("A request for reimbursement is decided within 45 calendar days.")["action"] == {"decide"}
    assert sides_in("The member may request a hearing within 20 days.")["action"] == {"file"}
    assert sides_in("the request must be made within 10 days of the admission")["action"] == {"file"}
    ask = Ask.of("out of network doctor, how long to get the first bill in?")
    assert not fit(ask, Passage("A request for reimbursement is decided within 45 calendar days.")).meets


def test_an_acronym_asked_about_is_spoken_of_by_the_words_it_is_the_initials_of():
    assert speaks_of(frozenset({"ire"}), "the case goes to the Independent Review Entity automatically")
    assert not speaks_of(frozenset({"ire"}), "the case is closed")
    assert not speaks_of(frozenset({"tab"}), "the team adds balances")  # an everyday word is not initials


def test_the_plan_named_by_its_brand_having_to_act_is_the_decide_side():
    ask = Ask.of("how many days does lakeshore have to pay a clean bill?", PROGRAMS)
    assert ask.sides["action"] == "decide"
    assert not fit(ask, Passage("A participating provider must submit a bill within 90 days of the service.")).meets
    assert Ask.of("What does Lakeshore pay an in-network lab for a panel?", PROGRAMS).kind == "amount"


def test_a_program_name_typed_in_lower_case_still_names_the_program():
    programs = {"medicaid": ("Lakeshore Community Care",), "chip": ("Lakeshore TeenCare",),
                "commercial": ("Lakeshore Select",)}
    assert Ask.of("teencare claim, what's the filing limit", programs).programs == frozenset({"chip"})
    assert Ask.of("community care member wants to appeal, how long?", programs).programs == frozenset({"medicaid"})
    # one plain word keeps its capital: "select" in lower case is the verb
    assert Ask.of("which form do I select for an appeal?", programs).programs == frozenset()


def test_a_qualifier_spelled_otherwise_than_the_sources_and_a_plural_abbreviation_are_known():
    vocabulary = Vocabulary.of(["A non-participating provider may ask for a review within 30 days.",
                                "A copayment of $10 applies to each office visit; a corrected bill uses code 7."])
    assert unknown_terms("we're OON, how long to ask for a review?", vocabulary) == []
    assert unknown_terms("how long do we have to resubmit?", vocabulary) == []
    assert unknown_terms("are there copays for office visits?", vocabulary) == []
    assert unknown_terms("what's Tricare's limit for a review?", vocabulary) == ["tricare"]


def test_a_sentence_for_other_dates_than_the_one_that_applies_is_not_quoted():
    new = "For dates of service on or after March 1, 2026, a claim must be received within 75 days."
    old = "For dates of service before March 1, 2026 the earlier limit of 150 days still applies."
    assert leaves_out(old, (), date(2026, 3, 1)) and not leaves_out(new, (), date(2026, 3, 1))
    assert leaves_out(new, (date(2026, 2, 10),), None) and not leaves_out(old, (date(2026, 2, 10),), None)
    section = chunk("TFL:v2:limits", f"(c) Community members. {old} {new}", title="Claim Deadlines",
                    section="Limits", effective_from="2026-03-01")
    today = answer("community claim, what's the filing limit?", [section])
    assert today.answerable and "75 days" in today.claims[0].text and "150" not in today.answer
    llm = ExtractiveAnswerer()
    notes = date_notes({"date_of_service": "2026-02-10"})
    earlier = ModelAnswer.model_validate_json(llm.chat(build_messages(
        "community claim, what's the filing limit?", [section], notes)).message.content)
    assert earlier.answerable and "150 days" in earlier.claims[0].text and "75 days" not in earlier.answer


def test_a_price_asked_for_a_service_is_met_only_where_that_service_is_priced():
    ask = Ask.of("What does Lakeshore pay an in-network lab for a lipid panel?", PROGRAMS)
    assert ask.kind == "amount" and {"lipid", "panel"} <= ask.object
    assert not fit(ask, Passage("A purchase billed at more than $800 needs an approval.")).meets
    assert fit(ask, Passage("A lipid panel is paid at $14 for an in-network lab.")).meets


def test_a_count_of_covered_units_names_the_benefit_the_sources_must_mention():
    vocabulary = Vocabulary.of(["Outpatient therapy visits after the 10th visit need an approval."])
    assert "hydrotherapy" in unknown_terms("How many hydrotherapy visits a year are covered?", vocabulary)
    assert unknown_terms("How many therapy visits are covered?", vocabulary) == []



def test_a_single_capital_before_a_capitalised_function_word_ends_the_sentence():
    from policydesk.providers.blocks import sentences

    text = ("Hearings for this product follow 12 USC 301 Part K. The member may ask for a hearing within 50 days. "
            "Claims signed by Ana P. Ortiz are kept.")
    assert sentences(text) == ["Hearings for this product follow 12 USC 301 Part K.",
                               "The member may ask for a hearing within 50 days.",
                               "Claims signed by Ana P. Ortiz are kept."]
    section = chunk("HRG:v1:hearings", text, title="Member Hearings", section="Hearings")
    result = answer("how long does a member have to ask for a hearing?", [section])
    assert result.claims[0].text.startswith("The member may ask for a hearing within 50 days")


def test_what_a_limit_runs_from_is_not_the_act_it_limits():
    # "within 25 days of the plan's review decision" is when the member's clock starts, not the plan deciding
    ask = Ask.of("the member lost the review. how long do they have to ask for an outside review?")
    assert ask.sides["action"] == "file"
    sentence = "A member may ask the state for an outside review within 25 days of the plan's review decision."
    assert sides_in(sentence)["action"] == {"file"}
    assert fit(ask, Passage(sentence)).meets
    assert not fit(ask, Passage("The plan decides an outside review request within 40 days.")).meets


def test_the_next_sentence_is_quoted_when_it_holds_what_the_question_asks_that_the_chosen_one_lacks():
    hold = chunk("HOLD:v1:holds", "A member who disagrees may ask the review office for a quick review no later than "
                 "the day before the stay ends. The stay's services continue while the review is pending.",
                 title="Stays", section="Quick review")
    result = answer("the member asked the review office for a quick review before the stay ends - is the stay still "
                    "covered meanwhile, while pending?", [hold])
    assert "services continue while the review is pending" in result.answer
    # a next sentence about something else is not carried
    other = chunk("HOLD:v1:other", "A member who disagrees may ask the review office for a quick review no later "
                  "than the day before the stay ends. Parking at the office is free.", title="Stays", section="Quick review")
    assert "Parking" not in answer("by when must the member ask the review office for a quick review?", [other]).answer


def test_a_deadline_given_as_a_time_of_day_answers_by_when():
    ask = Ask.of("by when does the member have to ask for the quick review?")
    assert ask.kind == "duration"
    assert fit(ask, Passage("The member must ask no later than 5 p.m. on the last covered day.")).meets
    assert not fit(ask, Passage("The member may ask the review office for a quick review.")).meets


def test_a_number_inside_a_stated_range_is_the_number_asked():
    from policydesk.providers.choice import numbers_in

    assert 7 in numbers_in("XQ | Sixth through fifteenth week of a rental")
    assert numbers_in("days 2 to 4") == {2, 3, 4}
    table = chunk("RNT:v1:codes", "Code | Meaning XA | First week of a rental XQ | Sixth through fifteenth week "
                  "of a rental XZ | Part replaced as a repair", title="Rentals", section="Rental codes")
    for question, code in (("which code goes on the 7th week of a rental?", "XQ"),
                           ("what code do we bill for the first week of a rental", "XA")):
        assert code in answer(question, [table]).answer


def test_a_call_as_an_event_is_not_a_contact_point():
    ask = Ask.of("where do members mail their grievances?")
    assert ask.kind == "contact"
    assert not fit(ask, Passage("A grievance made orally counts as received on the day of the call.")).meets
    assert fit(ask, Passage("Grievances: Member Relations, PO Box 7781, Lakeview.")).meets
    assert fit(ask, Passage("Members call Member Relations to file a grievance.")).meets


def test_the_deadline_to_do_something_is_asked_of_what_is_done_not_of_the_verb():
    ask = Ask.of("what's the deadline to get the fix in?")
    assert ask.object == frozenset({"fix"})
    assert fit(Ask.of("what's the deadline to get the replacement in?"),
               Passage("A replacement claim must be received within 75 days of the remittance date.")).meets


def test_an_abbreviation_is_read_from_hyphenated_words_too():
    from policydesk.providers.choice import expand_abbreviations

    texts = ["The agency gives the Notice of Home-Care Ending, form HC-2, two days ahead."]
    assert expand_abbreviations("which form is the NOHCE?", texts) == "which form is the NOHCE (notice of home care ending)?"


def test_whether_something_may_be_done_is_answered_with_the_limit_put_on_it():
    section = chunk("AUD:v1:audits", "Staff who find a billing error send it to the audit desk within 3 days on form AD-2. "
                    "Staff must not discuss the audit with the billing office.", title="Audits", section="Sending to audit")
    result = answer("I sent a billing error to the audit desk. am I allowed to give the office a heads up?", [section])
    assert "must not discuss the audit" in result.answer
    # a question that is not about whether it may be done does not carry the limit
    plain = answer("which form do staff send a billing error to the audit desk on?", [section])
    assert "must not" not in plain.answer


def test_the_exception_in_the_same_lettered_subsection_is_quoted_with_the_rule():
    order = chunk("ORD:v1:order", "(a) The plan covering the person as a retiree pays after the plan covering them "
                  "through current work. (b) When a child is covered by both parents, the plan of the parent whose "
                  "birthday comes first in the calendar year pays first. The parents' ages do not matter. (c) A court "
                  "order naming one parent decides instead.", title="Order of Payment", section="Which plan pays first")
    result = answer("child on both parents' plans, dad is older than mom - does his plan go first?", [order])
    assert result.answerable and "ages do not matter" in result.answer
    assert "retiree" not in result.answer  # another subsection is not carried along


def test_a_sentence_of_the_subsection_for_the_side_not_asked_is_left_out():
    limits = chunk("SEC:v1:limits", "(b) Secondary claims. A contracted provider sends the secondary claim within "
                   "45 days of the primary payer's remittance. A non-contracted provider has 90 days from the same "
                   "date.", title="Other Coverage", section="Secondary claims")
    result = answer("we're contracted - how long to send the secondary claim after the primary paid?", [limits])
    assert result.answerable and "45 days" in result.answer and "90 days" not in result.answer
