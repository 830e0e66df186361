"""How the first golden set (50 items) was split into dev and test.

Decided before any per-item result was looked at, and reproducible from the ids alone: within
each bucket, items are ordered by sha256(SPLIT_SALT + ":" + id) and the first half goes to test,
the rest to dev. Nothing about an item's content or its results decides its side.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

# Fixed for good: any other salt reshuffles the frozen test split.
SPLIT_SALT = "policydesk/issue-16/golden-split"


def split_rank(item_id: str, salt: str = SPLIT_SALT) -> str:
    return hashlib.sha256(f"{salt}:{item_id}".encode()).hexdigest()


def assign_splits(items: Iterable[tuple[str, str]], salt: str = SPLIT_SALT) -> dict[str, str]:
    """(id, bucket) pairs -> {id: "dev" | "test"}, half of each bucket (rounded down) to test.

    Each golden set has its own salt (the one it was split with), so a second set's split is
    independent of the first's."""
    by_bucket: dict[str, list[str]] = {}
    for item_id, bucket in items:
        by_bucket.setdefault(bucket, []).append(item_id)
    out: dict[str, str] = {}
    for ids in by_bucket.values():
        ranked = sorted(ids, key=lambda i: split_rank(i, salt))
        half = len(ranked) // 2
        out.update({i: "test" for i in ranked[:half]})
        out.update({i: "dev" for i in ranked[half:]})
    return out


ORIGINAL_BUCKET_PREFIXES = ("easy", "cross", "conflict", "stale", "refuse")  # the first set's ids: <prefix>-NN


def original_order(items: list) -> list:
    """Golden items with the first set's fifty first, in that file's order (bucket, then number),
    then the rest as given: so "the first N golden questions" (benchmarks) stay the same questions."""
    def key(item) -> tuple[int, str] | None:
        prefix, _, number = item.id.partition("-")
        if prefix in ORIGINAL_BUCKET_PREFIXES and len(number) == 2 and number.isdigit():
            return ORIGINAL_BUCKET_PREFIXES.index(prefix), number
        return None

    first = sorted((i for i in items if key(i) is not None), key=key)
    return first + [i for i in items if key(i) is None]
