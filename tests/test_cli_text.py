"""`policydesk ask` without --json: the terminal rendering of the answer contract (local or --server)."""

from __future__ import annotations

from policydesk.contract.answer import AnswerWarning, AskResult, Citation
from policydesk.client import render_answer
from policydesk.contract.answer import Abstained, Answered, Refused


def _citation(version: int, effective_from: str, last_day: str | None) -> Citation:
    return Citation(chunk_id=f"POL-TF:v{version}:filing-limit", doc_id="POL-TF", title="Timely Filing of Claims",
                    section="Filing Limit", source_type="policy", version=version, effective_from=effective_from,
                    effective_to=last_day, text_sha256="0" * 64, text="...")


def test_answer_lists_each_citation_with_its_window_and_the_warnings():
    cited = [_citation(1, "2024-01-01", "2025-12-31"), _citation(2, "2026-01-01", None)]
    result = AskResult(question="q", user_name="rep", role="rep", outcome=Answered("90 days.", [], cited),
                       warnings=[AnswerWarning(kind="recent_change", message="It changed.")])
    assert render_answer(result.to_json()).splitlines() == [
        "90 days.",
        "",
        "  [POL-TF:v1:filing-limit] Timely Filing of Claims - Filing Limit - version 1 - in force 2024-01-01 -> 2025-12-31",
        "  [POL-TF:v2:filing-limit] Timely Filing of Claims - Filing Limit - version 2 - in force 2026-01-01 -> open",
        "  ! recent_change: It changed.",
    ]


def test_refusals_and_non_answers_say_why():
    refused = AskResult(question="q", user_name="rep", role="rep",
                        outcome=Refused("claim_action", "PolicyDesk explains policy."))
    assert render_answer(refused.to_json()) == "REFUSED: PolicyDesk explains policy."
    none = AskResult(question="q", user_name="rep", role="rep",
                     outcome=Abstained("not_answered", "The sources do not contain the answer."))
    assert render_answer(none.to_json()) == "NO ANSWER: The sources do not contain the answer."
