"""The labelled plan lines for ingest screening: the test split is frozen, every item sits on the side
its hash rule says, and the figures are what `scripts/plan_lines.py` prints (computed, not recorded)."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from policydesk.evals.plan_lines import DATA_DIR, evaluate_lines, format_lines_report, load_lines, split_of

REPO = DATA_DIR.parents[2]

# Recorded in the commit that created tests/data/plan_lines/test.yaml, before any tuning. Changing
# the file fails here: new lines go to dev (when their hash says dev) or to a new file.
FROZEN_TEST_SHA256 = "48a09b102fa8e4df8c86867a17727a6a7b0b908dc787462a2b30a9fa44c2b66a"


def test_the_frozen_test_split_has_not_changed():
    assert hashlib.sha256((DATA_DIR / "test.yaml").read_bytes()).hexdigest() == FROZEN_TEST_SHA256


def test_every_line_is_on_the_side_its_hash_says_and_none_is_on_both():
    dev, test = load_lines("dev"), load_lines("test")
    assert {split_of(line.text) for line in dev} == {"dev"}
    assert {split_of(line.text) for line in test} == {"test"}
    assert not {line.text for line in dev} & {line.text for line in test}


def test_both_splits_mix_plan_lines_with_member_identifiers_of_the_same_shapes():
    for split in ("dev", "test"):
        lines = load_lines(split)
        plan = {line.shape for line in lines if line.label == "plan"}
        member = {line.shape for line in lines if line.label == "member"}
        assert {"phone", "fax", "address", "npi_tin", "form", "regulation", "code", "bulletin"} <= plan, split
        assert {"phone", "member_id", "address"} <= member, split


def test_the_script_prints_the_figures_the_evaluation_computes():
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "plan_lines.py"), "--split", "dev", "--split", "test"],
                         capture_output=True, text=True, timeout=300, check=True)
    for split in ("dev", "test"):
        assert format_lines_report(evaluate_lines(load_lines(split)), f"== {split}") in out.stdout


def test_ingest_screening_refuses_member_lines_and_passes_the_plans_own_lines():
    # Targets (docs/ingest.md), not recorded results: the figures themselves are printed by the script.
    for split in ("dev", "test"):
        report = evaluate_lines(load_lines(split))
        assert report.recall >= 0.95, (split, [m.text for m in report.misses])
        assert report.plan_pass_rate >= 0.90, (split, [m.text for m in report.misses])
