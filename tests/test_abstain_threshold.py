"""The abstain threshold is per embedding model, and the pipeline uses the active model's (issue 16)."""

from __future__ import annotations

from datetime import date

import pytest
from sqlalchemy.orm import Session

from policydesk.contract.answer import AskRequest
from policydesk.config import OFFLINE_EMBEDDING_MODEL, OFFLINE_EMBEDDING_MODEL_INT8, Settings, UncalibratedThreshold
from policydesk.pipeline import AskPipeline, build_pipeline
from policydesk.accounts.users import add_user

TODAY = date(2026, 9, 14)
QUESTION = "How long does the plan take to decide a standard formulary exception request?"


def _settings(**kw) -> Settings:
    return Settings(_env_file=None, ENVIRONMENT="test", **kw)


def test_the_offline_model_has_a_calibrated_threshold_and_gemini_is_marked_uncalibrated():
    offline = _settings()
    # The default engine (fp32 ONNX, torch's vectors) and the opt-in int8 one are two models with a
    # value each, both from dev (config/settings.py).
    assert offline.embedding_model_name == OFFLINE_EMBEDDING_MODEL
    assert offline.abstain_threshold() == 0.31
    int8 = _settings(EMBED_ENGINE="onnx-int8")
    assert int8.embedding_model_name == OFFLINE_EMBEDDING_MODEL_INT8 and int8.abstain_threshold() == 0.30
    gemini = _settings(GEMINI_API_KEY="k")
    assert gemini.embedding_model_name == "gemini-embedding-001"
    with pytest.raises(UncalibratedThreshold, match="gemini-embedding-001.*--split dev"):
        gemini.abstain_threshold()


def test_a_calibrated_gemini_value_or_an_explicit_override_is_used():
    assert _settings(GEMINI_API_KEY="k", ABSTAIN_THRESHOLDS={"gemini-embedding-001": 0.6}).abstain_threshold() == 0.6
    assert _settings(GEMINI_API_KEY="k", ABSTAIN_MIN_SIMILARITY=0.42).abstain_threshold() == 0.42
    assert _settings(ABSTAIN_MIN_SIMILARITY=0.2).abstain_threshold() == 0.2


def test_the_pipeline_refuses_to_start_with_an_uncalibrated_embedding_model(embed_model):
    # Before any database, model or network call: the first thing the pipeline checks.
    with pytest.raises(UncalibratedThreshold):
        AskPipeline(None, _settings(GEMINI_API_KEY="k"), embed_model, None)


@pytest.fixture(scope="module")
def thr_user(demo_db):
    with Session(demo_db.owner) as s, s.begin():
        add_user(s, name="thr_rep", role="rep", password="threshold-pw-rep")
    return "thr_rep"


def test_the_pipeline_abstains_by_the_active_models_threshold(demo_db, settings, embed_model, thr_user):
    def ask(thresholds: dict) -> object:
        s = settings.model_copy(update={"ABSTAIN_THRESHOLDS": thresholds, "ABSTAIN_MIN_SIMILARITY": None})
        p = build_pipeline(demo_db, s, embed_model=embed_model, llm=None, today=TODAY)
        return p.ask(AskRequest(thr_user, QUESTION))

    active = settings.embedding_model_name
    answered = ask({active: 0.35, "gemini-embedding-001": 0.99})
    assert not answered.abstained and "72 hours" in answered.answer
    strict = ask({active: 0.99, "gemini-embedding-001": 0.35})
    # too weak a match: not answered before any model call (the reason is the caller-facing one)
    assert strict.abstained and strict.abstain_code == "not_answered" and strict.prompts == []


def test_calibration_recommends_from_dev_and_never_from_test(demo_db, settings, embed_model):
    from policydesk.evals.calibrate import calibrate
    from policydesk.evals.golden import load_split

    items = load_split("dev").only(["easy-01", "stale-04", "refuse-09", "d-refuse-02"])
    dev = calibrate(demo_db, settings, items, embed_model, split="dev")
    assert dev.embedding_model == settings.embedding_model_name == OFFLINE_EMBEDDING_MODEL and dev.current == 0.31
    assert set(dev.answerable) == {"easy-01", "stale-04"} and set(dev.out_of_scope) == {"refuse-09", "d-refuse-02"}
    assert dev.recommended is not None
    assert max(dev.out_of_scope.values()) < dev.recommended < min(dev.answerable.values())
    assert calibrate(demo_db, settings, items, embed_model, split="test").recommended is None
    # A plan question no source answers counts with the out-of-scope ones; a refusal of another kind does not.
    others = load_split("dev").only(["easy-01", "dv-refuse-13", "refuse-03"])
    cal = calibrate(demo_db, settings, others, embed_model, split="dev")
    assert set(cal.out_of_scope) == {"dv-refuse-13"} and set(cal.refuse) == {"dv-refuse-13", "refuse-03"}


# The recommendation rule on hand-made similarity lists (policydesk/evals/calibrate.py docstring).

def test_with_a_gap_the_rule_takes_its_midpoint_rounded_down_to_a_twentieth():
    from policydesk.evals.calibrate import recommend_threshold

    # The first dev split: weakest answerable 0.650, strongest out-of-scope 0.369 -> (0.369+0.650)/2 = 0.51.
    assert recommend_threshold([0.65, 0.80, 0.90], [0.063, 0.369]) == 0.50
    # A narrow gap: never above the weakest answerable item minus the safety margin.
    assert recommend_threshold([0.41, 0.90], [0.40]) == 0.39
    assert recommend_threshold([], [0.2]) is None


def test_with_overlapping_ranges_the_rule_abstains_on_at_most_two_percent_of_answerable_items():
    from policydesk.evals.calibrate import Calibration, recommend_threshold

    strong = [0.60 + 0.003 * i for i in range(98)]
    answerable = {f"a{i}": s for i, s in enumerate([0.20, 0.30] + strong)}  # 100 items: 2 may abstain
    unanswerable = {"o1": 0.25, "o2": 0.45, "o3": 0.62}  # o3 outscores almost every answerable item
    value = recommend_threshold(answerable.values(), unanswerable.values())
    assert value == 0.58  # the 3rd weakest (0.60) minus the 0.02 margin
    cal = Calibration(answerable=answerable, out_of_scope=unanswerable, recommended=value)
    assert cal.abstains(value, answerable) == ["a0", "a1"]
    assert cal.abstains(value, unanswerable) == ["o1", "o2"]


def test_the_two_percent_budget_is_counted_down_to_whole_items():
    from policydesk.evals.calibrate import recommend_threshold

    weak_then_strong = lambda n: [0.30] + [0.70] * (n - 1)  # noqa: E731
    # 49 answerable items: 2% is 0.98 of an item, so none may abstain; 50: one may.
    assert recommend_threshold(weak_then_strong(49), [0.50]) == 0.28
    assert recommend_threshold(weak_then_strong(50), [0.50]) == 0.68


def test_the_recommended_value_never_abstains_on_more_than_the_budget_whatever_the_lists():
    import random

    from policydesk.evals.calibrate import MAX_ANSWERABLE_ABSTAIN_SHARE, recommend_threshold

    rng = random.Random(16)
    for _ in range(300):
        answerable = [rng.uniform(0.1, 0.95) for _ in range(rng.randint(1, 150))]
        unanswerable = [rng.uniform(0.0, 0.8) for _ in range(rng.randint(0, 30))]
        value = recommend_threshold(answerable, unanswerable)
        below = sum(s < value for s in answerable)
        assert below <= int(MAX_ANSWERABLE_ABSTAIN_SHARE * len(answerable))
        if unanswerable and max(unanswerable) < min(answerable):
            assert below == 0 and value > max(unanswerable) - 0.05


def test_the_dev_summary_says_which_branch_of_the_rule_gave_the_value():
    from policydesk.evals.calibrate import Calibration, recommend_threshold
    from policydesk.evals.report import calibration_lines

    answerable, unanswerable = {"a": 0.40, "b": 0.70}, {"o": 0.50}
    cal = Calibration(current=0.35, split="dev", answerable=answerable, out_of_scope=unanswerable,
                      recommended=recommend_threshold(answerable.values(), unanswerable.values()))
    text = "\n".join(calibration_lines(cal.to_json()))
    assert "Recommended from these items: 0.38 (ranges overlap" in text
    cal.out_of_scope = {"o": 0.10}
    cal.recommended = recommend_threshold(answerable.values(), cal.out_of_scope.values())
    assert "Recommended from these items: 0.25 (gap between the ranges" in "\n".join(calibration_lines(cal.to_json()))
