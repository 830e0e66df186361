"""Text detectors shared by the refusal gate, the ingester and the post-flight check."""

from __future__ import annotations

import pytest

from policydesk.detectors import find_claim_decision_language, find_member_identifiers, is_claim_action, is_out_of_scope
from policydesk.detectors.identifiers import find_identifier_spans
from policydesk.detectors.phrasing import asks_for_information
from policydesk.detectors.redact import redact


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("member CVM12345678", "member_id"),
        ("subscriber CVS-12345678", "member_id"),
        ("CLM123456789", "member_id"),
        ("claim number 123456789", "claim_number"),
        ("SSN 123-45-6789", "ssn"),
        ("ssn ending in 6789", "ssn"),
        ("call (312) 555-0199", "phone_number"),
        ("DOB: 1/2/1980", "date_of_birth"),
    ],
)
def test_find_member_identifiers_kinds(text, kind):
    assert kind in find_member_identifiers(text)


@pytest.mark.parametrize(
    "text",
    [
        "Version 1 says 180 days, in force 2024-01-01 to 2025-12-31.",
        "Call Provider Services at 1-800-555-0100 for prior authorization.",
        "Claims must be filed within 90 days of the date of service.",
    ],
)
def test_find_member_identifiers_policy_text_is_clean(text):
    assert find_member_identifiers(text) == []


def test_find_claim_decision_language():
    found = find_claim_decision_language(
        "Your claim is approved. The claim will be denied. This claim will be paid. "
        "We will pay the balance. It is approved for payment."
    )
    assert found == [
        "your claim is approved",
        "the claim will be denied",
        "this claim will be paid",
        "we will pay",
        "approved for payment",
    ]


def test_find_claim_decision_language_rule_statements_are_clean():
    text = (
        "Claims filed after 90 days are denied. A claim filed late may be appealed "
        "within 60 days of the denial notice. The plan pays secondary claims after the primary."
    )
    assert find_claim_decision_language(text) == []


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("SSN 512 44 9087 on file", "ssn"),
        ("social is 512.44.9087", "ssn"),
        ("write to them at kim.lee77@example.org", "email"),
        ("member cell 503-555-0147", "phone_number"),
        ("Jane Roe (02/03/1961) called", "date_of_birth"),
        ("caller Tom Becker asked", "person_name"),
        ("Maria Lopez is on the line", "person_name"),
        ("subscriber # HX-4471-920", "member_id"),
        ("case number CS-2025-118842", "member_id"),
        ("MRN 00482913", "member_id"),
        ("claim ref 7F3K99201A", "claim_number"),
        ("her card says seven two two, oh four one, nine nine three", "spoken_number"),
    ],
)
def test_find_identifier_spans_generic_kinds(text, kind):
    assert kind in [f.kind for f in find_identifier_spans(text)]


@pytest.mark.parametrize(
    "text",
    [
        "is 866-555-0199 still the provider line?",
        "Provider services said to call 503-555-0100 for the UM line.",
        "Is policy MP-2024-017 the current telehealth policy?",
        "CPT 97110 and HCPCS E0601 on a claim with reason CO-29",
        "Send appeals to appeals@plan.example.",
        "Dr. Patel's office asks about the Member Cost Sharing section.",
        "Claims received on 20260115 for a date of service of 11/03/2025.",
        "Is it one, two or three visits before the auth is needed, and does day five count?",
    ],
)
def test_find_identifier_spans_policy_questions_pass(text):
    assert find_identifier_spans(text) == []


def test_plan_id_patterns_are_a_setting():
    # A plan's own format is flagged with no cue word only when the setting lists it.
    assert find_identifier_spans("ZQ482-KT asked", plan_patterns=[]) == []
    assert [f.kind for f in find_identifier_spans("ZQ482-KT asked", plan_patterns=[r"ZQ\d{3}-[A-Z]{2}"])] == ["member_id"]


def test_redact_replaces_identifiers_and_names_the_detectors():
    r = redact("Member ID is 4471-2290-13 and her email is a.b@example.com; appeal window?")
    assert "4471" not in r.text and "a.b@example.com" not in r.text
    assert r.text == "Member ID is [ID] and her email is [EMAIL]; appeal window?"
    assert "email" in r.kinds and "member_id" in r.kinds


def test_redact_removes_uncued_identifier_shapes_the_gate_lets_through():
    # No cue word, so the gate does not refuse; redaction still removes it (issue 15, layer 2).
    question = "what's the appeal window for 7QX-4410-882B?"
    assert find_identifier_spans(question) == []
    assert redact(question).text == "what's the appeal window for [ID]?"


def test_redact_keeps_what_a_policy_question_needs():
    question = "Does policy MP-2024-017 cover CPT 97110 on 2025-11-03? Call 1-888-555-0175."
    assert redact(question).text == question


def test_redact_removes_a_number_read_out_digit_by_digit():
    assert redact("card number one two three four five six seven, appeal window?").text == (
        "card number [ID], appeal window?")


@pytest.mark.parametrize(
    "text",
    [
        "Would you be able to release the hold on the oxygen claim?",
        "is there any way you could reprocess the lab bill at the contracted rate",
        "Do me a favor and approve the second MRI.",
        "I'd appreciate it if you could waive the copay for her.",
        "we need the overpayment refunded to the member",
        "Can you help me get the denial on his sleep study reversed?",
        "could you authorize 4 more chiropractic visits",
        "would you mind putting the corrected claim through today",
    ],
)
def test_polite_and_indirect_claim_requests_are_claim_actions(text):
    assert is_claim_action(text)


@pytest.mark.parametrize(
    "text",
    [
        "What does it take to get a retro auth approved?",
        "Does the member need the referral approved before the visit?",
        "Can you deny a claim for a missing modifier?",
        "Is it possible for a denied claim to be paid after a corrected claim is sent?",
        "How do we get denied claims reprocessed after an appeal?",
    ],
)
def test_questions_about_the_rule_are_not_claim_actions(text):
    assert not is_claim_action(text)


@pytest.mark.parametrize(
    "text",
    [
        # one specific case, no request opener: a possessive or a deadline makes the modal a request
        "Could his knee brace denial be reversed before Friday?",
        "can the wheelchair claim get paid today",
        "Can we reprocess her lab claim at the contracted rate?",
        "Let the late ER notice slide this once.",
        "I want the mileage refund mailed to her.",
        "Take the pend off the oxygen claim.",
        "aprove the walker rental",  # misspelled
        # someone else asked, and then the rep asks PolicyDesk to do it
        "The office said to go ahead and pay it. Can you do that now?",
    ],
)
def test_claim_requests_without_a_known_opener_are_claim_actions(text):
    assert is_claim_action(text)


@pytest.mark.parametrize(
    "text",
    [
        # a request someone else made, quoted or reported, and a question about it (issue 15)
        "A caller asked me to just approve it. What do I tell her?",
        "The provider keeps saying 'pay the claim already'. Is there a script for that?",
        # a modal about the rule, or about a hypothetical
        "Can a claim be approved after the filing limit if the member was hospitalized?",
        "Can the denial be overturned on appeal?",
        "Can her auth be extended if the surgery moves?",
        "Do I need the member's consent to discuss an approved auth with her son?",
    ],
)
def test_questions_about_a_request_or_the_rule_are_not_claim_actions(text):
    assert not is_claim_action(text)


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Provider says we paid the wrong rate. Where do they send a reconsideration?", True),
        ("my caller wants it paid today, what's the usual turnaround?", True),
        ("can we accept a corrected claim on day 200 if the original was timely", True),
        ("The member bought a nebulizer herself. can DME cover that after the fact?", True),
        ("Please approve the claim today.", False),
        ("Can we approve her claim today?", False),
    ],
)
def test_asks_for_information(text, asks):
    assert asks_for_information(text) is asks


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("subscriber id RT 52 880 914 asked about OON", "member_id"),  # letters, then spaced groups
        ("member no. 7731 20 994-01 wants a card", "member_id"),  # a dependent suffix
        ("her MBI is 4kt2-hn5-wp38", "member_id"),  # the Medicare Beneficiary Identifier shape
        ("email is lee dot park at example dot org", "email"),
        ("reach her at lpark (at) example (dot) com", "email"),
        ("write to lpark at example.com", "email"),
        ("she was born on the ninth of June, 1961", "date_of_birth"),
        ("dob aug 3 71, asking about vision", "date_of_birth"),
        ("I have mrs. kowalczyk on hold", "person_name"),
        ("member name is dana ruiz", "person_name"),
        ("caller anna m. lopez asked", "person_name"),
        ("callback 4 1 5 5 5 5 0 1 3 8", "spoken_number"),
    ],
)
def test_find_identifier_spans_new_shapes(text, kind):
    assert kind in [f.kind for f in find_identifier_spans(text)]


@pytest.mark.parametrize(
    "text",
    [
        "claim with cpt 99213 denied for a missing modifier?",
        "the member guide says 365 days for corrected claims",
        "Do MS patients need a neurologist referral?",
        "member is a 45 year old, does she need a colonoscopy auth?",
    ],
)
def test_identifier_look_alikes_pass(text):
    assert find_identifier_spans(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "Her wrist is swollen after a fall. Could it be a fracture?",
        "what usually causes a rash like that",
        "should she go to urgent care for the cut on her hand",
        "how do I request PTO for next week",
        "should the member sue the ambulance company?",
        "Does Cigna cover acupuncture?",
        "What's Aetna's appeal window?",
        "which insurer has the cheapest plan for a family of four",
    ],
)
def test_out_of_scope_kinds(text):
    assert is_out_of_scope(text)


@pytest.mark.parametrize(
    "text",
    [
        "Is an MRI for knee pain covered without prior auth?",
        "The member has Cigna as primary; do we pay secondary?",
        "member switched from Aetna to us last month, does her auth carry over?",
        "Does the plan cover a second opinion for a cancer diagnosis?",
    ],
)
def test_plan_questions_naming_symptoms_or_other_payers_stay_in_scope(text):
    assert not is_out_of_scope(text)


def test_other_payer_names_are_a_setting():
    # A plan that is itself on the default list removes its name; nothing else changes.
    assert is_out_of_scope("Does Cigna cover acupuncture?", other_payers=["Cigna"])
    assert not is_out_of_scope("Does Cigna cover acupuncture?", other_payers=[])


def test_indirect_and_yes_no_rule_questions_ask_for_information():
    # Issue 15, ref15 batch 4: both were refused as claim actions by the classifier.
    assert asks_for_information("the office is asking whether we'd cover a second hearing aid")
    assert asks_for_information("she got a bill after we paid. is balance billing allowed in network?")
    assert not asks_for_information("Is it ok to just pay it this time?")


def test_classifier_is_not_fitted_on_out_of_scope_cases_the_rules_decide():
    from policydesk.screening.intent import fitted_cases

    cases = [("Does Aetna cover acupuncture?", "out_of_scope"), ("who won the game last night", "out_of_scope"),
             ("Does the plan cover acupuncture?", "pass"), ("Approve the claim.", "claim_action")]
    assert fitted_cases(cases) == cases[1:]


def test_learned_out_of_scope_guess_needs_more_on_a_benefit_question():
    # 3-d vectors (a test seam, no model): the benefit question sits exactly on the out-of-scope example.
    import numpy as np

    from policydesk.screening.intent import IntentClassifier

    vectors = {"what's the forecast for saturday": [1, 0, 0], "how do appeals work": [0, 1, 0],
               "release the payment": [0, 0, 1], "what's the deductible for acupuncture": [1, 0, 0],
               "what's the forecast for acupuncture": [1, 0, 0]}
    cases = [("what's the forecast for saturday", "out_of_scope"), ("how do appeals work", "pass"),
             ("release the payment", "claim_action")]

    def embed(texts):
        return np.array([vectors[t] for t in texts], dtype=float)

    def label(question, plan_threshold):
        clf = IntentClassifier(embed, cases=cases, plan_vocabulary_scope_threshold=plan_threshold)
        return clf.classify(question).label

    assert label("what's the deductible for acupuncture", 0.5) == "out_of_scope"
    assert label("what's the deductible for acupuncture", 1.01) == "pass"
    assert label("what's the forecast for acupuncture", 1.01) == "out_of_scope"


# ref15b (issue 15, before test_v4): a request to act on one case is recognized by its shape, whatever
# the verb, and the questions that use the same verbs still pass.
@pytest.mark.parametrize(
    "text",
    [
        "Re-send the remittance advice to the billing office.",
        "please refile her grievance under the quality-of-care category",
        "we need to retro-authorize his rehab stay, do it this morning",
        "Escalate it.",
        "kindly fast-track the pharmacy exception for his inhaler",
        "Could you unpend the infusion claims and release them?",
        "I'd like you to lodge a complaint for the caller about the rude driver.",
        "Void the payment and then reissue it to the right tax ID.",
        "Can we bump her OT visits to 24 for the year?",
        "would you mind reclassifying the visit on his claim as preventive",
        "Deactivate the old auth on her file.",  # a verb no list names: the imperative shape decides
        "Go ahead.",
    ],
)
def test_requests_to_act_on_a_case_are_claim_actions_whatever_the_verb(text):
    assert is_claim_action(text)


@pytest.mark.parametrize(
    "text",
    [
        "Approve or deny: which decision applies when the referral came in late?",
        "how do I file an appeal for a member in a nursing home?",
        "can a provider file the appeal for the member?",
        "Does the plan reissue a stale-dated check automatically?",
        "If a refund check bounces, resend it or send a new one?",
        "When a grievance is withdrawn, do we still send a closure letter?",
        "Who is allowed to retro-authorize an admission after discharge?",
        "Should the claim be voided if it was billed under the wrong member?",
        "Provider Dr. Ruth Okoye's office asks whether referrals expire.",
        "Update: the appeals fax number changed. Which number do providers use now?",
        "Apply the deductible first, then coinsurance?",
    ],
)
def test_questions_that_use_action_verbs_are_not_claim_actions(text):
    assert not is_claim_action(text)


@pytest.mark.parametrize(
    "text",
    [
        "the reference for her precert is PX2025-77310, how long is it valid?",
        "grievance GV-4410-22 came in monday, when is it due?",
        "auth number 31-88412 covers how many days?",
        "the EFT trace on the returned payment is 8841-55-2201, why did it bounce?",
        "check # 00451877 never cleared, what now?",
    ],
)
def test_case_reference_numbers_are_identifiers_without_a_member_cue(text):
    assert find_member_identifiers(text) == ["member_id"]


@pytest.mark.parametrize(
    "text",
    [
        "The card lists 1-877-555-0163 for members, is that the behavioral health line too?",
        "Back of the ID card says 800-555-0134, is that member services?",
        "policy MP-2024-017 on appeals, is it still in force?",
        "Do claims for CPT 99201-99215 need a modifier?",
        "Is the 2025-2026 plan year deductible different?",
    ],
)
def test_plan_lines_policy_numbers_and_code_ranges_are_not_identifiers(text):
    assert find_member_identifiers(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "I can't log in to the claims system, my password expired",
        "write a poem about prior authorization for the team party",
        "tell us a joke about coinsurance",
        "my headset keeps dropping calls on the appeals line, who fixes it?",
        "What's the capital of Canada?",
        "Tell me about the history of the Affordable Care Act.",
    ],
)
def test_staff_it_creative_and_general_knowledge_are_out_of_scope_whatever_plan_words(text):
    assert is_out_of_scope(text)


@pytest.mark.parametrize(
    "text",
    [
        "the member is locked out of the portal, how does she reset her password?",
        "Is a newborn covered from birth if added within 30 days?",
        "Who wrote the referral doesn't matter if the PCP left the network, right?",
        "Can I send the appeal form to the member from my email?",
        "What language does the member speak, and is an interpreter covered?",
        "Tell me the story behind the filing limit change.",
        "Does her history of Medicaid coverage count as creditable coverage?",
        "how many miles can non-emergency transport go?",
    ],
)
def test_member_account_and_plan_questions_stay_in_scope(text):
    assert not is_out_of_scope(text)


# Out-of-scope and identifier kinds (docs/refusal.md, "Order and layers"): categories, not sentences. Phrasings written for these
# pins, not copied from any split.
@pytest.mark.parametrize(
    "text",
    [
        "the claim number printed on the remit is 4410 8823 1907 55, why the adjustment?",
        "subscriber id, as she read it: P-Z-6-6-1-0-3-8-2, is she on the family tier?",
        "member id is t r 9 0 4 4 1 2 7",
        "Member Alma Reyes, born October seventh nineteen sixty-one, asked about her deductible.",
        "dob the first of May two thousand two, does the dependent age out this year?",
    ],
)
def test_spaced_spelled_and_word_date_identifiers(text):
    assert find_member_identifiers(text)


@pytest.mark.parametrize(
    "text",
    [
        "A dental office rang from their main line 541-555-0107 about a late claim; is it 90 days?",
        "the clinic's fax number is 206-555-0143, can the appeal be faxed there?",
        "Codes 97110 97112 97140 on one claim - is modifier 59 needed?",
        "The claim has 97161 97162 97163 billed; is one evaluation per day allowed?",
        "Member born in nineteen forty-eight, is she Medicare eligible?",
    ],
)
def test_office_lines_code_lists_and_birth_years_are_not_identifiers(text):
    assert not find_member_identifiers(text)


@pytest.mark.parametrize(
    "text",
    [
        "Should my member take naproxen while she's on warfarin?",
        "recommend a good antibiotic for her sinus infection",
        "is it safe for a member with a heart condition to go hiking at altitude?",
        "Is that swelling something he should go to the ER for?",
        "how long does Cigna give a member to appeal?",
        "who do I ask about my own dental coverage as an employee?",
        "Draft a Facebook post for our department's bake sale.",
        "Translate the phrase 'your appeal was approved' into Korean.",
    ],
)
def test_clinical_other_payer_employment_and_writing_are_out_of_scope(text):
    assert is_out_of_scope(text)
    assert not is_claim_action(text)


@pytest.mark.parametrize(
    "text",
    [
        "Is urgent care covered when the member has no referral?",
        "does the plan cover an antidepressant that isn't on the formulary?",
        "Is a second opinion covered before spine surgery?",
        "What's the rule for overriding a refill-too-soon reject after a dose increase?",
        "What do I tell a member who asks if her two prescriptions interact?",
        "How many PT visits can the member have per year?",
        "Is it okay to take a member's call on a personal cell?",
        "Does Cigna pay first when the member also has our plan?",
        "If someone is covered as an employee at her job and as a spouse on ours, who pays first?",
        "Can the member get her denial letter translated into Korean?",
    ],
)
def test_coverage_and_rule_questions_about_the_same_things_stay_in_scope(text):
    assert not is_out_of_scope(text)


# The plan's own numbers in a question, named by the words next to them, pass the gate's identifier
# check; the same shapes given to a member are still found. One detector: ingest and post-flight ask it too.
@pytest.mark.parametrize("text", [
    "what's the fax number for prior auth?",
    "Is (503) 555-0142 still the prior authorization fax?",
    "Prior Authorization Fax: (503) 555-0142, is that right for DME requests?",
    "the member wants the appeals PO Box, is it P.O. Box 3011, Portland, OR 97208-3011?",
    "does OAC 5160-58-08.4 set the Medicaid appeal timeframe?",
    "is payer ID 660510 the one for electronic claims?",
])
def test_plan_numbers_in_a_question_are_not_member_identifiers(text):
    assert find_member_identifiers(text, plan_patterns=()) == []


@pytest.mark.parametrize(("text", "kind"), [
    ("the member's callback is (503) 555-0187, can you check her appeal?", "phone_number"),
    ("member's home address is 1420 Elm St, Salem, does her PCP change?", "street_address"),
    ("Member ID 1861472391, is the MRI authorized?", "member_id"),
])
def test_the_same_shapes_given_to_a_member_are_found(text, kind):
    assert kind in find_member_identifiers(text, plan_patterns=())


def test_an_unlabelled_number_in_a_directory_row_is_an_npi_only_with_a_valid_check_digit():
    from policydesk.detectors.attribution import npi_check_digit_ok

    assert npi_check_digit_ok("1234567893") and not npi_check_digit_ok("1234567890")  # CMS's example NPI
    row = "Ana Ruiz, MD | Family Medicine | {} | accepting new patients"
    assert "member_id" not in find_member_identifiers(row.format("1861472391"), plan_patterns=())
    assert "member_id" in find_member_identifiers(row.format("1861472392"), plan_patterns=())
    # In a call note's line, a person named next to it makes it theirs, check digit or not.
    assert "member_id" in find_member_identifiers("Member | Ana Ruiz | 1861472391 | DOB on file", plan_patterns=())


def test_a_relative_that_is_not_a_specific_case():
    from policydesk.detectors.phrasing import SPECIFIC

    assert not SPECIFIC.search("may we bill a visit that was never authorized on a replacement claim?")
    assert SPECIFIC.search("may we bill that visit on a replacement claim?")
    assert asks_for_information("can i bill a visit that was never authorized on a replacement claim?")


def test_a_question_ending_in_a_verbless_fragment_names_what_it_asks():
    from policydesk.detectors.claims import names_what_is_asked

    assert names_what_is_asked("urgent infusion request for a senior plan member, turnaround?")
    assert names_what_is_asked("out of network lab claim - time limit?")
    # a request still needs no fragment to be one, and a tag or a deadline asks nothing of its own
    assert not names_what_is_asked("reverse her denial, ok?")
    assert not names_what_is_asked("fix the claim, today?")
    assert not names_what_is_asked("her claim, approve?")
    assert not names_what_is_asked("what is the time limit?")


def test_extending_a_rules_clock_for_any_case_is_a_question_not_a_request():
    assert not is_claim_action("can we extend the deadline on an infusion decision when records are missing?")
    assert is_claim_action("can we extend the deadline on her infusion decision?")
    assert is_claim_action("can we backdate the auth if we fax the form?")
