"""What an answer shows is about what it cites: versions applied, recent and scheduled changes and
conflicts of sources that were in context but are not cited are left off the answer (a formulary
answer must not warn that timely filing changed)."""

from __future__ import annotations

import uuid

from policydesk.contract.answer import AnswerWarning, Citation, Claim
from policydesk.contract.answer import Abstained, Answered
from policydesk.postprocessors import ContextReport
from policydesk.contract.steps import Context, Steps


def _citation(doc_id: str) -> Citation:
    return Citation(chunk_id=f"{doc_id}:v2:limits", doc_id=doc_id, title=doc_id, section="Limits",
                    source_type="policy", version=2, effective_from="2026-01-01", effective_to=None,
                    text_sha256="0" * 64, text="...")


def _report() -> ContextReport:
    report = ContextReport()
    report.applied = [{"doc_id": "POL-RX"}, {"doc_id": "POL-TF"}]
    report.warnings = [
        AnswerWarning(kind="recent_change", message="Timely filing changed.", doc_ids=["POL-TF"]),
        AnswerWarning(kind="scheduled_change", message="Formulary changes soon.", doc_ids=["POL-RX"]),
        AnswerWarning(kind="conflict", message="A note says 180 days; timely filing says 90.",
                      doc_ids=["CN-01", "POL-TF"]),
    ]
    report.conflicts = [{"policy_doc_id": "POL-TF", "note_chunk_id": "CN-01:v1:note", "message": "..."}]
    return report


def _result(outcome):
    report = _report()
    steps = Steps(question="q", role="rep", context=Context([], report), warnings=list(report.warnings))
    return steps.result("ana", outcome, uuid.uuid4(), [])


def test_an_answer_shows_versions_changes_and_conflicts_of_the_sources_it_cites_only():
    rx = Answered("30 days supply.", [Claim(text="30 days supply.", citations=["POL-RX:v2:limits"])],
                  [_citation("POL-RX")])
    data = _result(rx).to_json()
    assert [v["doc_id"] for v in data["versions_applied"]] == ["POL-RX"]
    assert [w["kind"] for w in data["warnings"]] == ["scheduled_change"]
    assert data["conflicts"] == []


def test_an_answer_citing_the_changed_policy_keeps_its_warnings_and_conflicts():
    tf = Answered("90 days.", [Claim(text="90 days.", citations=["POL-TF:v2:limits"])], [_citation("POL-TF")])
    data = _result(tf).to_json()
    assert [v["doc_id"] for v in data["versions_applied"]] == ["POL-TF"]
    assert [w["kind"] for w in data["warnings"]] == ["recent_change", "conflict"]
    assert len(data["conflicts"]) == 1


def test_an_abstention_shows_no_source_warnings():
    data = _result(Abstained("not_answered", "The sources you may read don't say this.")).to_json()
    assert data["warnings"] == []
