"""What one eval run holds, scored, and its summary.

Shared by the harness, which fills an `EvalRun`, and the report, which renders one,
so the report needs nothing from the harness (they used to import each other lazily).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from policydesk.evals import metrics as M
from policydesk.evals.golden import BUCKETS, GoldenItem
from policydesk.evals.leaks import LeakMatrix

if TYPE_CHECKING:
    from policydesk.evals.calibrate import Calibration

SYSTEMS = ("full", "baseline", "oracle")


@dataclass
class ItemRecord:
    """One golden item through one system."""

    item_id: str
    system: str
    bucket: str
    role: str
    question: str
    dates: dict
    expect_refusal: bool
    context_ids: list[str] = field(default_factory=list)
    cited_ids: list[str] = field(default_factory=list)
    cited_versions: list[tuple[str, int]] = field(default_factory=list)
    answer: str = ""  # the answer, or (no model) the marked sentences
    shown: str = ""  # everything shown: the answer and, with no model, the passages around it
    gold_in_context: bool | None = None  # oracle: an expected chunk was in the context it drafted from
    refused: bool = False
    refusal_reason: str | None = None
    abstained: bool = False
    abstain_reason: str | None = None
    degraded: bool = False
    retries: int = 0
    error: str | None = None
    trace_id: str | None = None
    versions_applied: list = field(default_factory=list)
    # metrics
    recall: float | None = None
    mrr: float | None = None
    ndcg: float | None = None
    right_version: bool | None = None
    key_fact: bool | None = None  # in what was shown (the passage, offline)
    marked_key_fact: bool | None = None  # in the answer itself (the marked sentence, offline)
    versions_match: bool | None = None
    citations_in_context: bool | None = None
    correct_and_cited: bool | None = None
    declined: bool = False
    grounded: bool | None = None
    leaks: dict = field(default_factory=dict)

    @property
    def answered(self) -> bool:
        return bool(self.answer) and not (self.refused or self.abstained or self.error)

    def score(self, item: GoldenItem, k: int) -> None:
        self.declined = not self.answered
        if item.expect_refusal:
            self.correct_and_cited = self.declined
            return
        ranked = self.context_ids
        self.recall = M.recall_at_k(ranked, item.expected_sections, k)
        self.mrr = M.reciprocal_rank(ranked[:k], item.expected_sections)
        self.ndcg = M.ndcg_at_k(ranked, item.expected_sections, k)
        self.right_version = M.right_version_in_context(ranked, item.expected_version, item.excluded_sources)
        self.key_fact = self.answered and M.key_facts_present(self.shown or self.answer, item.expected_key_facts)
        self.marked_key_fact = self.answered and M.key_facts_present(self.answer, item.expected_key_facts)
        self.versions_match = self.answered and M.cited_versions_match(self.cited_versions, item.expected_version,
                                                                       item.excluded_sources)
        self.citations_in_context = self.answered and bool(self.cited_ids) and set(self.cited_ids) <= set(ranked)
        self.correct_and_cited = bool(self.key_fact and self.versions_match and self.citations_in_context)

    def to_json(self) -> dict:
        d = asdict(self)
        d["cited_versions"] = [list(x) for x in self.cited_versions]
        return d


@dataclass
class EvalRun:
    run_id: str
    started_at: str
    golden_path: str | None
    reference_date: str | None
    k: int
    model: str
    embedding: str
    extractive: bool
    items: list[GoldenItem]
    records: list[ItemRecord] = field(default_factory=list)
    leaks: LeakMatrix = field(default_factory=LeakMatrix)
    # The positive control: an unscoped retriever through the same checker. None = not run.
    leak_control: LeakMatrix | None = None
    calibration: Calibration | None = None
    summary: dict = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    repeats: int = 1
    elapsed_s: float = 0.0
    corpus: str | None = None
    split: str | None = None  # dev | test; None when files were given directly
    golden_files: list[str] = field(default_factory=list)
    abstain_threshold: float | None = None  # what the full system ran with (None: not calibrated, none applied)

    @property
    def degraded_items(self) -> list[str]:
        return sorted({f"{r.system}:{r.item_id}" for r in self.records if r.degraded})

    @property
    def clean(self) -> bool:
        return not self.degraded_items

    @property
    def leak_total(self) -> int:
        return self.leaks.total

    @property
    def leak_check_proven(self) -> bool:
        """The checker flagged the deliberately leaky retriever (or the matrix was not run)."""
        return self.leak_control is None or self.leak_control.total > 0

    @property
    def passed(self) -> bool:
        return self.leak_total == 0 and self.leak_check_proven

    def record(self, system: str, item_id: str) -> ItemRecord:
        return next(r for r in self.records if r.system == system and r.item_id == item_id)


def _system_summary(records: list[ItemRecord], items: dict[str, GoldenItem]) -> dict:
    answerable = [r for r in records if not r.expect_refusal]
    refusal = M.RefusalCounts()
    for r in records:
        refusal.add(r.expect_refusal, r.declined)
    return {
        "n": len(records),
        "recall_at_k": M.mean(r.recall for r in answerable),
        "mrr": M.mean(r.mrr for r in answerable),
        "ndcg_at_k": M.mean(r.ndcg for r in answerable),
        "right_version_in_context": M.mean(r.right_version for r in answerable),
        "correct_and_cited": M.mean(r.correct_and_cited for r in answerable),
        "key_fact_only": M.mean(r.key_fact for r in answerable),
        "marked_key_fact": M.mean(r.marked_key_fact for r in answerable),
        "answerable_declined": M.mean(r.declined for r in answerable),
        # oracle: correct drafts shown when the expected chunk was in context (the checks' cost)
        "shown_with_gold_in_context": M.mean(r.correct_and_cited for r in answerable if r.gold_in_context),
        "refusal_precision": refusal.precision,
        "refusal_recall": refusal.recall,
        "over_refusal_rate": refusal.over_refusal,
        "refusal_counts": asdict(refusal),
        "grounded": M.mean(r.grounded for r in records if r.grounded is not None),
        "degraded": sum(r.degraded for r in records),
    }


def summarize(run: EvalRun) -> dict:
    items = {i.id: i for i in run.items}
    out: dict[str, Any] = {"overall": {}, "buckets": {}}
    for system in SYSTEMS:
        recs = [r for r in run.records if r.system == system]
        out["overall"][system] = _system_summary(recs, items)
        for b in BUCKETS:
            brecs = [r for r in recs if r.bucket == b]
            if brecs:
                out["buckets"].setdefault(b, {})[system] = _system_summary(brecs, items)
        for tag, ids in tag_groups(run.items).items():
            trecs = [r for r in recs if r.item_id.split("#")[0] in ids]
            if trecs:
                out.setdefault("tags", {}).setdefault(tag, {})[system] = _system_summary(trecs, items)
    out["leaks"] = run.leaks.to_json()
    out["leak_total"] = run.leak_total
    out["leak_control_total"] = run.leak_control.total if run.leak_control is not None else None
    out["clean"] = run.clean
    out["degraded_items"] = run.degraded_items
    out["failures"] = {s: sorted(r.item_id for r in run.records if r.system == s and not r.correct_and_cited)
                       for s in SYSTEMS}
    return out


def tag_groups(items: list[GoldenItem]) -> dict[str, set[str]]:
    """tag -> item ids; items not tagged `new` also form the group `original` (the first golden set's)."""
    groups: dict[str, set[str]] = {}
    for item in items:
        for tag in item.tags or ():
            groups.setdefault(tag, set()).add(item.id)
        if "new" not in item.tags:
            groups.setdefault("original", set()).add(item.id)
    return dict(sorted(groups.items()))


def bucket_score(summary: dict, bucket: str, system: str) -> float | None:
    """The one number per bucket in the charts: correct-and-cited, or refusal recall for must_refuse."""
    s = summary["buckets"].get(bucket, {}).get(system)
    if not s:
        return None
    return s["refusal_recall"] if bucket == "must_refuse" else s["correct_and_cited"]
