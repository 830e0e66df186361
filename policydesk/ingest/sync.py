"""`policydesk sync DIR`: bring the index up to date with the document folder.

Only sources whose file differs from the indexed one (or that are not indexed yet) are ingested,
each by `ingest_directory(only=...)` in its own transaction: readers never see half a source, and
a source that fails its checks is reported while the rest are written. After a sync the
staleness check records every file's current hash, so a source that failed stays visible as
changed-but-not-synced (the owners report) and answers citing it keep warning.

A bad manifest entry is refused alone: it is logged and listed in the report's `failed`, and
every other source is still synced; only a manifest that can't be read at all stops a sync.
Every sync ends with one `sources_synced` audit_log row: who ran it, what it wrote, and each file
refused with its field and reason (or, for a manifest that can't be read, the error), so the
admin sources page can say what the last sync refused and why.
A source whose `access_level` or `sensitive` changed in the manifest is tried even when its file
did not change, so its refusal is reported instead of the change being quietly ignored.

`retire_sources` takes a source out of service (`policydesk sync DIR --retire ID`): the manifest
must no longer list it; its chunks are deleted, its document and version rows stay (marked
retired) and one audit_log row records who retired what.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import delete, func, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from policydesk.ingest.errors import IngestError, IngestRefused
from policydesk.ingest.ingest import ingest_directory
from policydesk.ingest.manifest import EntryProblem, Source, read_manifest
from policydesk.ingest.plan import file_sha256
from policydesk.ingest.staleness import check_staleness
from policydesk.storage.audit import insert_audit
from policydesk.storage.models import Chunk, Document, DocumentVersion
from policydesk.screening.topic_terms import catch_up

log = logging.getLogger("policydesk.sync")


class UnknownSources(ValueError):
    """A change notice named paths or ids the folder's manifest does not list."""

    def __init__(self, kind: str, names: list[str]):
        self.kind, self.names = kind, names
        super().__init__(f"not in the manifest: {kind} {', '.join(names)}")


@dataclass
class SyncReport:
    considered: int = 0
    written: list[str] = field(default_factory=list)  # "DOC v2"
    unchanged: int = 0
    failed: list[str] = field(default_factory=list)  # "file: field: reason"
    refused: list[dict] = field(default_factory=list)  # the same refusals: {"file", "field", "reason"} each
    windows_closed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        failed = f"; {len(self.failed)} failed their checks and were not synced" if self.failed else ""
        return (f"{self.considered} sources: {len(self.written)} synced, {self.unchanged} unchanged{failed}; "
                f"{len(self.windows_closed)} version windows updated")


def select_sources(sources: list[Source], *, paths: Iterable[str] = (), ids: Iterable[str] = (),
                   problems: Iterable[EntryProblem] = ()) -> list[Source | EntryProblem]:
    """The manifest's sources named by file path or document id (every version of an id);
    all of them when neither is given. Entries refused by the manifest's checks (`problems`) are
    names the manifest lists: they are returned as problems, to be reported. A name the
    manifest lacks raises `UnknownSources`."""
    paths, ids = [str(p) for p in paths], [str(i) for i in ids]
    problems = list(problems)
    if not paths and not ids:
        return [*sources, *problems]
    files = ({Path(s.file).as_posix() for s in sources}
             | {Path(p.file).as_posix() for p in problems if p.file is not None})
    unknown_paths = [p for p in paths if Path(p).as_posix() not in files]
    if unknown_paths:
        raise UnknownSources("paths", unknown_paths)
    unknown_ids = [i for i in ids if i not in {s.doc_id for s in sources} | {p.doc_id for p in problems}]
    if unknown_ids:
        raise UnknownSources("ids", unknown_ids)
    wanted = {Path(p).as_posix() for p in paths}

    def named(file: str | None, doc_id: str | None) -> bool:
        return (file is not None and Path(file).as_posix() in wanted) or doc_id in ids

    return [*(s for s in sources if named(s.file, s.doc_id)), *(p for p in problems if named(p.file, p.doc_id))]


def listed_sources(directory: Path, *, paths: Iterable[str] = (), ids: Iterable[str] = ()) -> list[Source | EntryProblem]:
    """`select_sources` over the folder's manifest (what a change notice queues, each with its
    `file`): raises `IngestError` only when the manifest can't be read at all."""
    manifest = read_manifest(Path(directory))
    return select_sources(manifest.sources, paths=paths, ids=ids, problems=manifest.problems)


def pending(db, sources: list[Source], hashes: dict[Source, str | None]) -> list[Source]:
    """Of these sources, those to try: not indexed, a file whose hash differs from the indexed one
    (or that is too large to hash: ingest refuses it), a clearance the manifest changed, or a
    retired id listed again (the last two are refused by ingest, so they are reported)."""
    with Session(db.owner) as session:
        indexed = {(r.doc_id, r.version): r for r in session.execute(
            select(DocumentVersion.doc_id, DocumentVersion.version, DocumentVersion.source_sha256,
                   DocumentVersion.access_level, DocumentVersion.sensitive, Document.retired_at)
            .join(Document, Document.doc_id == DocumentVersion.doc_id)
            .where(DocumentVersion.doc_id.in_({s.doc_id for s in sources})))}
    clearance = {}
    for (doc_id, _), r in indexed.items():
        clearance.setdefault(doc_id, set()).add((r.access_level, r.sensitive, r.retired_at is None))
    out = []
    for s in sources:
        row = indexed.get((s.doc_id, s.version))
        if (row is None or hashes.get(s) is None or row.source_sha256 != hashes[s]
                or clearance.get(s.doc_id, set()) - {(s.access_level, s.sensitive, True)}):
            out.append(s)
    return out


def _hash_each(sources: Iterable[Source], settings) -> dict[Source, str | None]:
    """Each source's file hash; None for a file too large or unreadable (ingest refuses it)."""
    hashes: dict[Source, str | None] = {}
    for s in sources:
        try:
            hashes[s] = file_sha256(s.path, max_bytes=settings.MAX_SOURCE_BYTES, file=s.file)
        except (IngestError, OSError):
            hashes[s] = None
    return hashes


SYNC_ACTOR = "policydesk sync"  # the audit row's actor when the caller names no one


def _refusals(exc: IngestError) -> list[dict]:
    problems = exc.problems if isinstance(exc, IngestRefused) else [exc]
    return [{"file": p.file, "field": p.field, "reason": p.reason} for p in problems]


def _audit_sync(db, *, actor: str, directory: Path, paths: list[str], ids: list[str], details: dict) -> None:
    with db.owner.begin() as conn:
        insert_audit(conn, actor=actor, action="sources_synced", target=str(directory),
                     details={"paths": paths, "ids": ids, **details})


def sync_directory(db, directory: Path, embed_model, settings, *, paths: Iterable[str] = (),
                   ids: Iterable[str] = (), actor: str = SYNC_ACTOR) -> SyncReport:
    """Sync the named sources (default: all), one transaction each. A bad manifest entry is
    reported in `failed` (and logged) and the rest synced; a manifest that can't be read at all
    raises `IngestError` before anything is written. Either way one `sources_synced` audit row
    records the outcome under `actor`."""
    paths, ids = [str(p) for p in paths], [str(i) for i in ids]
    try:
        manifest = read_manifest(Path(directory))
    except IngestError as exc:
        _audit_sync(db, actor=actor, directory=directory, paths=paths, ids=ids,
                    details={"error": str(exc), "refused": _refusals(exc)})
        raise
    chosen = select_sources(manifest.sources, paths=paths, ids=ids, problems=manifest.problems)
    refused = [c for c in chosen if isinstance(c, EntryProblem)]
    good = [c for c in chosen if not isinstance(c, EntryProblem)]
    report = SyncReport(considered=len(chosen))
    for problem in refused:
        log.warning("sync: manifest entry refused, not synced: %s", problem)
        report.failed.append(str(problem))
        report.refused.append({"file": problem.file, "field": problem.error.field, "reason": problem.error.reason})
    # Each listed file hashed at most once: the chosen ones to see what changed, the others only
    # when something is to be written (which bytes another entry also lists).
    hashes = _hash_each(good, settings)
    todo = pending(db, good, hashes)
    report.unchanged = len(good) - len(todo)
    if todo:
        hashes |= _hash_each([s for s in manifest.sources if s not in hashes], settings)
    listed: dict[str, list[Source]] = {}
    for s in manifest.sources:
        if hashes.get(s) is not None:
            listed.setdefault(hashes[s], []).append(s)
    for s in todo:
        try:
            done = ingest_directory(db, directory, embed_model, settings, only={(s.doc_id, s.version)},
                                    listed=listed)
        except IngestError as exc:
            log.warning("sync: %s not synced: %s", s.file, exc)
            report.failed.append(str(exc))
            report.refused += _refusals(exc)
            continue
        report.written += done.written_versions
        report.windows_closed += done.windows_closed
        report.warnings += done.warnings
    check_staleness(db, directory, max_bytes=settings.MAX_SOURCE_BYTES)
    _audit_sync(db, actor=actor, directory=directory, paths=paths, ids=ids, details={
        "considered": report.considered, "written": report.written, "unchanged": report.unchanged,
        "windows_closed": len(report.windows_closed), "refused": report.refused})
    return report


@dataclass(frozen=True)
class Retired:
    doc_id: str
    versions: list[int]
    chunks_removed: int

    def __str__(self) -> str:
        listed = ", ".join(f"v{v}" for v in self.versions)
        return f"{self.doc_id} ({listed}): {self.chunks_removed} chunks removed"


def retire_sources(db, directory: Path, ids: Iterable[str], *, actor: str) -> list[Retired]:
    """Take these documents out of service, all in one transaction: each must be indexed, not
    retired already, and no longer listed in DIR's manifest (else a later sync would be asked
    to index it again). Every version's chunks are deleted, so nothing retrieves, swaps to or
    gates on its text; the `documents` and `document_versions` rows stay, marked retired, so
    answers that cited it still show and check (the traces and their hash chain are untouched).
    One `source_retired` audit_log row per document. Raises `IngestError` naming the id, nothing
    written."""
    wanted = list(dict.fromkeys(str(i) for i in ids))
    manifest = read_manifest(Path(directory))
    listed = {s.doc_id: s.file for s in manifest.sources} | {p.doc_id: p.file for p in manifest.problems if p.doc_id}
    done: list[Retired] = []
    with Session(db.owner) as session, session.begin():
        for doc_id in wanted:
            doc = session.get(Document, doc_id, with_for_update=True)
            if doc is None:
                raise IngestError(doc_id, "--retire", "no indexed source has this id")
            if doc.retired_at is not None:
                raise IngestError(doc_id, "--retire", f"already retired on {doc.retired_at.date().isoformat()} "
                                                      f"by {doc.retired_by}")
            if doc_id in listed:
                raise IngestError(doc_id, "--retire", f"still listed in manifest.yaml ({listed[doc_id]}): remove its "
                                                      "entries first, then retire it")
            versions = list(session.scalars(select(DocumentVersion).where(DocumentVersion.doc_id == doc_id)
                                            .order_by(DocumentVersion.version)))
            removed = session.execute(delete(Chunk).where(Chunk.doc_id == doc_id)).rowcount
            doc.retired_at, doc.retired_by = func.now(), actor
            session.flush()
            insert_audit(session.connection(), actor=actor, action="source_retired", target=doc_id, details={
                "title": doc.title, "access_level": doc.access_level,
                "versions": [{"version": v.version, "file": v.source_file, "sha256": v.source_sha256,
                              "sensitive": v.sensitive} for v in versions],
                "chunks_removed": removed})
            log.info("retired %s (%d chunks removed) by %s", doc_id, removed, actor)
            done.append(Retired(doc_id, [v.version for v in versions], removed))
        # The topic gate's terms lose the retired text in the same transaction.
        catch_up(session.connection())
    return done


def sync_every(run: Callable[[], SyncReport], minutes: float, *, sleep: Callable[[float], None] = time.sleep,
               max_runs: int | None = None, on_report: Callable[[SyncReport | Exception], None] = lambda r: None
               ) -> int:
    """Run `run` now and then every `minutes`, `max_runs` times (None: until stopped). A run that
    raises is reported (`on_report` gets the exception) and the next one still happens. Returns
    the number of runs."""
    if minutes <= 0:
        raise ValueError("the period must be a positive number of minutes")
    runs = 0
    while max_runs is None or runs < max_runs:
        started = time.monotonic()
        try:
            on_report(run())
        except (IngestError, OSError, DBAPIError) as exc:
            log.error("sync failed: %s", exc)
            on_report(exc)
        runs += 1
        if max_runs is not None and runs >= max_runs:
            break
        sleep(max(0.0, minutes * 60 - (time.monotonic() - started)))
    return runs
