"""The golden set: hand-written questions with expected sections, key facts and versions."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import text

from policydesk.access import ROLES

BUCKETS: tuple[str, ...] = ("easy_lookup", "cross_document", "conflicting_sources", "stale_policy", "must_refuse")
DATE_FIELDS = ("date_of_service", "denial_notice_date")
DEFAULT_GOLDEN = Path(__file__).resolve().parents[2] / "evals" / "golden.yaml"


class GoldenError(ValueError):
    """The golden file is malformed or names chunks the database does not hold."""


@dataclass(frozen=True)
class GoldenItem:
    id: str
    bucket: str
    question: str
    role: str
    dates: dict[str, str | None]
    expected_sections: tuple[str, ...]
    expected_key_facts: tuple[str, ...]  # all must appear in the answer
    expected_version: dict[str, int]
    expect_refusal: bool
    refusal_kind: str | None = None

    @property
    def answerable(self) -> bool:
        return not self.expect_refusal

    def date_inputs(self) -> dict[str, str]:
        return {k: v for k, v in self.dates.items() if v}


@dataclass
class Golden:
    items: list[GoldenItem]
    reference_date: date | None = None
    path: Path | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def slice(self, n: int | None) -> "Golden":
        """The first `n` items of each bucket, round-robin, so a small slice still spans buckets."""
        if not n or n >= len(self.items):
            return self
        by_bucket = {b: [i for i in self.items if i.bucket == b] for b in BUCKETS}
        picked: list[GoldenItem] = []
        depth = 0
        while len(picked) < n:
            added = False
            for b in BUCKETS:
                if depth < len(by_bucket[b]) and len(picked) < n:
                    picked.append(by_bucket[b][depth])
                    added = True
            if not added:
                break
            depth += 1
        return replace(self, items=picked)

    def only(self, ids: list[str]) -> "Golden":
        wanted = set(ids)
        missing = wanted - {i.id for i in self.items}
        if missing:
            raise GoldenError(f"unknown golden ids: {', '.join(sorted(missing))}")
        return replace(self, items=[i for i in self.items if i.id in wanted])


def _str_date(value: Any, where: str) -> str | None:
    if value in (None, ""):
        return None
    if isinstance(value, date):
        return value.isoformat()
    try:
        return date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise GoldenError(f"{where}: {value!r} is not a YYYY-MM-DD date") from None


def _item(raw: dict, n: int) -> GoldenItem:
    where = f"item {n} ({raw.get('id', '?')})"
    for key in ("id", "bucket", "question", "role"):
        if not raw.get(key):
            raise GoldenError(f"{where}: missing {key}")
    if raw["bucket"] not in BUCKETS:
        raise GoldenError(f"{where}: bucket {raw['bucket']!r} is not one of {', '.join(BUCKETS)}")
    if raw["role"] not in ROLES:
        raise GoldenError(f"{where}: role {raw['role']!r} is not one of {', '.join(ROLES)}")
    dates = raw.get("dates") or {}
    unknown = set(dates) - set(DATE_FIELDS)
    if unknown:
        raise GoldenError(f"{where}: unknown date field(s) {', '.join(sorted(unknown))}")
    facts = raw.get("expected_key_fact")
    facts = () if facts in (None, "") else (tuple(str(f) for f in facts) if isinstance(facts, list) else (str(facts),))
    expect_refusal = bool(raw.get("expect_refusal", False))
    if not expect_refusal and (not facts or not raw.get("expected_sections")):
        raise GoldenError(f"{where}: an answerable item needs expected_sections and expected_key_fact")
    return GoldenItem(
        id=str(raw["id"]),
        bucket=raw["bucket"],
        question=str(raw["question"]).strip(),
        role=raw["role"],
        dates={f: _str_date(dates.get(f), where) for f in DATE_FIELDS},
        expected_sections=tuple(raw.get("expected_sections") or ()),
        expected_key_facts=facts,
        expected_version={str(k): int(v) for k, v in (raw.get("expected_version") or {}).items()},
        expect_refusal=expect_refusal,
        refusal_kind=raw.get("refusal_kind"),
    )


def load_golden(path: Path | str = DEFAULT_GOLDEN) -> Golden:
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise GoldenError(f"cannot read golden file {path}: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("items"), list):
        raise GoldenError(f"{path}: expected a mapping with an 'items' list")
    items = [_item(r, n) for n, r in enumerate(raw["items"], start=1)]
    ids = [i.id for i in items]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise GoldenError(f"{path}: duplicate ids {', '.join(dupes)}")
    ref = raw.get("reference_date")
    ref_date = date.fromisoformat(_str_date(ref, "reference_date")) if ref else None
    meta = {k: v for k, v in raw.items() if k not in ("items", "reference_date")}
    return Golden(items=items, reference_date=ref_date, path=path, meta=meta)


def check_against_db(golden: Golden, db) -> None:
    """Every expected chunk id, and every expected (doc, version), must exist in the index."""
    with db.owner.connect() as conn:
        ids = set(conn.execute(text("SELECT node_id FROM data_chunks")).scalars())
        versions = {(d, v) for d, v in conn.execute(text("SELECT doc_id, version FROM document_versions")).all()}
    problems = []
    for item in golden.items:
        problems += [f"{item.id}: no chunk {cid!r}" for cid in item.expected_sections if cid not in ids]
        problems += [f"{item.id}: no version {d} v{v}" for d, v in item.expected_version.items() if (d, v) not in versions]
    if problems:
        raise GoldenError("golden labels don't match the indexed corpus:\n  " + "\n  ".join(problems))
