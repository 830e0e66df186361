"""An answer must answer: the ask and qualifiers of a question, sentence choice by them, and the
abstention when no sentence in context meets them. Each failure class of answers on payer-shaped
documents is pinned with an example written for this file (none is from a corpus)."""

from __future__ import annotations

from datetime import date

import pytest
import yaml
from sqlalchemy.orm import Session

from policydesk.answer import AskRequest, Claim
from policydesk.answerability import Ask, Passage, ask_kind, fit, names_source
from policydesk.plan_names import program_names
from policydesk.pipeline import build_pipeline
from policydesk.providers.blocks import passages
from policydesk.providers.choice import expand_abbreviations
from policydesk.synthesis.answered import check_answered
from policydesk.synthesis.schema import ModelAnswer
from policydesk.users import add_user
from policydesk.vocabulary import Vocabulary, unknown_terms
from tests.factories import chunk
from tests.ingest_fixtures import _pdf
from tests.test_extractive import answer

RECON = "CLM:v1:reconsideration"


def recon_section() -> object:
    # Participating and non-participating rules side by side, one subsection each, joined in one
    # paragraph the way a PDF reader gives them.
    return chunk(RECON, "(a) Scope. A provider may ask the plan to reconsider a paid or denied claim. "
                        "(b) Participating providers. A participating provider must request a reconsideration "
                        "within 90 days of the remittance date. The plan decides it within 30 days of receipt. "
                        "(c) Non-participating providers. A non-participating provider must request a "
                        "reconsideration within 60 days of the remittance date. The plan decides it within "
                        "45 days of receipt.", title="Claim Reconsiderations", section="Reconsiderations")


def test_contracted_provider_gets_the_participating_rule_not_the_neighbouring_one():
    result = answer("We're a contracted provider - how long do we have to ask for a reconsideration?",
                    [recon_section()])
    assert result.answerable
    assert "90 days" in result.claims[0].text and "60 days" not in result.claims[0].text
    assert result.claims[0].text.startswith("(b) Participating providers.")  # the lead-in it needs


def test_out_of_network_provider_gets_the_non_participating_rule():
    result = answer("we're out of network, how long does the plan take to decide our reconsideration?",
                    [recon_section()])
    assert result.answerable and "45 days" in result.claims[0].text


def test_how_long_to_file_is_not_answered_with_how_long_the_plan_takes_to_decide():
    appeals = chunk("APL:v1:timeframes", "The plan resolves a standard appeal within 30 days of receipt. "
                                         "A member must file an appeal within 65 days of the date on the notice.",
                    title="Member Appeals", section="Timeframes")
    filing = answer("How long does a member have to file an appeal?", [appeals])
    deciding = answer("How long does the plan have to decide a standard appeal?", [appeals])
    assert "65 days" in filing.claims[0].text and "30 days" not in filing.claims[0].text
    assert "30 days" in deciding.claims[0].text


def test_answer_deep_in_a_long_section_is_found_by_what_the_question_asks():
    section = chunk("DME:v1:rentals", " ".join([
        "This section explains how durable medical equipment is supplied to members.",
        "Suppliers must keep delivery records for every item they furnish.",
        "Equipment must be suitable for use in the home and must be ordered by a treating practitioner.",
        "Repairs are covered when the member owns the item and the repair is cheaper than a replacement.",
        "(d) Capped rentals. A capped rental item becomes the member's property after 13 continuous months "
        "of rental.",
    ]), title="Durable Medical Equipment", section="Rentals")
    result = answer("after how many months does a rented item belong to the member?", [section])
    assert "13 continuous months" in result.claims[0].text


def test_the_exception_asked_about_beats_the_general_rule():
    filing = chunk("TF:v1:limits", "Claims must be received within 120 days of the date of service. "
                                   "When another insurer paid first, the claim must be received within 60 days "
                                   "of the other insurer's explanation of benefits.",
                   title="Claim Filing", section="Limits")
    result = answer("the member has other insurance that paid first - how long do we have to file?", [filing])
    assert "60 days" in result.claims[0].text


def test_the_rule_in_force_is_quoted_over_the_notice_that_announced_it():
    notice = chunk("NOTICE:v1:what-changes", "Standard referral reviews will be completed within 5 business days "
                   "instead of 10 business days.", title="Provider Notice 12 Referral Review Changes",
                   section="What changes")
    rule = chunk("REF:v2:timeframes", "(b) Standard reviews. Starting with requests received on or after "
                 "March 1, the plan completes a standard referral review within 5 business days.",
                 title="Referral Reviews", section="Review timeframes")
    result = answer("how long does a standard referral review take?", [notice, rule])
    assert result.claims[0].citations == ["REF:v2:timeframes"]


def test_the_program_named_wins_over_a_higher_scoring_sentence_for_another_program():
    # Programs are read from the corpus's own names for them ("Brightway Kids (CHIP)").
    side_by_side = chunk("PA:v1:timeframes", "(a) Brightway Kids (CHIP). Standard requests are decided within "
                                             "14 days. (b) Brightway Care (Medicaid). Standard requests are "
                                             "decided within 7 days.",
                         title="Prior Authorization", section="Decision Timeframes")
    text = side_by_side.node.get_content()
    programs = program_names(_labels(text), ["chip"])
    assert programs["medicaid"] == ("Brightway Care",)
    ask = Ask.of("standard PA turnaround for a Brightway Care member?", programs)
    assert ask.programs == {"medicaid"} and ask.kind == "duration"
    sentences = passages(text)
    chosen = [s for s, lead in sentences if fit(ask, Passage(s, lead)).meets]
    assert chosen == ["Standard requests are decided within 7 days."]


def _labels(text: str):
    from policydesk.plan_names import labelled_names

    return labelled_names(text)


def test_unanswerable_question_near_a_real_sentence_is_not_answered():
    # The sources say a fee schedule applies, never the amount; the draft quoting that sentence fails.
    fee = chunk("FEE:v1:rates", "Durable equipment is paid from the plan's fee schedule, updated each January.",
                title="Payment Rates", section="Equipment")
    draft = ModelAnswer(answerable=True, answer="x", claims=[Claim(text=fee.node.get_content(),
                                                                   citations=[fee.node.node_id])])
    verdict = check_answered("What is the monthly rental payment for a hospital bed?", draft,
                             {fee.node.node_id: fee}, vocabulary=None)
    assert not verdict.answered and any("amount" in u or "payment" in u for u in verdict.unmet)
    premium = chunk("KIDS:v1:cost", "Families above the income limit pay a $10 copayment per office visit.",
                    title="Cost Sharing", section="Copayments")
    draft = ModelAnswer(answerable=True, answer="x", claims=[Claim(text=premium.node.get_content(),
                                                                   citations=[premium.node.node_id])])
    assert not check_answered("How much is the monthly premium?", draft, {premium.node.node_id: premium},
                              vocabulary=None).answered  # a copayment is not a premium


def test_a_value_asked_of_one_thing_is_not_answered_by_the_value_of_another():
    # The copay, number or code the question asks for is of something; a sentence giving the value
    # of something else answers a neighbouring question, not this one.
    copay = Passage(sentence="Families above the income limit pay a $10 copayment for an office visit.")
    assert not fit(Ask.of("What is the copayment for an inpatient hospital stay?"), copay).meets
    assert fit(Ask.of("What is the copay for an office visit?"), copay).meets
    line = Passage(sentence="Behavioral health crisis line | (888) 555-0111 | none | 24 hours a day",
                   heading="Provider Contacts — Phone and Fax Lines")
    assert not fit(Ask.of("What phone number do I call for the state's dental vendor?"), line).meets
    assert fit(Ask.of("what's the phone number for the behavioral health crisis line"), line).meets
    auth = Passage(sentence="Prior authorization, all programs | (555) 555-0180 | (555) 555-0182 | weekdays")
    assert fit(Ask.of("What's the fax number for prior auth?"), auth).meets  # "auth" abbreviates the row's word
    rental = Passage(sentence="Capped rental items, such as hospital beds (E0260) and wheelchairs (K0001), are rented.")
    assert not fit(Ask.of("What modifier goes on a claim for a replacement wheelchair battery?"), rental).meets
    # a limit asked of a kind of claim no sentence speaks of
    initial = Passage(sentence="A participating provider must submit an initial claim within 90 days of the date of service.")
    assert not fit(Ask.of("What is the timely filing limit for pharmacy claims?"), initial).meets
    assert fit(Ask.of("What is the timely filing limit for a claim?"), initial).meets
    # a coverage question is met only where the benefit asked about is spoken of
    scope = Passage(sentence="This chapter applies to professional and institutional claims for every program.")
    assert not fit(Ask.of("Is acupuncture covered for commercial members?"), scope).meets
    assert fit(Ask.of("Does the plan cover a CPAP?"), Passage(sentence="CPAP devices are rented for 13 months.")).meets
    # a code asked for is a code stated: "no copayment for well-child visits" states none
    visits = Passage(sentence="There is no copayment for well-child visits or immunizations.")
    assert Ask.of("which ICD-10 code do we bill for a well-child visit?").kind == "code"
    assert not fit(Ask.of("which ICD-10 code do we bill for a well-child visit?"), visits).meets


def test_the_ask_is_read_from_the_question_clause_not_from_its_context():
    # what the question asks is its first ask from where the question starts; what comes before
    # it, or a noun later in the clause, is context
    assert ask_kind("how much is the late fee if a claim comes in after the filing limit") == "amount"
    assert ask_kind("member is late on their premium, how long is the grace period?") == "duration"
    assert ask_kind("how much time do we have to file?") == "duration"


def test_a_question_naming_what_no_readable_source_mentions_is_not_answered():
    vocabulary = Vocabulary.of(["Claims must be filed within 90 days. Prior authorization (PA) is required.",
                                "Recredentialing happens every three years. Explanation of benefits."])
    assert unknown_terms("What is Aetna's timely filing limit?", vocabulary) == ["aetna"]
    assert unknown_terms("does the plan cover acupuncture?", vocabulary) == ["acupuncture"]
    # a name no source uses, however common the word, and the benefit of a passive coverage question
    assert unknown_terms("How long does a Molina member have to file a claim?", vocabulary) == ["molina"]
    assert unknown_terms("what is Kaiser's timely filing limit", vocabulary) == ["kaiser"]
    # a month or weekday is part of a date, not a name
    assert unknown_terms("DOS was Jan 2nd 2025, how long do we have to file the claim?", vocabulary) == []
    assert unknown_terms("Denial letter dated March 3rd and the visit was on a Monday", vocabulary) == []
    assert "massage" in unknown_terms("Are massage sessions covered?", vocabulary)
    assert unknown_terms("Is prior authorization covered by the filing limit?", vocabulary) == []
    # abbreviations, typos, everyday words and words run together are not unknown
    assert unknown_terms("hey whats the PA turnaround for recredentailing after the EOB", vocabulary) == []


def test_what_the_question_is_about_must_be_in_readable_words_however_plain():
    vocabulary = Vocabulary.of(["Out-of-Network Referrals. A referral is needed for an out-of-network specialist.",
                                "Appeals FAQ. Members may appeal within 60 days."])
    # plain words, but no readable source could be called this, so its content is not the caller's to get
    assert unknown_terms("What does the fitness referral procedure say?", vocabulary) == ["fitness"]
    # the same plain word is left to the other checks when it names no document
    assert unknown_terms("is a fitness class a covered benefit?", vocabulary) == []
    assert unknown_terms("What does the appeals FAQ say about the deadline?", vocabulary) == []
    # what a passive question's rule happens to, likewise
    assert unknown_terms("How quickly must member compliments be reported?", vocabulary) == ["compliments"]
    assert unknown_terms("How quickly must a member appeal be decided?", vocabulary) == []
    # and the benefit a coverage or price question asks about
    assert unknown_terms("does the plan pay for a gym membership?", vocabulary) == ["gym", "membership"]
    assert unknown_terms("does the plan cover an out-of-network specialist?", vocabulary) == []


def test_abbreviations_read_as_the_words_the_sources_spell():
    assert expand_abbreviations("standard PA time", ["Prior authorization is required."]) == \
        "standard PA (prior authorization) time"


def test_names_source_by_its_code_or_a_title_word_no_other_title_has():
    assert names_source("per bulletin HB-2031-07, what changed?", "Bulletin HB-2031-07 Filing Change",
                        ["Bulletin HB-2031-02 Appeals Change"])
    assert not names_source("What is the Medicaid filing limit?", "CHIP Bulletin: Filing Change",
                            ["Medicaid Claims: Filing"])
    # a title word nothing else in play uses names it too
    assert names_source("Is audio-only telehealth covered?", "Telehealth Visit Standards", ["Hospice Services"],
                        "Hospice care is covered for members with a terminal illness.")
    assert not names_source("Is audio-only telehealth covered?", "Telehealth Visit Standards", ["Hospice Services"],
                            "Telehealth visits are covered like office visits.")


# ---------------------------------------------------------------- the in-force rule, end to end

TODAY = date(2031, 3, 1)


@pytest.fixture(scope="module")
def in_force_db(make_db, embed_model, settings, tmp_path_factory):
    from policydesk.ingest import ingest_directory

    root = tmp_path_factory.mktemp("inforce")
    (root / "policies").mkdir()
    # Announced for next year and worded like the question, so it ranks first.
    _pdf(root / "policies/notice.pdf", "Filing Deadline Change Notice", [
        ("h1", "Claim Filing Deadline"),
        ("body", "Claim filing deadline: starting January 1, 2032 the claim filing deadline for claims is 45 days "
                 "from the date of service."),
    ])
    _pdf(root / "policies/claims.pdf", "Claim Filing Deadlines", [
        ("h1", "Submission Limits"),
        ("body", "Providers must submit a claim within 120 days of the date of service."),
    ])
    entries = [
        {"file": "policies/notice.pdf", "id": "FDN", "title": "Filing Deadline Change Notice", "type": "policy",
         "version": 1, "effective_from": "2032-01-01", "date_basis": "date_of_service", "access_level": "public",
         "sensitive": False, "owner": "Claims"},
        {"file": "policies/claims.pdf", "id": "CSUB", "title": "Claim Filing Deadlines", "type": "policy", "version": 1,
         "effective_from": "2030-01-01", "date_basis": "date_of_service", "access_level": "public",
         "sensitive": False, "owner": "Claims"},
    ]
    (root / "manifest.yaml").write_text(yaml.safe_dump({"sources": entries}, sort_keys=False))
    db = make_db()
    ingest_directory(db, root, embed_model, settings)
    with Session(db.owner) as s, s.begin():
        add_user(s, name="if_rep", role="rep", password="in-force-pw-rep")
    return db


@pytest.fixture(scope="module")
def in_force_pipeline(in_force_db, settings, embed_model):
    return build_pipeline(in_force_db, settings, embed_model=embed_model, today=TODAY)


def test_unrelated_not_in_force_policy_ranked_first_is_dropped_and_the_in_force_one_answers(in_force_pipeline):
    r = in_force_pipeline.ask(AskRequest("if_rep", "What is the claim filing deadline?",
                                         dates={"date_of_service": "2031-02-10"}))
    assert not r.refused, r.refusal_message
    assert "120 days" in r.answer and {c.doc_id for c in r.citations} == {"CSUB"}
    assert any(w.kind == "not_in_force" and "Filing Deadline Change Notice" in w.message for w in r.warnings)
    assert not any(cid.startswith("FDN") for cid in r.context_ids)


def test_a_question_about_the_not_in_force_policy_is_refused_for_it(in_force_pipeline):
    r = in_force_pipeline.ask(AskRequest("if_rep", "What does the filing deadline change notice say?",
                                         dates={"date_of_service": "2031-02-10"}))
    assert r.refused and r.refusal_code == "no_version_in_force"
    assert "Filing Deadline Change Notice" in r.refusal_message and "2032-01-01" in r.refusal_message
    assert r.citations == [] and r.answer == ""
