"""The answer contract built from a step outcome: what `ask --json`, the API and the trace read."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from policydesk.contract.answer import AnswerWarning, AskResult, Citation, Claim
from policydesk.contract.answer import Abstained, Answered, Compared, Failed, Refused
from policydesk.contract.steps import Steps


def _citation(chunk_id: str) -> Citation:
    return Citation(chunk_id=chunk_id, doc_id="DOC", title="A policy", section="Limits", source_type="policy",
                    version=2, effective_from="2026-01-01", effective_to=None, text_sha256="0" * 64, text="...")


def _warning(kind: str) -> AnswerWarning:
    return AnswerWarning(kind=kind, message=f"{kind} said")


def _result(outcome, **steps) -> AskResult:
    return Steps(question="q", role="rep", **steps).result("ana", outcome, uuid.uuid4(), [])


FLAGS = ("answerable", "refused", "abstained", "error")


def test_a_refusal_names_its_code_and_shows_its_message_and_states_nothing():
    data = _result(Refused("claim_action", "PolicyDesk explains policy.")).to_json()
    assert {k: data[k] for k in FLAGS} == {"answerable": False, "refused": True, "abstained": False, "error": None}
    assert data["refusal_code"] == "claim_action" and data["refusal_reason"] == "PolicyDesk explains policy."
    assert data["answer"] == "" and data["claims"] == [] and data["citations"] == []
    assert data["abstain_reason"] is None and data["abstain_code"] is None


def test_an_answer_carries_its_claims_citations_and_its_own_warnings_after_the_steps_warnings():
    claim = Claim(text="90 days.", citations=["c1"])
    result = _result(Answered("90 days.", [claim], [_citation("c1")], extractive=True,
                              warnings=[_warning("extractive")]), warnings=[_warning("redacted")])
    data = result.to_json()
    assert {k: data[k] for k in FLAGS} == {"answerable": True, "refused": False, "abstained": False, "error": None}
    assert data["answer"] == "90 days." and [c["chunk_id"] for c in data["citations"]] == ["c1"]
    assert "text" not in data["citations"][0]  # cited text is re-read under the viewer's clearance, never sent
    assert [w["kind"] for w in data["warnings"]] == ["redacted", "extractive"] and result.extractive
    assert data["refusal_code"] is None and data["abstain_code"] is None


def test_not_answered_keeps_only_the_warnings_about_the_request():
    steps_warnings = [_warning(k) for k in ("redacted", "recent_change", "date_from_question", "conflict", "degraded")]
    data = _result(Abstained("not_answered", "The sources you may read don't say."), warnings=steps_warnings).to_json()
    assert [w["kind"] for w in data["warnings"]] == ["redacted", "date_from_question", "degraded"]
    assert data["abstained"] and data["abstain_code"] == "not_answered" and not data["answerable"]


def test_another_abstention_keeps_every_warning_and_adds_its_own():
    data = _result(Abstained("line_of_business", "Which product?", warnings=[_warning("line_of_business")]),
                   warnings=[_warning("recent_change")]).to_json()
    assert [w["kind"] for w in data["warnings"]] == ["recent_change", "line_of_business"]
    assert data["abstain_reason"] == "Which product?" and data["error"] is None


def test_a_comparison_rests_on_the_versions_it_cites_and_does_not_repeat_their_change_notes():
    cited = [_citation("v1"), _citation("v2")]
    result = _result(Compared("Version 1 said 180 days; version 2 says 90.", [], cited), model="extractive",
                     warnings=[_warning("recent_change"), _warning("scheduled_change"), _warning("redacted")])
    assert result.context_ids == ["v1", "v2"] and result.model == "computed-comparison" and result.answerable
    assert [w.kind for w in result.warnings] == ["redacted"]


def test_a_request_failed_for_its_input_is_an_error_not_an_abstention():
    result = _result(Failed("invalid_date", "date of service is not a date; use YYYY-MM-DD"))
    data = result.to_json()
    assert data["error"] == "date of service is not a date; use YYYY-MM-DD" and result.error_code == "invalid_date"
    assert not data["abstained"] and data["abstain_code"] is None and not data["answerable"]
    # The contract has always carried the error in abstain_reason too; clients read it there.
    assert data["abstain_reason"] == data["error"]


def test_a_failure_inside_the_pipeline_reads_as_an_error_and_an_abstention_coded_error():
    data = _result(Failed(Failed.INSIDE, "PolicyDesk could not answer: RuntimeError.")).to_json()
    assert data["error"] == "PolicyDesk could not answer: RuntimeError."
    assert data["abstained"] and data["abstain_code"] == "error" and data["abstain_reason"] == data["error"]
    assert data["answer"] == "" and not data["answerable"] and not data["refused"]


def test_a_request_failed_before_its_dates_were_read_reports_no_dates():
    assert _result(Failed("unknown_user", "unknown user 'x'")).dates == {}
    assert _result(Refused("claim_action", "No."), dates={}).dates == {"date_of_service": None,
                                                                       "denial_notice_date": None}


def test_the_result_cannot_be_changed_once_built():
    result = _result(Refused("claim_action", "No."))
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.answer = "approved"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.outcome = Answered("approved", [], [])  # type: ignore[misc]
