"""What a question asks for: a policy answer, a claim action, or something out of scope.

Rules alone fit the cases they were written against and miss requests worded by anyone else.
This adds a small learned classifier on the
local MiniLM sentence embeddings, fitted on the labelled train split only
(`policydesk/detectors/labelled/train.yaml`), with the rules as a floor:

- features: the 384-d embedding of the (redacted) question, nothing else. Not the rule verdicts:
  the rules catch almost every train case, so a model given their verdicts learns to copy them
  and adds little on questions worded otherwise (docs/refusal.md);
- model: multinomial logistic regression (scikit-learn, lbfgs: deterministic), classes
  pass / claim_action / out_of_scope. Identifier cases are left out of training (their
  identifier decides them) and so are topic-gated cases (out of scope for one role only);
- training data: the train split minus out-of-scope cases a rule refuses in spite of their plan
  vocabulary (`fitted_cases`: other payers' rules, clinical advice), which the rules decide;
- decision: a rule hit, or a class probability at or above its threshold. A learned claim action
  also needs an action verb (the rules' list or the transactional inventory in
  `policydesk.detectors.actions`) and must not be a request for information (`asks_for_information`:
  a wh-question, "please explain", a last clause asking about the rule). A learned out-of-scope
  guess on a question framed as this plan's benefits or rules (`asks_about_this_plan`: "copay",
  "out-of-pocket", "does the plan cover") needs 0.9, not 0.5: the embedding alone refused short
  benefit questions the corpus does not answer. Thresholds were chosen on the validation split and
  out-of-fold on train (scripts/refusal_cv.py), never on a test split.

Fitting takes about a second (one batched embedding call over a few hundred questions), once per
process (providers/screening_models.py keeps it beside the local model's weights). The embedding
always comes from the local model, whatever provider answers: the question does not leave the
process for the gate.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from policydesk.detectors import is_claim_action, is_out_of_scope
from policydesk.detectors.claims import mentions_action, names_what_is_asked
from policydesk.detectors.phrasing import asks_for_information
from policydesk.detectors.scope import asks_about_this_plan, has_plan_vocabulary

log = logging.getLogger(__name__)

TRAIN_FILE = Path(__file__).resolve().parents[1] / "detectors" / "labelled" / "train.yaml"
CLASSES: tuple[str, ...] = ("pass", "claim_action", "out_of_scope")
# Chosen on validation and out-of-fold on train (scripts/refusal_cv.py; docs/refusal.md).
CLAIM_THRESHOLD = 0.5
SCOPE_THRESHOLD = 0.5
# A learned out-of-scope guess on a question with health-plan vocabulary ("what's the out-of-pocket max",
# "copay for acupuncture") needs this much: the embedding alone calls short benefit questions the corpus
# does not answer out of scope. Chosen out-of-fold on train and on validation (docs/refusal.md).
PLAN_VOCABULARY_SCOPE_THRESHOLD = 0.9
REGULARIZATION_C = 16.0

Embed = Callable[[Sequence[str]], np.ndarray]


def training_pairs(cases: Iterable[dict]) -> list[tuple[str, str]]:
    """(question, label) of the labelled cases the classifier may learn from: identifier cases are
    decided by their identifier, topic-gated ones are out of scope for one role only."""
    return [(c["question"], c["expected"]) for c in cases
            if c["expected"] in CLASSES and c.get("gate") != "topic"]


def load_training_cases(path: Path = TRAIN_FILE) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8") as fh:
        return training_pairs(yaml.safe_load(fh)["cases"])


def fitted_cases(cases: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The labelled cases the model is fitted on. Out-of-scope questions a rule refuses in spite of
    their plan vocabulary (another payer's rules, clinical and legal advice) are left out: the rules
    decide them, and "does <payer> cover X?" taught the model that "does the plan cover X?" is out
    of scope."""
    return [(q, label) for q, label in cases
            if label != "out_of_scope" or not (is_out_of_scope(q) and has_plan_vocabulary(q))]


@dataclass(frozen=True)
class IntentVerdict:
    label: str  # pass | claim_action | out_of_scope
    probabilities: dict[str, float]
    by_rule: bool
    vector: np.ndarray | None = None  # the question's local embedding, when it was computed


class IntentClassifier:
    """Claim-action and out-of-scope detection: rules plus logistic regression on embeddings."""

    def __init__(self, embed: Embed, *, train_file: Path = TRAIN_FILE,
                 cases: Sequence[tuple[str, str]] | None = None,
                 claim_threshold: float = CLAIM_THRESHOLD, scope_threshold: float = SCOPE_THRESHOLD,
                 regularization: float = REGULARIZATION_C,
                 plan_vocabulary_scope_threshold: float = PLAN_VOCABULARY_SCOPE_THRESHOLD) -> None:
        self._embed = embed  # the local model's vectors (providers/screening_models.py)
        self.plan_vocabulary_scope_threshold = plan_vocabulary_scope_threshold
        self.regularization = regularization
        self.train_file = train_file
        self.cases = cases  # (question, label) pairs instead of the file: cross-validation folds
        self.claim_threshold = claim_threshold
        self.scope_threshold = scope_threshold
        self._model = None
        self._lock = threading.Lock()

    def fit(self) -> "IntentClassifier":
        from sklearn.linear_model import LogisticRegression

        with self._lock:
            if self._model is None:
                cases = fitted_cases(self.cases if self.cases is not None else load_training_cases(self.train_file))
                questions = [q for q, _ in cases]
                X = self._embed(questions)
                y = np.array([CLASSES.index(label) for _, label in cases])
                model = LogisticRegression(C=self.regularization, max_iter=2000, class_weight="balanced")
                self._model = model.fit(X, y)
                log.info("intent classifier fitted on %d labelled questions", len(cases))
        return self

    @property
    def fitted(self) -> bool:
        return self._model is not None

    def embed(self, question: str) -> np.ndarray:
        return self._embed([question])[0]

    def classify(self, question: str, vector: np.ndarray | None = None) -> IntentVerdict:
        if is_claim_action(question):
            return IntentVerdict("claim_action", {}, True)
        if is_out_of_scope(question):
            return IntentVerdict("out_of_scope", {}, True)
        self.fit()
        vec = self.embed(question) if vector is None else vector
        proba = self._model.predict_proba(vec[None, :])[0]
        probs = {CLASSES[int(c)]: float(p) for c, p in zip(self._model.classes_, proba)}
        if (probs.get("claim_action", 0.0) >= self.claim_threshold and mentions_action(question)
                and not asks_for_information(question) and not names_what_is_asked(question)):
            return IntentVerdict("claim_action", probs, False, vec)
        scope_threshold = self.scope_threshold
        if asks_about_this_plan(question):
            scope_threshold = max(scope_threshold, self.plan_vocabulary_scope_threshold)
        if probs.get("out_of_scope", 0.0) >= scope_threshold:
            return IntentVerdict("out_of_scope", probs, False, vec)
        return IntentVerdict("pass", probs, False, vec)
