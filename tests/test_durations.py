"""Durations as people write them (issue 16 item 4), and conflicts compared only rule by rule."""

from __future__ import annotations

import pytest

from policydesk.postprocessors import ConflictFlagger
from policydesk.versions.durations import compare, durations, parse_durations
from tests.factories import chunk
from tests.findings import Remembering


def one(text: str):
    (d,) = parse_durations(text)
    return d


@pytest.mark.parametrize("text, expected", [
    ("within ninety (90) days of the date of service", "90 days"),
    ("within 90 (ninety) days", "90 days"),
    ("one hundred eighty days", "180 days"),
    ("twenty-one calendar days", "21 calendar days"),
    ("10 working days", "10 business days"),
    ("no later than 48 hrs", "48 hours"),
    ("a 90-day filing limit", "90 days"),
    ("valid for one year", "1 year"),
    ("within a year", "1 year"),
    ("within 6 months", "6 months"),
    ("two weeks", "2 weeks"),
])
def test_durations_are_read_as_written(text, expected):
    assert str(one(text)) == expected


@pytest.mark.parametrize("a, b, expected", [
    ("90 days", "ninety (90) days", "same"),
    ("12 months", "one year", "same"),
    ("2 days", "48 hours", "same"),
    ("1 week", "7 calendar days", "same"),
    ("90 days", "6 months", "different"),    # 6 months is 181 to 184 days
    ("90 days", "one year", "different"),
    ("90 days", "3 months", "not_comparable"),  # 89 to 92 days: can't be told
    ("365 days", "one year", "not_comparable"),  # leap years
    ("10 business days", "14 calendar days", "not_comparable"),
    ("10 business days", "10 working days", "same"),
    ("180 days", "90 days", "different"),
])
def test_durations_compare_where_exact_and_say_not_comparable_otherwise(a, b, expected):
    assert compare(one(a), one(b)) == expected
    assert compare(one(b), one(a)) == expected


def test_an_elapsed_time_told_as_a_story_is_not_a_rule():
    assert [d.narrative for d in parse_durations(
        "The admission happened two days earlier; the member called 3 weeks ago. Notify within 24 hours.")] \
        == [True, True, False]
    assert durations("The request was received eleven days earlier.") == {}


FILING_V1 = "An initial claim must be received within 180 days of the date of service."


def _policy(text=FILING_V1, section="Filing Limit", version=1):
    return chunk(f"POL-X:v{version}:filing-limit", text, title="Claim Filing", section=section,
                 effective_from="2024-01-01")


def _note(text: str, source_type="call_note", title="Call about a late claim"):
    n = chunk("NOTE-1:v1:note", text, title=title, section=f"Note - {title}", source_type=source_type,
              effective_from="2024-02-01")
    n.node.metadata["related_policies"] = ["POL-X"]
    return n


def _flag(*nodes):
    f = Remembering(ConflictFlagger())
    kept = f.postprocess_nodes(list(nodes))
    return [n.node.node_id for n in kept], f.report


@pytest.mark.parametrize("note_text, stated", [
    # Issue 16 probes: conflict detection missed these.
    ("The rep told the office an initial claim has to be received within ninety (90) days.", "90 days"),
    ("The office believed initial claims must be received within 6 months of the visit.", "6 months"),
    ("The caller said an initial claim can be received up to one year after the visit.", "1 year"),
])
def test_note_stating_the_filing_limit_in_other_words_is_flagged(note_text, stated):
    ids, report = _flag(_policy(), _note(note_text))
    assert ids == ["POL-X:v1:filing-limit"]
    (c,) = report.conflicts
    assert c["note_values"] == [stated] and c["policy_values"] == ["180 days"]
    assert report.warnings[0].message == (
        f"The call note 'Call about a late claim' says {stated}, but Claim Filing version 1 says 180 days; "
        "the policy wins.")


@pytest.mark.parametrize("note_text", [
    "An initial claim must be received within one hundred eighty (180) days.",
    "An initial claim must be received within 180 calendar days.",
    # days against months can't be told apart at this length: not a contradiction
    "An initial claim must be received within 6 months, the office said.",
])
def test_note_agreeing_with_the_policy_in_other_words_is_kept(note_text):
    policy = _policy("An initial claim must be received within 183 days of the date of service."
                     if "6 months" in note_text else FILING_V1)
    ids, report = _flag(policy, _note(note_text))
    assert report.conflicts == [] and len(ids) == 2


def test_unrelated_two_days_in_a_note_is_not_compared():
    # Issue 16 probe: an unrelated "2 days" was flagged against the filing limit.
    note = _note("The office mailed the claim 2 days after the visit. The admission happened two days "
                 "earlier. Supervisors return escalated calls within 2 business days.")
    ids, report = _flag(_policy(), note)
    assert report.conflicts == [] and len(ids) == 2


def test_value_of_another_kind_of_rule_in_the_same_unit_is_not_compared():
    # Same unit, different rule: the note's escalation window is not the policy's decision time.
    policy = chunk("POL-Y:v1:decision-timeframes", "Standard requests are decided within 14 calendar days of receipt.",
                   title="Authorizations", section="Decision Timeframes", effective_from="2024-01-01")
    note = chunk("NOTE-2:v1:note", "Because the member had called 3 or more times about the same issue within "
                 "30 calendar days, the representative escalated the call to a supervisor.",
                 title="Repeated calls", section="Note - Repeated calls", source_type="call_note")
    note.node.metadata["related_policies"] = ["POL-Y"]
    ids, report = _flag(policy, note)
    assert report.conflicts == [] and len(ids) == 2
    # The same note stating the decision time differently is flagged.
    note.node.set_content("The rep said a standard request is decided within 30 calendar days of receipt.")
    ids, report = _flag(policy, note)
    assert [c["note_values"] for c in report.conflicts] == [["30 calendar days"]]


def test_the_rule_kind_comes_from_the_section_heading_when_the_sentence_is_bare():
    policy = _policy("Ninety (90) days from the date of service.", section="Filing Limit")
    wiki = chunk("WIKI-1:v1:filing-limit", "It is 180 days.", title="Desk Tips", section="Filing limit",
                 source_type="wiki")
    wiki.node.metadata["related_policies"] = ["POL-X"]
    other = chunk("WIKI-1:v1:refunds", "It is 180 days.", title="Desk Tips", section="Refund requests",
                  source_type="wiki")
    other.node.metadata["related_policies"] = ["POL-X"]
    ids, report = _flag(policy, wiki, other)
    assert [c["note_chunk_id"] for c in report.conflicts] == ["WIKI-1:v1:filing-limit"]
    assert ids == ["POL-X:v1:filing-limit", "WIKI-1:v1:refunds"]
