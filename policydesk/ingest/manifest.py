"""The corpus manifest (`manifest.yaml`): one entry per source file, validated before any write."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

import yaml

from policydesk.accounts.access import ACCESS_LEVELS
from policydesk.storage.clearance import PRODUCT_NAME
from policydesk.ingest.errors import IngestError
from policydesk.versions.bases import BASIS_KEYS

SOURCE_TYPES = ("policy", "wiki", "call_note")
REQUIRED_FIELDS = (
    "file", "id", "title", "type", "version", "effective_from",
    "date_basis", "access_level", "sensitive", "owner",
)
OPTIONAL_FIELDS = ("related_policies", "line_of_business", "review_every")
# Top-level manifest key: the products the corpus may name. When present, a source naming any
# other is refused; absent, any product name is valid.
DECLARED_PRODUCTS = "lines_of_business"
# Fields every version of one document must give alike: who may read it is the document's, so no
# version can be listed more widely than another.
AGREEING_FIELDS = ("title", "source_type", "date_basis", "access_level", "sensitive", "line_of_business")
SUFFIXES = {
    "policy": (".pdf", ".docx"),
    "wiki": (".md", ".markdown", ".html", ".htm", ".txt"),
    "call_note": (".txt",),
}


@dataclass(frozen=True)
class Source:
    file: str
    path: Path
    doc_id: str
    title: str
    source_type: str
    version: int
    effective_from: date
    date_basis: str
    access_level: str
    sensitive: bool
    owner: str
    related_policies: tuple[str, ...]
    # The products (lines of business) the source applies to; empty = every product.
    line_of_business: tuple[str, ...] = ()
    # Days between reviews the owner owes this source (the owners report); None = never due.
    review_every: int | None = None


def _parse_date(value, where: str, field: str) -> date:
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        raise IngestError(where, field, f"{value!r} is not a date in YYYY-MM-DD form") from None


def _products(value, where: str, field: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(p, str) for p in value):
        raise IngestError(where, field, "must be a non-empty list of product names, e.g. [commercial, medicaid]")
    for p in value:
        if not PRODUCT_NAME.fullmatch(p):
            raise IngestError(where, field, f"{p!r} is not a product name (lowercase letters, digits and _, "
                                            "starting with a letter)")
    if len(set(value)) != len(value):
        raise IngestError(where, field, "lists a product twice")
    return tuple(value)


def _source(entry: dict, root: Path, index: int, declared: tuple[str, ...] | None = None) -> Source:
    where = f"manifest.yaml entry {index + 1}"
    if not isinstance(entry, dict):
        raise IngestError(where, "-", "each source must be a mapping of fields")
    if "file" in entry:
        where = str(entry["file"])
    for field in REQUIRED_FIELDS:
        if field not in entry or entry[field] is None or entry[field] == "":
            raise IngestError(where, field, "missing required field")
    unknown = set(entry) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS)
    if unknown:
        raise IngestError(where, sorted(unknown)[0], f"unknown field (allowed: {', '.join(REQUIRED_FIELDS + OPTIONAL_FIELDS)})")

    source_type = entry["type"]
    if source_type not in SOURCE_TYPES:
        raise IngestError(where, "type", f"{source_type!r} is not one of {', '.join(SOURCE_TYPES)}")
    if entry["access_level"] not in ACCESS_LEVELS:
        raise IngestError(where, "access_level", f"unknown access level {entry['access_level']!r} (allowed: {', '.join(ACCESS_LEVELS)})")
    date_basis = entry["date_basis"]
    allowed_bases = BASIS_KEYS if source_type == "policy" else ("none",)
    if date_basis not in allowed_bases:
        raise IngestError(where, "date_basis", f"{date_basis!r} is not valid for a {source_type} (allowed: {', '.join(allowed_bases)})")
    if not isinstance(entry["version"], int) or isinstance(entry["version"], bool) or entry["version"] < 1:
        raise IngestError(where, "version", "must be a positive integer")
    if not isinstance(entry["sensitive"], bool):
        raise IngestError(where, "sensitive", "must be true or false")

    raw = Path(str(entry["file"]))
    path = (root / raw).resolve()
    if raw.is_absolute() or not path.is_relative_to(root):
        raise IngestError(where, "file", "path escapes the corpus directory")
    if not path.is_file():
        raise IngestError(where, "file", "file not found")
    if path.suffix.lower() not in SUFFIXES[source_type]:
        raise IngestError(where, "file", f"a {source_type} must be one of {', '.join(SUFFIXES[source_type])}")

    products: tuple[str, ...] = ()
    if entry.get("line_of_business") is not None:
        products = _products(entry["line_of_business"], where, "line_of_business")
        undeclared = [p for p in products if declared is not None and p not in declared]
        if undeclared:
            raise IngestError(where, "line_of_business", f"{undeclared[0]!r} is not one of the manifest's "
                                                         f"{DECLARED_PRODUCTS}: {', '.join(declared)}")

    review_every = entry.get("review_every")
    if review_every is not None and (not isinstance(review_every, int) or isinstance(review_every, bool)
                                     or review_every < 1):
        raise IngestError(where, "review_every", "must be a positive whole number of days")

    related = entry.get("related_policies") or []
    if not isinstance(related, list) or not all(isinstance(r, str) for r in related):
        raise IngestError(where, "related_policies", "must be a list of policy ids")

    return Source(
        file=str(raw), path=path, doc_id=str(entry["id"]), title=str(entry["title"]),
        source_type=source_type, version=entry["version"],
        effective_from=_parse_date(entry["effective_from"], where, "effective_from"),
        date_basis=date_basis, access_level=entry["access_level"], sensitive=entry["sensitive"],
        owner=str(entry["owner"]), related_policies=tuple(related), line_of_business=products,
        review_every=review_every,
    )


@dataclass(frozen=True)
class EntryProblem:
    """One manifest entry refused by its own checks (or by its document's other versions):
    `file` and `doc_id` as the entry wrote them (`file` names the entry when it gives none;
    `doc_id` None when absent)."""
    error: IngestError
    file: str
    doc_id: str | None

    def __str__(self) -> str:
        return str(self.error)


@dataclass(frozen=True)
class Manifest:
    """A manifest read entry by entry: the sources that passed every check, and the entries that
    did not, in manifest order."""
    sources: list[Source]
    problems: list[EntryProblem]


def _raw(entry, key: str) -> str | None:
    value = entry.get(key) if isinstance(entry, dict) else None
    return str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None


def read_manifest(directory: Path) -> Manifest:
    """Every entry checked on its own: a bad entry (and every version of a document whose
    versions disagree or overlap) is returned as a problem, the rest as sources. Raises
    `IngestError` only when the manifest as a whole can't be read (missing, not YAML, no
    `sources` list, a bad `lines_of_business`)."""
    root = Path(directory).resolve()
    manifest = root / "manifest.yaml"
    if not manifest.is_file():
        raise IngestError(str(manifest), "-", "manifest.yaml not found")
    body = manifest.read_text()
    try:
        # libyaml's parser with the same safe constructor: the pure-Python one costs about a tenth
        # of a warm re-ingest's reading time (docs/performance.md, "Ingest"). On an error the pure-Python parser runs again, for its message that shows
        # the offending line.
        data = yaml.load(body, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        try:
            data = yaml.safe_load(body)
        except yaml.YAMLError as exc:
            raise IngestError("manifest.yaml", "-", f"not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("sources"), list) or not data["sources"]:
        raise IngestError("manifest.yaml", "sources", "must be a non-empty list")
    declared = None
    if data.get(DECLARED_PRODUCTS) is not None:
        declared = _products(data[DECLARED_PRODUCTS], "manifest.yaml", DECLARED_PRODUCTS)
    sources: list[Source] = []
    problems: list[EntryProblem] = []
    for i, entry in enumerate(data["sources"]):
        try:
            sources.append(_source(entry, root, i, declared))
        except IngestError as exc:
            problems.append(EntryProblem(exc, _raw(entry, "file") or f"manifest.yaml entry {i + 1}", _raw(entry, "id")))
    by_doc: dict[str, list[Source]] = {}
    for s in sources:
        by_doc.setdefault(s.doc_id, []).append(s)
    refused: set[str] = set()
    for doc_id, versions in by_doc.items():
        try:
            _check_versions(doc_id, versions)
        except IngestError as exc:
            refused.add(doc_id)
            # Which version is right can't be told: every version of the document is refused,
            # the one at fault first.
            problems.append(EntryProblem(exc, exc.file, doc_id))
            problems += [EntryProblem(IngestError(s.file, exc.field, f"refused with another version of {doc_id} "
                                                                     f"({exc.file}: {exc.reason})"), s.file, doc_id)
                         for s in versions if s.file != exc.file]
    return Manifest([s for s in sources if s.doc_id not in refused], problems)


def load_manifest(directory: Path) -> list[Source]:
    """Every source of the manifest; the first bad entry refuses the whole manifest."""
    read = read_manifest(directory)
    if read.problems:
        raise read.problems[0].error
    return read.sources


def _check_versions(doc_id: str, versions: list[Source]) -> None:
    seen: set[int] = set()
    first = versions[0]
    for s in versions:
        if s.version in seen:
            raise IngestError(s.file, "version", f"{doc_id} version {s.version} is listed twice")
        seen.add(s.version)
        for field in AGREEING_FIELDS:
            if getattr(s, field) != getattr(first, field):
                raise IngestError(s.file, field, f"differs from {first.file}; versions of {doc_id} must agree")
    check_windows(doc_id, [(s.version, s.effective_from, s.file) for s in versions])


def check_windows(doc_id: str, versions: list[tuple[int, date, str]]) -> None:
    """Versions must take effect in version order, each strictly after the one before."""
    ordered = sorted(versions)
    for (v1, d1, _), (v2, d2, f2) in zip(ordered, ordered[1:]):
        if d2 <= d1:
            raise IngestError(
                f2, "effective_from",
                f"{doc_id} version {v2} takes effect {d2}, not after version {v1} ({d1}): "
                "version windows would overlap or run out of order",
            )
