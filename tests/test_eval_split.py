"""The golden set's dev/test split (issue 16): the test file is frozen, the split is the
documented one, and the loader reads a split (from one file or several)."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from pathlib import Path

import pytest

from policydesk.evals.golden import BUCKETS, EVALS_DIR, GoldenError, load_golden, load_split
from policydesk.evals.splits import assign_splits

# Recorded in the commit that created evals/golden_test.yaml. Changing the file changes this
# hash and fails here: the test split is frozen; new questions go to dev, or to a new test file
# in its own commit with its own recorded hash.
FROZEN_TEST_SHA256 = "1ff37e42c2692513b910136e7ca031436eeadfe1bfa4bb0e3708986981891484"
ORIGINAL_ID = re.compile(r"^(easy|cross|conflict|stale|refuse)-\d\d$")


def test_the_frozen_test_split_has_not_changed():
    data = (EVALS_DIR / "golden_test.yaml").read_bytes()
    assert hashlib.sha256(data).hexdigest() == FROZEN_TEST_SHA256


def test_the_original_fifty_are_split_by_the_documented_rule_half_of_each_bucket_to_test():
    dev, test = load_split("dev"), load_split("test")
    original = [i for i in dev.items + test.items if ORIGINAL_ID.match(i.id)]
    assert len(original) == 50
    assert Counter(i.bucket for i in original) == {b: 10 for b in BUCKETS}
    expected = assign_splits((i.id, i.bucket) for i in original)
    assert {i.id: i.split for i in original} == expected
    assert Counter(i.bucket for i in original if i.split == "test") == {b: 5 for b in BUCKETS}


def test_test_holds_at_least_fifty_new_questions_and_shares_nothing_with_dev():
    dev, test = load_split("dev"), load_split("test")
    new = [i for i in test.items if "new" in i.tags]
    assert len(new) >= 50
    assert {i.bucket for i in new} == set(BUCKETS)
    for tag in ("typo", "two_in_one", "date_in_words", "what_changed", "not_in_force", "out_of_scope"):
        assert any(tag in i.tags for i in new), tag
    assert not {i.id for i in dev.items} & {i.id for i in test.items}
    # The same question may sit on both sides of an effective date (stale-01/02), never with the same dates.
    asked = lambda g: {(" ".join(i.question.lower().split()), tuple(sorted(i.date_inputs().items()))) for i in g.items}  # noqa: E731
    assert not asked(dev) & asked(test)
    assert dev.reference_date == test.reference_date


def test_what_changed_items_expect_both_versions_and_not_in_force_items_name_the_excluded_source():
    test = load_split("test")
    by_id = {i.id: i for i in test.items}
    assert by_id["n-stale-17"].expected_version == {"POL-TF": (1, 2)}
    assert by_id["n-stale-11"].excluded_sources == ("WIKI-TH",)
    assert by_id["n-refuse-01"].expect_refusal  # "What changed in the cafeteria menu?"


def _write(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    return path


ITEM = """  - id: {id}
    bucket: easy_lookup
    question: {q}
    role: rep
    expected_sections: ["POL-TF:v2:filing-limit"]
    expected_key_fact: "90 days"
    expected_version: {{POL-TF: 2}}
{extra}"""


def test_a_split_can_be_read_from_several_files_keeping_only_its_own_items(tmp_path):
    a = _write(tmp_path / "golden_test.yaml", "split: test\nreference_date: 2026-09-14\nitems:\n"
               + ITEM.format(id="a-1", q="first", extra=""))
    b = _write(tmp_path / "golden_products.yaml", "reference_date: 2026-09-14\nitems:\n"
               + ITEM.format(id="p-1", q="second", extra="    split: test\n")
               + ITEM.format(id="p-2", q="third", extra="    split: dev\n"))
    golden = load_golden([a, b], split="test")
    assert [i.id for i in golden.items] == ["a-1", "p-1"]
    assert [i.id for i in load_golden([b], split="dev").items] == ["p-2"]


def test_the_loader_refuses_ambiguous_or_conflicting_split_files(tmp_path):
    unlabelled = _write(tmp_path / "x.yaml", "items:\n" + ITEM.format(id="x-1", q="q", extra=""))
    with pytest.raises(GoldenError, match="without a split"):
        load_golden([unlabelled], split="test")
    other_day = _write(tmp_path / "y.yaml", "split: test\nreference_date: 2026-01-01\nitems:\n"
                       + ITEM.format(id="y-1", q="q", extra=""))
    same_day = _write(tmp_path / "z.yaml", "split: test\nreference_date: 2026-09-14\nitems:\n"
                      + ITEM.format(id="y-1", q="q", extra=""))
    with pytest.raises(GoldenError, match="reference_date"):
        load_golden([other_day, same_day], split="test")
    with pytest.raises(GoldenError, match="split 'train'"):
        load_split("train")
    bad = _write(tmp_path / "w.yaml", "items:\n" + ITEM.format(id="w-1", q="q", extra="    split: holdout\n"))
    with pytest.raises(GoldenError, match="holdout"):
        load_golden(bad)


def test_eval_refuses_an_unknown_split_before_touching_a_database():
    from typer.testing import CliRunner

    from policydesk.cli import app

    result = CliRunner().invoke(app, ["eval", "--split", "train"])
    assert result.exit_code == 2
    assert "--split must be one of dev, test" in result.output


def test_a_test_split_run_recommends_no_threshold_and_says_what_the_stored_one_does():
    from policydesk.evals.calibrate import Calibration
    from policydesk.evals.report import calibration_lines

    cal = Calibration(current=0.35, embedding_model="all-MiniLM-L6-v2", split="test",
                      answerable={"a": 0.30, "b": 0.70}, out_of_scope={"o": 0.10})
    text = "\n".join(calibration_lines(cal.to_json()))
    assert "not computed on the test split" in text and "Recommended from these items" not in text
    assert "abstains on answerable: a; on out-of-scope: o" in text
    uncalibrated = "\n".join(calibration_lines(Calibration(current=None, split="dev").to_json()))
    assert "NOT CALIBRATED" in uncalibrated
