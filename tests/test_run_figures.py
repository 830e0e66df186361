"""scripts/run_figures.py: a run's figures over a subset of its items, and other thresholds' abstentions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _record(item_id: str, system: str, *, expect_refusal: bool, declined: bool, correct: bool = False) -> dict:
    return {"item_id": item_id, "system": system, "expect_refusal": expect_refusal, "declined": declined,
            "refused": False, "abstained": declined, "correct_and_cited": correct, "key_fact": correct}


def test_figures_cover_only_the_chosen_items_and_count_other_thresholds(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    golden = tmp_path / "subset.yaml"
    golden.write_text("items:\n" + "".join(
        f"  - {{id: {i}, bucket: easy_lookup, question: q{i}, role: rep, expected_sections: [X:v1:s],"
        f" expected_key_fact: f, expected_version: {{X: 1}}}}\n" for i in ("a1", "a2")), encoding="utf-8")
    records = [_record("a1", "full", expect_refusal=False, declined=False, correct=True),
               _record("a2", "full", expect_refusal=False, declined=False, correct=False),
               _record("a3", "full", expect_refusal=False, declined=False, correct=False)]
    (run / "items.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    (run / "run.json").write_text(json.dumps({"split": None, "abstain_threshold": 0.31, "calibration": {
        "current": 0.31, "answerable": {"a1": 0.30, "a2": 0.70, "a3": 0.20}, "out_of_scope": {}}}), encoding="utf-8")
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_figures.py"), str(run), "--golden", str(golden),
                          "--threshold", "0.75"], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert "full: 2 items; correct and cited 50.0%" in out  # a3 is not in the subset
    assert "threshold 0.31: abstains on 1 of 2 answerable" in out
    assert "threshold 0.75: abstains on 2 of 2 answerable" in out
