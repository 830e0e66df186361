"""What a question asks for: a policy answer, a claim action, or something out of scope.

Rules alone were tuned on the cases they were checked against (issue 15): they refused 2 of 9
claim-action requests written outside the project. This adds a small learned classifier on the
local MiniLM sentence embeddings, fitted on the labelled train split only
(`policydesk/detectors/labelled/train.yaml`), and keeps the rules as features and as a floor:

- features: the 384-d embedding of the (redacted) question, plus the rule detectors' verdicts
  (`is_claim_action`, `is_out_of_scope`, an imperative action verb first, health-plan vocabulary);
- model: multinomial logistic regression (scikit-learn, lbfgs: deterministic), classes
  pass / claim_action / out_of_scope. Identifier cases are left out of training (their
  identifier decides them) and so are topic-gated cases (out of scope for one role only);
- decision: a rule hit, or a class probability at or above its threshold. Thresholds were
  chosen on the validation split (docs/refusal.md), never on the frozen test split.

Fitting takes about a second (one batched embedding call over ~150 questions), on first use.
The embedding always comes from the local model, whatever provider answers: the question does
not leave the process for the gate.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml

from policydesk.detectors import is_claim_action, is_out_of_scope
from policydesk.detectors.claims import mentions_action
from policydesk.detectors.scope import has_plan_vocabulary

log = logging.getLogger(__name__)

TRAIN_FILE = Path(__file__).resolve().parent / "detectors" / "labelled" / "train.yaml"
CLASSES: tuple[str, ...] = ("pass", "claim_action", "out_of_scope")
# Chosen on tests/data/refusal/validation.yaml (scripts/refusal_matrix.py --split validation).
CLAIM_THRESHOLD = 0.5
SCOPE_THRESHOLD = 0.5
REGULARIZATION_C = 4.0

Embed = Callable[[Sequence[str]], np.ndarray]

_ACTION_FIRST = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so|hey|hi|please|pls|kindly|just|now|go\s+ahead\s+(?:and|&))[\s,!.]+)*"
    r"(?:approve|apporve|deny|pay|price|re-?price|adjudicate|re-?adjudicate|override|overturn|reverse|"
    r"void|waive|release|authori[sz]e|grant|uphold|cancel|reopen|reprocess|re-?run|process|extend|"
    r"backdate|issue|refund|reimburse|credit|adjust|write\s+off|mark|set|flip|bump|lift|accept|expedite|"
    r"renew|rescind|reinstate|"
    r"submit|send|put|push|close|zero|change|add|retro-?\w+|decide|make|give|get)\b", re.I)


# A question about the rule usually opens with a question word or a third-person subject.
_QUESTION_FIRST = re.compile(
    r"^\W*(?:hi|hey|sorry|quick\s+question|question)?[\s,!:.-]*(?:how|what|what's|whats|when|where|which|who|"
    r"why|is|are|does|do|did|if|under|in|for|explain|define|process\s+for|(?:can|could|will|would|should)\s+"
    r"(?:a|an|the|we|i|members?|providers?|staff|reps?))\b"
    r"|^\W*\w+\s+or\s+\w+\s*:", re.I)  # "Approve or deny: which applies ...?"


# A question that opens with a wh-word asks about the rule, never for an action ("What test must be
# completed before a PET scan is approved?"): the learned claim-action verdict needs more.
_WH_FIRST = re.compile(
    r"^\W*(?:(?:hi|hey|hello|sorry|quick\s+question|question)[\s,!:.-]+)*(?:how|what|what's|whats|when|"
    r"where|which|who|whose|why)\b", re.I)


# Asking to be told something ("please explain how ...", "I need to know when ...", "what do I tell
# them?"): a request for information, which a learned claim-action guess must not override.
_INFO_REQUEST = re.compile(
    r"\b(?:explain|clarify|describe|walk\s+me\s+through|remind\s+me|tell\s+me|let\s+me\s+know|"
    r"(?:want|wants|wanted|need|needs|like|trying)\s+to\s+(?:know|understand|find\s+out|check)|"
    r"help\s+(?:me\s+)?understand(?:ing)?|wondering|what\s+(?:do|should|can)\s+i\s+(?:say|tell)|"
    r"how\s+do\s+i\s+(?:explain|tell|say|answer))\b", re.I)


def rule_features(question: str) -> np.ndarray:
    return np.array([
        float(is_claim_action(question)),
        float(is_out_of_scope(question)),
        float(bool(_ACTION_FIRST.search(question))),
        float(has_plan_vocabulary(question)),
        float(question.rstrip().endswith("?")),
        float(mentions_action(question)),
        float(bool(_QUESTION_FIRST.search(question))),
        float(bool(_INFO_REQUEST.search(question))),
    ])


def local_model():
    """The offline MiniLM model, the same object the offline retrieval provider uses."""
    from policydesk.config import get_settings
    from policydesk.providers.local import local_embedding

    settings = get_settings()
    return local_embedding(settings)


def local_embed(texts: Sequence[str]) -> np.ndarray:
    """Batched, normalized MiniLM vectors from the offline model (never the network). Cached by
    text: the gate's classifier and the what-changed detector read the same question."""
    texts = list(texts)
    return np.stack(_local_cache().embed(texts)) if texts else np.asarray([], dtype=np.float32)


@lru_cache(maxsize=1)
def _local_cache():
    from policydesk.providers.local import VectorCache

    return VectorCache(local_model())


def load_training_cases(path: Path = TRAIN_FILE) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8") as fh:
        cases = yaml.safe_load(fh)["cases"]
    return [(c["question"], c["expected"]) for c in cases
            if c["expected"] in CLASSES and c.get("gate") != "topic"]


@dataclass(frozen=True)
class IntentVerdict:
    label: str  # pass | claim_action | out_of_scope
    probabilities: dict[str, float]
    by_rule: bool
    vector: np.ndarray | None = None  # the question's local embedding, when it was computed


class IntentClassifier:
    """Claim-action and out-of-scope detection: rules plus logistic regression on embeddings."""

    def __init__(self, embed: Embed | None = None, *, train_file: Path = TRAIN_FILE,
                 claim_threshold: float = CLAIM_THRESHOLD, scope_threshold: float = SCOPE_THRESHOLD) -> None:
        self._embed = embed or local_embed
        self.train_file = train_file
        self.claim_threshold = claim_threshold
        self.scope_threshold = scope_threshold
        self._model = None
        self._lock = threading.Lock()

    def _features(self, questions: Sequence[str], vectors: np.ndarray) -> np.ndarray:
        rules = np.stack([rule_features(q) for q in questions])
        return np.hstack([vectors, rules])

    def fit(self) -> "IntentClassifier":
        from sklearn.linear_model import LogisticRegression

        with self._lock:
            if self._model is None:
                cases = load_training_cases(self.train_file)
                questions = [q for q, _ in cases]
                X = self._features(questions, self._embed(questions))
                y = np.array([CLASSES.index(label) for _, label in cases])
                model = LogisticRegression(C=REGULARIZATION_C, max_iter=2000, class_weight="balanced")
                self._model = model.fit(X, y)
                log.info("intent classifier fitted on %d labelled questions", len(cases))
        return self

    def embed(self, question: str) -> np.ndarray:
        return self._embed([question])[0]

    def classify(self, question: str, vector: np.ndarray | None = None) -> IntentVerdict:
        if is_claim_action(question):
            return IntentVerdict("claim_action", {}, True)
        if is_out_of_scope(question):
            return IntentVerdict("out_of_scope", {}, True)
        self.fit()
        vec = self.embed(question) if vector is None else vector
        proba = self._model.predict_proba(self._features([question], vec[None, :]))[0]
        probs = {CLASSES[int(c)]: float(p) for c, p in zip(self._model.classes_, proba)}
        if (probs.get("claim_action", 0.0) >= self.claim_threshold and mentions_action(question)
                and not _WH_FIRST.search(question) and not _INFO_REQUEST.search(question)):
            return IntentVerdict("claim_action", probs, False, vec)
        if probs.get("out_of_scope", 0.0) >= self.scope_threshold:
            return IntentVerdict("out_of_scope", probs, False, vec)
        return IntentVerdict("pass", probs, False, vec)


_shared: IntentClassifier | None = None
_shared_lock = threading.Lock()


def shared_classifier() -> IntentClassifier:
    """One classifier per process, fitted on first use (about a second)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = IntentClassifier()
        return _shared
