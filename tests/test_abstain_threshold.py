"""The abstain threshold is per embedding model, and the pipeline uses the active model's (issue 16)."""

from __future__ import annotations

from datetime import date

import pytest
from sqlalchemy.orm import Session

from policydesk.answer import AskRequest
from policydesk.config import OFFLINE_EMBEDDING_MODEL, Settings, UncalibratedThreshold
from policydesk.pipeline import AskPipeline, build_pipeline
from policydesk.providers.extractive import ExtractiveAnswerer
from policydesk.users import add_user

TODAY = date(2026, 9, 14)
QUESTION = "How long does the plan take to decide a standard formulary exception request?"


def _settings(**kw) -> Settings:
    return Settings(_env_file=None, ENVIRONMENT="test", **kw)


def test_the_offline_model_has_a_calibrated_threshold_and_gemini_is_marked_uncalibrated():
    offline = _settings()
    assert offline.embedding_model_name == OFFLINE_EMBEDDING_MODEL
    assert offline.abstain_threshold() == 0.35
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
        AskPipeline(None, _settings(GEMINI_API_KEY="k"), embed_model, ExtractiveAnswerer())


@pytest.fixture(scope="module")
def thr_user(demo_db):
    with Session(demo_db.owner) as s, s.begin():
        add_user(s, name="thr_rep", role="rep", password="threshold-pw-rep")
    return "thr_rep"


def test_the_pipeline_abstains_by_the_active_models_threshold(demo_db, settings, embed_model, thr_user):
    def ask(thresholds: dict) -> object:
        s = settings.model_copy(update={"ABSTAIN_THRESHOLDS": thresholds, "ABSTAIN_MIN_SIMILARITY": None})
        p = build_pipeline(demo_db, s, embed_model=embed_model, llm=ExtractiveAnswerer(), today=TODAY)
        return p.ask(AskRequest(thr_user, QUESTION))

    answered = ask({OFFLINE_EMBEDDING_MODEL: 0.35, "gemini-embedding-001": 0.99})
    assert not answered.abstained and "72 hours" in answered.answer
    strict = ask({OFFLINE_EMBEDDING_MODEL: 0.99, "gemini-embedding-001": 0.35})
    assert strict.abstained and strict.abstain_reason and "matched too weakly" in strict.abstain_reason


def test_calibration_recommends_from_dev_and_never_from_test(demo_db, settings, embed_model):
    from policydesk.evals.calibrate import calibrate
    from policydesk.evals.golden import load_split

    items = load_split("dev").only(["easy-01", "stale-04", "refuse-09", "d-refuse-02"])
    dev = calibrate(demo_db, settings, items, embed_model, split="dev")
    assert dev.embedding_model == OFFLINE_EMBEDDING_MODEL and dev.current == 0.35
    assert set(dev.answerable) == {"easy-01", "stale-04"} and set(dev.out_of_scope) == {"refuse-09", "d-refuse-02"}
    assert dev.recommended is not None
    assert max(dev.out_of_scope.values()) < dev.recommended < min(dev.answerable.values())
    assert calibrate(demo_db, settings, items, embed_model, split="test").recommended is None
