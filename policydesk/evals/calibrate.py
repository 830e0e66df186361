"""Calibrate the abstention threshold (settings.ABSTAIN_THRESHOLDS, per embedding model) on the dev split.

For each item, the best dense cosine similarity is the number the pipeline compares with the
threshold: `HybridRetriever.search(question).best_similarity` under the item's role clearance
(the best over question parts). The threshold must abstain on none of the answerable items and
should abstain on out-of-scope ones that slip past the early refusal screen. We take the midpoint
of the gap between the strongest out-of-scope item and the weakest answerable item, rounded down
to 0.05, and never above the weakest answerable item minus SAFETY_MARGIN.

Issue 16: the value is recommended from the dev split only, per embedding model (similarities of
two models are not on one scale), and stored in settings.ABSTAIN_THRESHOLDS under that model's
name. On the test split nothing is recommended; the run reports what the stored value does there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from policydesk.access import clearance_for
from policydesk.retrievers import HybridRetriever, chunk_vector_store

SAFETY_MARGIN = 0.02  # room for embedding noise between runs and model versions


@dataclass
class Calibration:
    similarities: dict[str, float | None] = field(default_factory=dict)  # item id -> best dense similarity
    answerable: dict[str, float] = field(default_factory=dict)
    refuse: dict[str, float] = field(default_factory=dict)
    out_of_scope: dict[str, float] = field(default_factory=dict)  # refuse items whose kind is out_of_scope
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
            if item.refusal_kind == "out_of_scope":
                cal.out_of_scope[item.id] = best
        else:
            cal.answerable[item.id] = best
    if cal.answerable and split != "test":
        ceiling = min(cal.answerable.values()) - SAFETY_MARGIN
        floor_ = max(cal.out_of_scope.values(), default=0.0)
        midpoint = (floor_ + min(cal.answerable.values())) / 2
        cal.recommended = round(min(math.floor(midpoint * 20) / 20, math.floor(ceiling * 100) / 100), 2)
    return cal
