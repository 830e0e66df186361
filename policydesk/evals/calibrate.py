"""Calibrate the abstention threshold (settings.ABSTAIN_THRESHOLDS, per embedding model) on the dev split.

For each item, the best dense cosine similarity is the number the pipeline compares with the
threshold: `HybridRetriever.search(question).best_similarity` under the item's role clearance
(the best over question parts). The threshold should abstain on the questions no source answers
(must-refuse items of kind out_of_scope or not_in_corpus, UNANSWERABLE_KINDS) that slip past the
early refusal screen, and on as few answerable items as possible. Every such item counts, whether
or not today's refusal gate stops it first: the threshold is the backstop for the gate's misses,
and the gate changes independently of it. A pipeline abstains when the similarity is strictly
below the threshold.

The rule (recommend_threshold):
1. Gap: when every unanswerable item scores below every answerable one, the midpoint of that gap,
   rounded down to 0.05, and never above the weakest answerable item minus SAFETY_MARGIN. No
   answerable item abstains.
2. Overlap: when the strongest unanswerable item scores at or above the weakest answerable one,
   no value separates them. We accept abstaining on at most MAX_ANSWERABLE_ABSTAIN_SHARE (2%) of
   the answerable items, counted down: k = floor(0.02 * n) of n items. The recommendation is the
   highest value within that budget: the (k+1)-th weakest answerable similarity minus
   SAFETY_MARGIN, rounded down to 0.01. With fewer than 50 answerable items k is 0, so the value
   abstains on no answerable item. Which unanswerable items it catches is then reported, not chosen.

The value is recommended from the dev split only, per embedding model (similarities of
two models are not on one scale), and stored in settings.ABSTAIN_THRESHOLDS under that model's
name. On the test split nothing is recommended; the run reports what the stored value does there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from policydesk.accounts.access import clearance_for
from policydesk.retrievers import HybridRetriever, chunk_vector_store

SAFETY_MARGIN = 0.02  # room for embedding noise between runs and model versions
# When the answerable and unanswerable ranges overlap: the share of answerable items the recommended
# threshold may abstain on (rounded down to whole items). Fixed before the grown dev split was run.
MAX_ANSWERABLE_ABSTAIN_SHARE = 0.02
# Must-refuse kinds that no source answers: what similarity abstention is for. The other kinds
# (identifiers, claim actions, restricted topics, versions) are on-topic wording the gate refuses.
UNANSWERABLE_KINDS = ("out_of_scope", "not_in_corpus")


@dataclass
class Calibration:
    similarities: dict[str, float | None] = field(default_factory=dict)  # item id -> best dense similarity
    answerable: dict[str, float] = field(default_factory=dict)
    refuse: dict[str, float] = field(default_factory=dict)
    out_of_scope: dict[str, float] = field(default_factory=dict)  # refuse items of UNANSWERABLE_KINDS
    current: float | None = None  # the stored threshold for this model; None = not calibrated
    recommended: float | None = None  # from this run's items; only on dev (never from test)
    embedding_model: str | None = None
    split: str | None = None

    def abstains(self, threshold: float | None, group: dict[str, float]) -> list[str] | None:
        return None if threshold is None else sorted(i for i, s in group.items() if s < threshold)

    def to_json(self) -> dict:
        return {
            "embedding_model": self.embedding_model,
            "split": self.split,
            "current": self.current,
            "recommended": self.recommended,
            "margin": SAFETY_MARGIN,
            "max_answerable_abstain_share": MAX_ANSWERABLE_ABSTAIN_SHARE,
            "ranges_overlap": ranges_overlap(self.answerable.values(), self.out_of_scope.values()),
            "answerable_min": min(self.answerable.values(), default=None),
            "answerable_max": max(self.answerable.values(), default=None),
            "out_of_scope": self.out_of_scope,
            "refuse": self.refuse,
            "answerable": self.answerable,
            "current_abstains_answerable": self.abstains(self.current, self.answerable),
            "current_abstains_out_of_scope": self.abstains(self.current, self.out_of_scope),
            "recommended_abstains_answerable": self.abstains(self.recommended, self.answerable),
            "recommended_abstains_out_of_scope": self.abstains(self.recommended, self.out_of_scope),
        }


def stored_threshold(settings) -> float | None:
    from policydesk.config import UncalibratedThreshold

    try:
        return settings.abstain_threshold()
    except UncalibratedThreshold:
        return None


def calibrate(db, settings, golden, embed_model, *, k: int = 8, split: str | None = None) -> Calibration:
    store = chunk_vector_store(db)
    cal = Calibration(current=stored_threshold(settings), embedding_model=settings.embedding_model_name, split=split)
    for item in golden.items:
        c = clearance_for(item.role)
        retriever = HybridRetriever(store, embed_model, clearance=c, top_k=k)
        best = retriever.search(item.question).best_similarity
        cal.similarities[item.id] = best
        if best is None:
            continue
        if item.expect_refusal:
            cal.refuse[item.id] = best
            if item.refusal_kind in UNANSWERABLE_KINDS:
                cal.out_of_scope[item.id] = best
        else:
            cal.answerable[item.id] = best
    if split != "test":
        cal.recommended = recommend_threshold(cal.answerable.values(), cal.out_of_scope.values())
    return cal


def ranges_overlap(answerable, unanswerable) -> bool | None:
    """True when the strongest unanswerable item scores at or above the weakest answerable one."""
    answerable, unanswerable = list(answerable), list(unanswerable)
    if not answerable or not unanswerable:
        return None
    return max(unanswerable) >= min(answerable)


def recommend_threshold(answerable, unanswerable) -> float | None:
    """The rule in the module docstring: gap midpoint, or, when the ranges overlap, the highest
    value that abstains on at most MAX_ANSWERABLE_ABSTAIN_SHARE of the answerable items."""
    ranked = sorted(answerable)
    if not ranked:
        return None
    unanswerable = list(unanswerable)
    if not ranges_overlap(ranked, unanswerable):
        ceiling = ranked[0] - SAFETY_MARGIN
        midpoint = (max(unanswerable, default=0.0) + ranked[0]) / 2
        return round(min(_floor(midpoint, 0.05), _floor(ceiling, 0.01)), 2)
    allowed = math.floor(MAX_ANSWERABLE_ABSTAIN_SHARE * len(ranked) + 1e-9)
    return round(_floor(ranked[allowed] - SAFETY_MARGIN, 0.01), 2)


def _floor(value: float, step: float) -> float:
    # A small epsilon so 0.70 - 0.02 stays 0.68 instead of flooring to 0.67 on float noise.
    return math.floor(value / step + 1e-9) * step
