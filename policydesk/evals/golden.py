"""The golden set: hand-written questions with expected sections, key facts and versions.

Two files: `evals/golden_dev.yaml` (tuning allowed) and `evals/golden_test.yaml`
(frozen; the headline). `load_split("test")` reads a split; `load_golden(path, ...)` reads files.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import text

from policydesk.accounts.access import ROLES

BUCKETS: tuple[str, ...] = ("easy_lookup", "cross_document", "conflicting_sources", "stale_policy", "must_refuse")
DATE_FIELDS = ("date_of_service", "denial_notice_date")
EVALS_DIR = Path(__file__).resolve().parents[2] / "evals"
SPLITS: tuple[str, ...] = ("dev", "test")
# The files each split is read from, relative to evals/. A file may hold items of several splits
# when each item says `split: dev|test` (or the file says it once at the top); only the asked
# split's items are kept. Add a file here to make it part of a split.
SPLIT_SOURCES: tuple[str, ...] = ("golden_{split}.yaml", "golden_products.yaml")
DEFAULT_SPLIT = "test"
DEFAULT_GOLDEN = EVALS_DIR / f"golden_{DEFAULT_SPLIT}.yaml"


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
    expected_version: dict[str, tuple[int, ...]]  # doc -> the version(s) to cite: one, or both for "what changed"
    expect_refusal: bool
    refusal_kind: str | None = None
    excluded_sources: tuple[str, ...] = ()  # docs not in force on the applicable date: never cited or in context
    tags: tuple[str, ...] = ()
    split: str | None = None
    line_of_business: str | None = None  # the member's product, passed to the ask

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


def _versions(raw: Any, where: str) -> dict[str, tuple[int, ...]]:
    out: dict[str, tuple[int, ...]] = {}
    for doc, v in (raw or {}).items():
        values = v if isinstance(v, list) else [v]
        try:
            out[str(doc)] = tuple(sorted({int(x) for x in values}))
        except (TypeError, ValueError):
            raise GoldenError(f"{where}: expected_version {doc}: {v!r} is not a version or a list of versions") from None
        if not out[str(doc)]:
            raise GoldenError(f"{where}: expected_version {doc} is empty")
    return out


def _str_list(value: Any, key: str, where: str) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    if not isinstance(value, list):
        raise GoldenError(f"{where}: {key} must be a list")
    return tuple(str(v) for v in value)


def _item(raw: dict, n: int, file_split: str | None = None) -> GoldenItem:
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
    split = raw.get("split", file_split)
    if split is not None and split not in SPLITS:
        raise GoldenError(f"{where}: split {split!r} is not one of {', '.join(SPLITS)}")
    return GoldenItem(
        id=str(raw["id"]),
        bucket=raw["bucket"],
        question=str(raw["question"]).strip(),
        role=raw["role"],
        dates={f: _str_date(dates.get(f), where) for f in DATE_FIELDS},
        expected_sections=tuple(raw.get("expected_sections") or ()),
        expected_key_facts=facts,
        expected_version=_versions(raw.get("expected_version"), where),
        expect_refusal=expect_refusal,
        refusal_kind=raw.get("refusal_kind"),
        excluded_sources=_str_list(raw.get("excluded_sources"), "excluded_sources", where),
        tags=_str_list(raw.get("tags"), "tags", where),
        split=split,
        line_of_business=str(raw["line_of_business"]) if raw.get("line_of_business") else None,
    )


def _read(path: Path, split: str | None) -> tuple[list[GoldenItem], date | None, dict]:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise GoldenError(f"cannot read golden file {path}: {exc}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("items"), list):
        raise GoldenError(f"{path}: expected a mapping with an 'items' list")
    file_split = raw.get("split")
    items = [_item(r, n, file_split) for n, r in enumerate(raw["items"], start=1)]
    if split is not None:
        unlabelled = [i.id for i in items if i.split is None]
        if unlabelled:
            raise GoldenError(f"{path}: items without a split cannot be read as split {split!r}: "
                              + ", ".join(unlabelled[:5]))
        items = [i for i in items if i.split == split]
    ref = raw.get("reference_date")
    ref_date = date.fromisoformat(_str_date(ref, "reference_date")) if ref else None
    meta = {k: v for k, v in raw.items() if k not in ("items", "reference_date")}
    return items, ref_date, meta


def load_golden(path: Path | str | list[Path | str] = DEFAULT_GOLDEN, *, split: str | None = None) -> Golden:
    """Items from one file or several; with `split`, only items of that split (each must say which).

    Several files must agree on reference_date (one "today" per run) and may not repeat an id.
    """
    paths = [Path(p) for p in path] if isinstance(path, (list, tuple)) else [Path(path)]
    if split is not None and split not in SPLITS:
        raise GoldenError(f"split {split!r} is not one of {', '.join(SPLITS)}")
    items: list[GoldenItem] = []
    refs: set[date] = set()
    meta: dict[str, Any] = {}
    for p in paths:
        file_items, ref_date, file_meta = _read(p, split)
        items += file_items
        if ref_date is not None:
            refs.add(ref_date)
        meta = {**file_meta, **meta}
    if len(refs) > 1:
        raise GoldenError("golden files disagree on reference_date: " + ", ".join(sorted(map(str, refs))))
    ids = [i.id for i in items]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise GoldenError(f"{', '.join(map(str, paths))}: duplicate ids {', '.join(dupes)}")
    return Golden(items=items, reference_date=next(iter(refs), None), path=paths[0] if len(paths) == 1 else None,
                  meta={**meta, "files": [str(p) for p in paths]})


def split_files(split: str, evals_dir: Path = EVALS_DIR) -> list[Path]:
    """The files `split` is read from: SPLIT_SOURCES that exist (golden_<split>.yaml must)."""
    if split not in SPLITS:
        raise GoldenError(f"split {split!r} is not one of {', '.join(SPLITS)}")
    files = [evals_dir / pattern.format(split=split) for pattern in SPLIT_SOURCES]
    own = evals_dir / f"golden_{split}.yaml"
    if not own.exists():
        raise GoldenError(f"no golden file for split {split!r}: {own}")
    return [f for f in files if f.exists()]


def evals_dir_for(corpus: Path | str | None) -> Path:
    """Where a corpus's golden files live: evals/<the corpus directory's name>/ when that folder
    holds golden files (a corpus with a golden set of its own), else evals/ (the demo corpus's)."""
    if corpus is None:
        return EVALS_DIR
    own = EVALS_DIR / Path(corpus).resolve().name
    return own if own.is_dir() and any(own.glob("golden_*.yaml")) else EVALS_DIR


def load_split(split: str = DEFAULT_SPLIT, evals_dir: Path = EVALS_DIR) -> Golden:
    """The `dev` or `test` split, from every file in SPLIT_SOURCES."""
    golden = load_golden(split_files(split, evals_dir), split=split)
    golden.meta["split"] = split
    return golden


def check_against_db(golden: Golden, db) -> None:
    """Every expected chunk id, and every expected (doc, version), must exist in the index."""
    with db.owner.connect() as conn:
        ids = set(conn.execute(text("SELECT node_id FROM data_chunks")).scalars())
        versions = {(d, v) for d, v in conn.execute(text("SELECT doc_id, version FROM document_versions")).all()}
    problems = []
    for item in golden.items:
        problems += [f"{item.id}: no chunk {cid!r}" for cid in item.expected_sections if cid not in ids]
        problems += [f"{item.id}: no version {d} v{v}" for d, vs in item.expected_version.items()
                     for v in vs if (d, v) not in versions]
        problems += [f"{item.id}: excluded source {d!r} is not in the index" for d in item.excluded_sources
                     if not any(doc == d for doc, _ in versions)]
    if problems:
        raise GoldenError("golden labels don't match the indexed corpus:\n  " + "\n  ".join(problems))
