"""The eval harness on a CI slice of the golden set: full system vs naive baseline, and leaks.

Ten hand-labelled items across the buckets, all from the dev split (issue 16: nothing here asserts
on the frozen test split), against the real demo database (no mocks). The full
system must beat the naive baseline where the design says it should (stale policy versions,
must-refuse questions), and no role may see a chunk above its clearance anywhere.
"""

from __future__ import annotations

import json

import pytest

from policydesk.accounts.access import ROLES
from policydesk.evals.golden import BUCKETS, SPLITS, check_against_db, load_split
from policydesk.evals.leaks import ChunkCatalog, LeakMatrix

CI_SLICE = [
    "easy-01", "cross-05", "conflict-04", "conflict-09",
    "stale-03", "stale-04", "stale-10",
    "refuse-01", "refuse-03", "refuse-06",
]


@pytest.fixture(scope="module")
def ci_run(demo_db, settings, embed_model):
    from policydesk.evals.harness import run_eval

    golden = load_split("dev").only(CI_SLICE)
    return run_eval(demo_db, settings, golden, embed_model=embed_model, llm=None, k=8,
                    progress=False, do_calibrate=False)


@pytest.mark.parametrize("split", SPLITS)
def test_every_golden_label_exists_in_the_index(demo_db, split):
    golden = load_split(split)
    assert {i.bucket for i in golden.items} == set(BUCKETS)
    check_against_db(golden, demo_db)  # raises on a chunk id, version or excluded source the corpus doesn't hold


def test_ci_slice_spans_buckets():
    items = load_split("dev").only(CI_SLICE).items
    buckets = [i.bucket for i in items]
    assert set(buckets) == set(BUCKETS)
    assert buckets.count("stale_policy") >= 2 and buckets.count("must_refuse") >= 2


def test_full_system_beats_baseline_on_stale_policy_correct_and_cited(ci_run):
    full = ci_run.summary["buckets"]["stale_policy"]["full"]["correct_and_cited"]
    base = ci_run.summary["buckets"]["stale_policy"]["baseline"]["correct_and_cited"]
    assert full > base, (full, base)


def test_full_system_beats_baseline_on_must_refuse_recall(ci_run):
    full = ci_run.summary["buckets"]["must_refuse"]["full"]["refusal_recall"]
    base = ci_run.summary["buckets"]["must_refuse"]["baseline"]["refusal_recall"]
    assert full > base, (full, base)
    assert full == 1.0


def test_no_leaks_for_any_role_in_retrieval_prompts_or_answers(ci_run):
    matrix = ci_run.leaks.to_json()
    assert {r: matrix[r]["questions"] for r in ROLES} == {r: len(CI_SLICE) for r in ROLES}
    assert ci_run.leak_total == 0, matrix
    assert ci_run.passed


def test_leak_matrix_positive_control_is_flagged(ci_run):
    # Issue 12: the same checker over a deliberately unscoped retriever must report leaks, or the
    # zero above could come from a blind checker.
    control = ci_run.leak_control.cells["rep"]
    assert control.questions == len(CI_SLICE)
    assert control.retrieval > 0 and control.prompt > 0
    assert ci_run.leak_check_proven


def test_a_blind_leak_check_fails_the_run(ci_run):
    import dataclasses

    blind = dataclasses.replace(ci_run, leak_control=LeakMatrix())
    assert blind.leak_total == 0 and not blind.leak_check_proven and not blind.passed


def test_eval_requests_are_traced_with_kind_eval(ci_run, demo_db):
    from sqlalchemy import text

    trace_ids = [r.trace_id for r in ci_run.records if r.system == "full"]
    with demo_db.owner.connect() as conn:
        kinds = conn.execute(text("SELECT DISTINCT kind FROM traces WHERE id::text = ANY(:ids)"),
                             {"ids": trace_ids}).scalars().all()
    assert kinds == ["eval"]


def test_offline_run_is_clean_and_says_grader_was_skipped(ci_run):
    assert ci_run.clean
    assert any("groundedness grader: skipped" in s for s in ci_run.skipped)


def test_leak_detector_finds_restricted_text_when_it_is_present(demo_db):
    # Pins that the zero above is not vacuous: the same detector flags a restricted chunk's id
    # and text, and a citation of it, when they do appear.
    catalog = ChunkCatalog(demo_db)
    siu = "POL-SIU:v1:case-scoring-threshold"
    matrix = LeakMatrix()
    found = matrix.record(catalog, "rep", "probe", [siu], [catalog.chunks[siu].text], "", [siu])
    assert found == {"retrieval": [siu], "prompt": [siu], "answer": [siu]}
    assert matrix.cells["rep"].total == 3
    ok = LeakMatrix().record(catalog, "supervisor", "probe", [siu], [catalog.chunks[siu].text], "", [siu])
    assert ok == {"retrieval": [], "prompt": [], "answer": []}


def test_results_folder_has_items_summary_and_self_contained_report(ci_run, tmp_path):
    from policydesk.evals.harness import write_results

    out = write_results(ci_run, tmp_path)
    lines = (out / "items.jsonl").read_text().splitlines()
    assert len(lines) == 3 * len(CI_SLICE)  # full, baseline and the oracle row
    assert {json.loads(line)["system"] for line in lines} == {"full", "baseline", "oracle"}
    assert "Leak matrix" in (out / "summary.md").read_text()
    report = (out / "report.html").read_text()
    assert "<svg" in report and "<script" not in report and "http" not in report.replace("http://www.w3.org/2000/svg", "")
