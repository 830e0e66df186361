"""Does a question ask what changed in a policy? A small detector, measured on held-out phrasings.

A list of patterns written next to the golden set recognises "What changed in the timely filing
policy?" but not "Did the filing limit change this year?", and fires on "What changed for this
member's claim?". So this one follows `policydesk.screening.intent`:

- labelled phrasings written before it was built, split in two: the dev file it is fitted on
  (`policydesk/versions/labelled/what_changed_dev.yaml`) and a frozen test file it is measured on
  (`tests/data/what_changed/test.yaml`, sha256 pinned by a test; `scripts/what_changed_matrix.py`);
- features: the local MiniLM embedding of the question, plus rule features — the old patterns
  (`versions.compare.is_what_changed_question`), a word that says a rule changed (changed,
  updated, revised, amended, "what's new in"), a word that may also describe a thing (different,
  replace, moved, increased, "go up"), a rule word (policy, limit, deadline, section, version...),
  a yes/no opening (did, was, has), a version or time reference (version 2, old, previous, this
  year, used to, still), and the readings that are not about a rule changing: changing something
  for someone ("change a member's address", "switch their PCP"), "what changes when ..." and
  "the difference between a X and a Y" (docs/what_changed.md);
- model: logistic regression (scikit-learn, lbfgs: deterministic), fitted on first use.

The embedding always comes from the local model whatever provider answers, like the intent
classifier: the question does not leave the process for this decision.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import yaml

from policydesk.screening.intent import Embed
from policydesk.versions.compare import is_what_changed_question

DEV_FILE = Path(__file__).resolve().parents[1] / "versions" / "labelled" / "what_changed_dev.yaml"
THRESHOLD = 0.5  # chosen on the dev file (leave-one-out), never on the test file
REGULARIZATION_C = 1.0
RULE_WEIGHT = 2.0  # rule features against a unit-length 384-d embedding; chosen on dev (leave-one-out)

# Words that say a rule changed, and words that also describe things ("replace a walker", "a
# different copay for specialists", "the member moved"): two features, so the second can count
# for less when nothing else in the question points at a rule changing.
_CHANGE_WORD = re.compile(
    r"\b(?:chang(?:e|ed|es|ing)|updat(?:e|ed|es)|revis(?:e|ed|ion|ions)|amend(?:ed|ment|ments)?|modif(?:y|ied)|"
    r"rewr(?:ite|itten|ote))\b"
    r"|\bwhat(?:'s|\u2019s|s|\s+is)\s+new\s+(?:in|to|for|with|about)\b|\bnew(?:er)?\s+(?:version|policy|rule|wording)"
    r"|\b(?:go|goes|gone|went)\s+from\b", re.IGNORECASE)
_THING_OR_CHANGE_WORD = re.compile(
    r"\b(?:differ(?:ent|ence|ences|s)?|shorten(?:ed)?|lengthen(?:ed)?|reduc(?:e|ed)|extend(?:ed)?|cut|moved?|"
    r"replac(?:e|ed)|compare[ds]?|vs\.?|versus|increas(?:e|ed|es)|decreas(?:e|ed|es)|rais(?:e|ed)|lower(?:ed)?)\b"
    r"|\b(?:go|goes|gone|went)\s+(?:up|down)\b", re.IGNORECASE)
# The question names a rule, policy or part of one (the thing whose versions differ).
_RULE_WORD = re.compile(
    r"\b(?:polic(?:y|ies)|rules?|limits?|deadlines?|windows?|requirements?|sections?|versions?|guidelines?|"
    r"criteria|process|procedures?|timelines?|timeframes?|wording|language|terms?|schedule)\b", re.IGNORECASE)
_YES_NO = re.compile(r"^\W*(?:did|was|were|has|have|had|is|are|any|were\s+there)\b", re.IGNORECASE)
_VERSION_OR_TIME = re.compile(
    r"\b(?:versions?|v\d+|old|older|new|newer|previous|prior|latest|recent(?:ly)?|current|this\s+year|"
    r"last\s+year|since|used\s+to|any\s*more|still|before|now|(?:19|20)\d\d|january|february|march|april|may|"
    r"june|july|august|september|october|november|december)\b", re.IGNORECASE)
_CHANGE_FOR_SOMEONE = re.compile(
    r"\b(?:change|update|switch|correct|edit)\s+(?:a|the|their|his|her|my|your|our|this)?\s*"
    r"(?:member|provider|caller|patient|pcp|address|phone|email|plan|pharmac|name|date|language)", re.IGNORECASE)
_WHAT_CHANGES_WHEN = re.compile(r"\bwhat\s+changes\s+(?:when|if|for\s+a)\b", re.IGNORECASE)
# "the difference between an expedited and a standard appeal": two kinds of thing, not two versions.
_DIFFERENCE_OF_KINDS = re.compile(r"\bdifferences?\s+between\s+(?:an?|in-\w+|\w+-\w+)\b(?!.*\bversions?\b)", re.IGNORECASE)


def rule_features(question: str) -> np.ndarray:
    return np.array([
        float(is_what_changed_question(question)),
        float(bool(_CHANGE_WORD.search(question))),
        float(bool(_THING_OR_CHANGE_WORD.search(question))),
        float(bool(_RULE_WORD.search(question))),
        float(bool(_YES_NO.search(question))),
        float(bool(_VERSION_OR_TIME.search(question))),
        float(bool(_CHANGE_FOR_SOMEONE.search(question))),
        float(bool(_WHAT_CHANGES_WHEN.search(question))),
        float(bool(_DIFFERENCE_OF_KINDS.search(question))),
    ])


def load_cases(path: Path) -> list[tuple[str, bool]]:
    with open(path, encoding="utf-8") as fh:
        return [(c["q"], c["label"] == "changed") for c in yaml.safe_load(fh)["cases"]]


class WhatChangedDetector:
    def __init__(self, embed: Embed, *, train_file: Path = DEV_FILE, threshold: float = THRESHOLD,
                 train_cases: Sequence[tuple[str, bool]] | None = None) -> None:
        self._embed = embed  # the local model's vectors (providers/screening_models.py)
        self.train_file = train_file
        self.threshold = threshold
        self._train_cases = list(train_cases) if train_cases is not None else None
        self._model = None
        self._lock = threading.Lock()

    def _features(self, questions: Sequence[str]) -> np.ndarray:
        vectors = np.asarray(self._embed(list(questions)), dtype=np.float32)
        return np.hstack([vectors, RULE_WEIGHT * np.stack([rule_features(q) for q in questions])])

    def fit(self) -> "WhatChangedDetector":
        from sklearn.linear_model import LogisticRegression

        with self._lock:
            if self._model is None:
                cases = self._train_cases if self._train_cases is not None else load_cases(self.train_file)
                X = self._features([q for q, _ in cases])
                y = np.array([int(label) for _, label in cases])
                self._model = LogisticRegression(C=REGULARIZATION_C, max_iter=2000).fit(X, y)
        return self

    def probabilities(self, questions: Sequence[str]) -> list[float]:
        self.fit()
        proba = self._model.predict_proba(self._features(questions))
        column = list(self._model.classes_).index(1)
        return [float(p[column]) for p in proba]

    def probability(self, question: str) -> float:
        return self.probabilities([question])[0]

    def is_what_changed(self, question: str) -> bool:
        return self.probability(question) >= self.threshold


# -- which policy a what-changed question is about ---------------------------------------------

def _policies_in_rank_order(nodes) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for n in nodes:
        meta = n.node.metadata
        if meta.get("source_type") == "policy":
            seen.setdefault(meta.get("doc_id") or n.node.ref_doc_id, meta.get("title") or "")
    return list(seen.items())


def named_policy(question: str, nodes) -> str | None:
    """The policy in context the question names: by id, else the title sharing most words with it."""
    from policydesk.versions.rulekind import title_terms

    policies = _policies_in_rank_order(nodes)
    lowered = question.lower()
    for doc_id, _title in policies:
        if re.search(rf"(?<![\w-]){re.escape(doc_id.lower())}(?![\w-])", lowered):
            return doc_id
    asked = title_terms(question)
    scored = [(len(asked & title_terms(title)), -rank, doc_id) for rank, (doc_id, title) in enumerate(policies)]
    best = max(scored, default=(0, 0, None))
    return best[2] if best[0] > 0 else None


def policy_to_compare(question: str, nodes, best_similarity: float | None, min_similarity: float) -> str | None:
    """The policy the question names; else the top-ranked source, if it is a policy and matches clearly."""
    named = named_policy(question, nodes)
    if named is not None:
        return named
    if not nodes or nodes[0].node.metadata.get("source_type") != "policy":
        return None
    if best_similarity is None or best_similarity < min_similarity:
        return None
    return _policies_in_rank_order(nodes[:1])[0][0]
