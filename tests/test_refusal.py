"""Early refusal screen: labelled cases, confusion matrix, no existence leak."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

from policydesk.access import (
    ACCESS_LEVELS,
    ROLES,
    RESTRICTED_TOPICS,
    UnknownRoleError,
    clearance_for,
    topic_denied,
)
from policydesk.refusal import OUT_OF_SCOPE_MESSAGE, RefusalReason, screen_question

ROOT = Path(__file__).resolve().parents[1]


def _load_matrix_script():
    spec = importlib.util.spec_from_file_location("refusal_matrix", ROOT / "scripts" / "refusal_matrix.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


matrix_script = _load_matrix_script()
CASES = matrix_script.load_cases()
SIU_QUESTION = "What is the SIU referral threshold for case scoring?"


def test_labelled_set_has_enough_cases():
    counts = Counter(c["expected"] for c in CASES)
    assert len(CASES) >= 60
    assert counts["pass"] >= 25
    for kind in ("member_identifier", "claim_action", "out_of_scope"):
        assert counts[kind] >= 5, kind
    assert {c["role"] for c in CASES} == set(ROLES)


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{i:03d}-{c['role']}-{c['expected']}" for i, c in enumerate(CASES)]
)
def test_screen_question_labelled_case(case):
    refusal = screen_question(case["question"], clearance_for(case["role"]))
    predicted = "pass" if refusal is None else refusal.reason.value
    assert predicted == case["expected"], case["question"]


def test_confusion_matrix_refuse_precision_and_recall_are_one(capsys):
    matrix = matrix_script.confusion_matrix(CASES)
    with capsys.disabled():
        print("\n" + matrix_script.format_matrix(matrix))
    precision, recall = matrix_script.refuse_precision_recall(matrix)
    assert precision == 1.0
    assert recall == 1.0


def test_topic_gate_refusal_message_identical_to_out_of_scope():
    gated = screen_question(SIU_QUESTION, clearance_for("rep"))
    unrelated = screen_question("What's the weather forecast for tomorrow?", clearance_for("rep"))
    assert gated is not None and unrelated is not None
    assert gated.reason is unrelated.reason is RefusalReason.out_of_scope
    assert gated.message.encode("utf-8") == unrelated.message.encode("utf-8")
    assert gated.message == OUT_OF_SCOPE_MESSAGE
    assert "SIU" not in gated.message and "restricted" not in gated.message.lower()


def test_topic_gate_siu_by_role():
    assert screen_question(SIU_QUESTION, clearance_for("rep")).reason is RefusalReason.out_of_scope
    assert screen_question(SIU_QUESTION, clearance_for("supervisor")) is None
    assert screen_question(SIU_QUESTION, clearance_for("compliance")) is None
    assert topic_denied(clearance_for("rep"), SIU_QUESTION) == "fraud_investigation"
    assert topic_denied(clearance_for("supervisor"), SIU_QUESTION) is None


def test_topic_gate_compliance_topics_block_supervisor():
    question = "What is the dispute review procedure?"
    assert topic_denied(clearance_for("supervisor"), question) == "call_audit"
    assert topic_denied(clearance_for("compliance"), question) is None


def test_every_topic_needs_a_known_level():
    for topic, (level, patterns) in RESTRICTED_TOPICS.items():
        assert level in ACCESS_LEVELS, topic
        assert patterns, topic


def test_screen_question_unknown_role_raises():
    # The clearance is resolved before screening: an unknown role fails there, loudly.
    with pytest.raises(UnknownRoleError, match="Unknown role 'admin'"):
        screen_question("What is the timely filing limit?", clearance_for("admin"))


def test_clearance_for_unknown_role_raises_value_error():
    with pytest.raises(ValueError, match="expected one of: rep, supervisor, compliance"):
        clearance_for("member")


def test_clearance_permits_by_role():
    rep, supervisor, compliance = (clearance_for(r) for r in ROLES)
    assert rep.permits("internal", sensitive=False)
    assert not rep.permits("internal", sensitive=True)
    assert not rep.permits("restricted", sensitive=False)
    assert supervisor.permits("restricted", sensitive=True)
    assert not supervisor.permits("compliance", sensitive=False)
    assert compliance.permits("compliance", sensitive=True)
    assert compliance.levels == ACCESS_LEVELS


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_screen_question_empty(question):
    assert screen_question(question, clearance_for("rep")).reason is RefusalReason.empty_question


def test_screen_question_too_long():
    question = "What is the timely filing limit? " * 40
    refusal = screen_question(question, clearance_for("rep"))
    assert refusal.reason is RefusalReason.question_too_long
    assert "1000 characters" in refusal.message
    assert screen_question(question, clearance_for("rep"), max_chars=5000) is None


def test_too_long_checked_before_identifiers():
    question = "Member CVM12345678 " + "x" * 1000
    assert screen_question(question, clearance_for("rep")).reason is RefusalReason.question_too_long
