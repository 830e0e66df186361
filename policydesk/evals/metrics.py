"""Retrieval and generation metrics, computed in code against the golden labels.

Relevance is binary: a chunk is relevant when its id is in `expected_sections`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def doc_version_of(chunk_id: str) -> tuple[str, int] | None:
    """'POL-TF:v2:filing-limit' -> ('POL-TF', 2)."""
    m = re.match(r"^(.+?):v(\d+):", chunk_id)
    return (m.group(1), int(m.group(2))) if m else None


def recall_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    relevant = set(relevant)
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)


def reciprocal_rank(ranked: Sequence[str], relevant: Iterable[str]) -> float:
    relevant = set(relevant)
    for rank, cid in enumerate(ranked, start=1):
        if cid in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float:
    relevant = set(relevant)
    if not relevant:
        return 0.0
    dcg = sum(1.0 / math.log2(rank + 1) for rank, cid in enumerate(ranked[:k], start=1) if cid in relevant)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(relevant), k) + 1))
    return dcg / ideal


def _versions_by_doc(pairs: Iterable[tuple[str, int]]) -> dict[str, set[int]]:
    by_doc: dict[str, set[int]] = {}
    for doc, version in pairs:
        by_doc.setdefault(doc, set()).add(version)
    return by_doc


def _as_set(version: int | Iterable[int]) -> set[int]:
    return {version} if isinstance(version, int) else set(version)


def right_version_in_context(context_ids: Sequence[str], expected_version: dict[str, int | Iterable[int]],
                             excluded: Iterable[str] = ()) -> bool | None:
    """Each expected doc's expected version(s) are in context and no other version of it is,
    and no excluded source (not in force on the applicable date) is.

    None when the item names no expected version (nothing to check).
    """
    if not expected_version:
        return None
    present = _versions_by_doc(dv for dv in map(doc_version_of, context_ids) if dv)
    if any(doc in present for doc in excluded):
        return False
    return all(present.get(doc) == _as_set(v) for doc, v in expected_version.items())


_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text.lower().replace("-", " ")).strip()


def fact_pattern(fact: str) -> re.Pattern[str]:
    """A key fact as a whole-token phrase: its first and last tokens may not continue into a
    neighbouring word or number ("90 days" is not in "190 days", "1,090 days", "1.90 days" or
    "90 daysx"). Case and whitespace are normalised as before."""
    return re.compile(r"(?<!\w)(?<!\d[.,])" + re.escape(_norm(fact)) + r"(?!\w)(?![.,]\d)")


def key_fact_present(answer: str, fact: str) -> bool:
    return bool(fact.strip()) and fact_pattern(fact).search(_norm(answer)) is not None


def key_facts_present(answer: str, facts: Sequence[str]) -> bool:
    if not facts:
        return False
    return all(key_fact_present(answer, f) for f in facts)


def cited_versions_match(cited: Sequence[tuple[str, int]], expected_version: dict[str, int | Iterable[int]],
                         excluded: Iterable[str] = ()) -> bool:
    """Every expected doc is cited at exactly its expected version(s), and no excluded source is cited."""
    by_doc = _versions_by_doc(cited)
    if any(doc in by_doc for doc in excluded):
        return False
    if not expected_version:
        return bool(cited)
    return all(by_doc.get(doc) == _as_set(v) for doc, v in expected_version.items())


@dataclass
class RefusalCounts:
    tp: int = 0  # expected refusal, declined
    fp: int = 0  # answerable, declined (over-refusal)
    fn: int = 0  # expected refusal, answered
    tn: int = 0  # answerable, answered

    def add(self, expected: bool, declined: bool) -> None:
        if expected and declined:
            self.tp += 1
        elif expected:
            self.fn += 1
        elif declined:
            self.fp += 1
        else:
            self.tn += 1

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if (self.tp + self.fp) else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if (self.tp + self.fn) else None

    @property
    def over_refusal(self) -> float | None:
        return self.fp / (self.fp + self.tn) if (self.fp + self.tn) else None


def mean(values: Iterable[float | bool | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None
